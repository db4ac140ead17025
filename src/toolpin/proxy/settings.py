"""How ``toolpin run`` (a command or ``--url``) and ``toolpin gateway`` verify a server:
the settings the command line gives, built once there and passed down as one value.

A plain frozen class with slots rather than a dataclass: it is built on the start path of
every wrapped server, before the server is spawned, and that path imports neither
``dataclasses`` nor ``typing`` (importing ``dataclasses`` there costs several
milliseconds per start).
"""

from __future__ import annotations

_FIELDS = (
    "name",
    "timeout",
    "quiet",
    "lock",
    "only_locked",
    "log",
    "vkey",
    "require_public",
    "accept_after",
)


class RunSettings:
    """``--name``, ``--timeout``, ``--quiet``, ``--lock``, ``--only-locked``, ``--log``,
    ``--vkey``, ``--require-public`` and ``--accept-public-after`` as given (frozen).

    ``lock`` makes the team lock entry of the server the pin; ``only_locked`` refuses a
    server the lock does not list. ``log`` and ``vkey`` (or the environment, or
    ``TOOLPIN_HOME/config.json``) name a public log to consult at a first pin and at a
    block; ``require_public`` refuses a first pin the log never recorded; ``accept_after``
    (days) accepts a change the log recorded that long, aimed at nothing the model reads.
    """

    __slots__ = _FIELDS

    name: str | None
    timeout: float
    quiet: bool
    lock: str | None
    only_locked: bool
    log: str | None
    vkey: str | None
    require_public: bool
    accept_after: int | None

    def __init__(
        self,
        *,
        name: str | None = None,
        timeout: float = 30.0,
        quiet: bool = False,
        lock: str | None = None,
        only_locked: bool = False,
        log: str | None = None,
        vkey: str | None = None,
        require_public: bool = False,
        accept_after: int | None = None,
    ) -> None:
        values = (name, timeout, quiet, lock, only_locked, log, vkey, require_public, accept_after)
        for field, value in zip(_FIELDS, values, strict=True):
            object.__setattr__(self, field, value)

    def __setattr__(self, field: str, value: object) -> None:
        raise AttributeError(f"RunSettings is frozen: {field} cannot be set")

    def __delattr__(self, field: str) -> None:
        raise AttributeError(f"RunSettings is frozen: {field} cannot be deleted")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, field) for field in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunSettings):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{field}={getattr(self, field)!r}" for field in _FIELDS)
        return f"RunSettings({shown})"

    @property
    def log_key(self) -> tuple[str | None, str | None]:
        """``(log, vkey)``: the public log a team lock's proofs are checked against."""
        return (self.log, self.vkey)
