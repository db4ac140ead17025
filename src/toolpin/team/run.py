"""``toolpin run --lock``: the team lock entry of a server as the proxy's pin.

No trust on first use: the entry is the pin, nothing is written, and the locked package
version runs even when the config asks for the newest.

An entry that carries a public-log proof (``publicLog``, written by ``toolpin lock
--log``) is verified before the server gets a byte from the client (``toolpin run``
checks it while the server boots: :attr:`LockedRun.proofs`), as ``toolpin lock --check`` verifies
it (:func:`toolpin.pins.lockproofs.check_proofs`): offline, with the log's key when a log
is configured (the signature, the inclusion proof, the digest in the entry; without one,
everything but the signature), and, with the log configured and reachable, consistency
from the recorded checkpoint to the log's current one. A proof that does not verify, or
that the log contradicts (a fork, a rollback), makes the lock unusable exactly as a lock
whose hashes do not match: the server is refused. A log that cannot be reached leaves the
offline verification, said in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolpin.core.render import visible
from toolpin.errors import (
    LockfileError,
    PackageError,
    ToolpinError,
)
from toolpin.lockfile.native import LockEntry, read_lock
from toolpin.pins.serverid import server_id

if TYPE_CHECKING:
    from toolpin.core.drift import Drift
    from toolpin.core.snapshot import Snapshot


class LockPinSource:
    """The proxy's pin from a team lock entry: no trust on first use, nothing written.

    A client may be offered a subset of the locked definitions (the lock lists servers
    with every client capability; a client declaring fewer is offered less).
    """

    accepts_subset = True

    @property
    def match_text(self) -> str:
        """Said on stderr when the server matches its entry."""
        return f"match {self.lock_path.name}"

    def __init__(self, lock_path: Path, entry_name: str, entry: LockEntry, label: str) -> None:
        self.lock_path = lock_path
        self.entry_name = entry_name
        self.entry = entry
        self.label = label

    def save_report(self, text: str) -> str | None:
        import hashlib

        from toolpin.pins.store import save_block_report

        name = self.entry.server_id or hashlib.sha256(self.entry_name.encode()).hexdigest()[:16]
        return save_block_report(name, text)

    def pinned(self) -> Snapshot | None:
        """The locked snapshot."""
        return self.entry.snapshot

    def pin_first(self, snapshot: Snapshot) -> tuple[Snapshot, bool]:  # pragma: no cover
        """Never called: a lock entry always exists."""
        return self.entry.snapshot, False

    def accept_recorded(self, snapshot: Snapshot, drift: Drift, log: Mapping[str, Any]) -> bool:
        """Never: a lock changes in a pull request that a person reads."""
        return False

    def record_drift(self, snapshot: Snapshot, drift: Drift, *, mid_session: bool) -> None:
        """A lock is read-only; the audit log records the event (best effort)."""
        from toolpin.core.drift import change_keys
        from toolpin.pins import audit
        from toolpin.pins.store import PinStore

        store = PinStore()
        try:
            store.ensure()
            audit.append(
                store.audit_path,
                "drift",
                {
                    "server": self.entry.server_id or "",
                    "label": self.label,
                    "against": "lockfile",
                    "observed": snapshot.surface_hash(),
                    "midSession": mid_session,
                    "changes": change_keys(drift),
                },
            )
        except (ToolpinError, OSError):
            pass

    def _quoted(self) -> str:
        import json

        return json.dumps(visible(self.label), ensure_ascii=False)

    def block_message(self, *, mid_session: bool) -> str:
        """The -31042 message."""
        if mid_session:
            return (
                f"toolpin blocked {self._quoted()}: a definition changed during this session "
                f"and differs from {self.lock_path.name}, so the response was not forwarded. "
                "See what changed with: toolpin lock --check"
            )
        return (
            f"toolpin blocked {self._quoted()}: its definitions differ from the project's "
            f"{self.lock_path.name}, so nothing was forwarded. See what changed with: "
            "toolpin lock --check"
        )

    def review_hint(self) -> str:
        """The command that shows the difference."""
        return "toolpin lock --check"

    def advice(self, *, mid_session: bool) -> list[str]:
        """Closing lines of the stderr report."""
        return [
            f"These definitions differ from what the project approved in {self.lock_path.name}.",
            "If the change is expected, update the lock in a pull request: toolpin lock",
        ]

    def describe_pin(self) -> str:
        """Where the pin comes from."""
        return f"pinned: {self.lock_path} (entry {visible(self.entry_name)})"


@dataclass(frozen=True)
class LockedRun:
    """How ``run --lock`` starts a server: the pin, and the argv (package held)."""

    source: LockPinSource
    argv: list[str]
    notes: tuple[str, ...]
    proofs: Callable[[], list[str]] | None = None
    """With ``defer_proofs``: verifies the entry's public-log proof (raises
    :class:`LockfileError` when it does not verify) and returns its note. The caller
    runs it while the server boots, and gives the server nothing before it returned."""


def find_lock(lock_file: str, start: Path | None = None) -> Path:
    """Where a ``--lock`` path points. A relative path is looked up from ``start`` (the
    folder the client started the server in), then in each parent folder up to and
    including the first one holding ``.git`` (a project's root), the way git finds its
    folder: a committed config names the lock relative to the project, and clients start
    servers from the project folder or one below it. Never crosses a project's root, so a
    lock outside the project is never picked up. Returns the path at ``start`` when none
    is found (the caller reports it as missing)."""
    path = Path(lock_file)
    here = (start or Path.cwd()).absolute()
    if path.is_absolute():
        return path
    for folder in (here, *here.parents):
        candidate = folder / path
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists():
            break
    return here / path


def _by_name(servers: Mapping[str, object], name: str | None) -> str | None:
    """The lock entry called ``name``, or by the config key inside a name ``wrap``
    wrote (``filesystem@cursor:app-3f9a2c1d`` -> ``filesystem``)."""
    if name is None:
        return None
    if name in servers:
        return name
    from toolpin.clients.naming import config_key

    key = config_key(name)
    return key if key is not None and key in servers else None


def _lock_servers(path: Path, advice: str) -> Mapping[str, LockEntry]:
    """The servers of the lock at ``path``; an unusable lock is a :class:`LockfileError`
    that names the file and gives ``advice`` (how a relative ``--lock`` is found)."""
    try:
        return read_lock(path.absolute()).servers
    except LockfileError as exc:
        raise LockfileError(
            f"cannot use the lockfile {path.absolute()}: {exc.message}", advice=advice
        ) from None


def _by_id(servers: Mapping[str, LockEntry], sid: str) -> str | None:
    return next((n for n, e in servers.items() if e.server_id == sid), None)


LogWanted = tuple[str | None, str | None]
"""``--log`` and ``--vkey`` as given (``None``: from the environment or the config file)."""


def _proof_notes(path: Path, entry_name: str, entry: LockEntry, log: LogWanted) -> list[str]:
    """Verify the entry's public-log proof, if it has one (see the module docs); the
    note to print. Raises :class:`LockfileError` for a proof that does not verify."""
    from toolpin.lockfile.native import PUBLIC_LOG

    if PUBLIC_LOG not in entry.extra:
        return []
    from toolpin.pins.lockproofs import check_proofs
    from toolpin.util.fs import toolpin_home

    url, vkey = log
    checked = check_proofs({entry_name: entry}, toolpin_home(), url=url, vkey=vkey, lock_path=path)
    return [check.line() for check in checked.values()]


def prepare_locked_run(
    lock_file: str,
    argv: Sequence[str],
    *,
    name: str | None,
    label: str,
    log: LogWanted = (None, None),
    defer_proofs: bool = False,
) -> LockedRun | None:
    """Find the lock entry of ``argv`` (by ``--name`` first, then by command id).

    Returns ``None`` when the lock has no entry for it. Raises :class:`ToolpinError` when
    the lock is unusable (its public-log proof included, checked against ``log``) or the
    command runs another package or version than the lock. With ``defer_proofs`` the
    public-log proof is not checked here: :attr:`LockedRun.proofs` checks it later.
    """
    path = find_lock(lock_file)
    servers = _lock_servers(
        path,
        "A relative --lock path is looked up from the folder the client starts "
        "the server in, then its parent folders up to the project's root (.git).",
    )
    entry_name = _by_name(servers, name)
    if entry_name is None:
        entry_name = _by_id(servers, server_id(argv))
    if entry_name is None:
        return None
    entry = servers[entry_name]
    run_argv = list(argv)
    absolute = path.absolute()
    proofs: Callable[[], list[str]] | None = None
    if defer_proofs:
        from toolpin.lockfile.native import PUBLIC_LOG

        if PUBLIC_LOG in entry.extra:

            def proofs() -> list[str]:
                return _proof_notes(absolute, entry_name, entry, log)

        notes: list[str] = []
    else:
        notes = _proof_notes(absolute, entry_name, entry, log)
    if entry.package is not None:
        run_argv, note = _hold_package(entry, run_argv)
        if note:
            notes.append(note)
    return LockedRun(
        LockPinSource(absolute, entry_name, entry, label), run_argv, tuple(notes), proofs
    )


def _hold_package(entry: LockEntry, argv: list[str]) -> tuple[list[str], str | None]:
    from toolpin.packages import ResolvedPackage, check_plain_version, detect_package, pin_argv

    locked = ResolvedPackage.from_json(entry.package)
    check_plain_version(locked.ecosystem, locked.version)
    ref = detect_package(argv)
    if ref is None or (ref.ecosystem, ref.name) != (locked.ecosystem, locked.name):
        raise PackageError(
            f"this server no longer runs {locked.name}, the package the lock approved",
            advice="Update the lock in a pull request: toolpin lock",
        )
    if ref.exact is not None:
        if ref.exact != locked.version:
            raise PackageError(
                f"this server runs {ref.name} {ref.exact}, but the lock approved "
                f"{locked.version}; update the lock in a pull request (toolpin lock)"
            )
        return argv, None
    pinned = pin_argv(argv, ref, locked.version)
    if pinned is None:
        return argv, (
            f"{ref.name} cannot be held at {locked.version} in this form; "
            "only its definitions are checked"
        )
    return pinned, f"running {ref.name} {locked.version}, the version in the lock"


def prepare_locked_remote(
    lock_file: str,
    url: str,
    *,
    name: str | None,
    label: str,
    log: LogWanted = (None, None),
    notes: list[str] | None = None,
) -> LockPinSource | None:
    """The lock entry of a remote server (by ``--name`` first, then by its id, which is
    keyed by name and URL); ``None`` when the lock has no entry for it. Raises
    :class:`ToolpinError` when the lock is unusable or the entry names another URL."""
    from toolpin.core.wire import identity_url
    from toolpin.pins.serverid import remote_server_id

    path = Path(lock_file)
    servers = _lock_servers(
        path, "A relative --lock path is read from the directory the client starts the server in."
    )
    sid = remote_server_id(url, name)
    entry_name = _by_name(servers, name)
    if entry_name is None:
        entry_name = _by_id(servers, sid)
    if entry_name is None:
        return None
    entry = servers[entry_name]
    if entry.server_id is not None and entry.server_id != sid:
        raise LockfileError(
            f"the lock's entry {visible(entry_name)} is for another server than "
            f"{identity_url(url)}",
            advice="Update the lock in a pull request: toolpin lock",
        )
    said = _proof_notes(path.absolute(), entry_name, entry, log)
    if notes is not None:
        notes.extend(said)
    return LockPinSource(path.absolute(), entry_name, entry, label)
