"""Checking a pin decision against a public log: which log, and what its answer means.

A user names a published log (its site URL and verifier key) with ``--log URL --vkey
FILE``, with the environment (``TOOLPIN_LOG``, ``TOOLPIN_LOG_VKEY``,
``TOOLPIN_REQUIRE_PUBLIC=1``) or once in ``TOOLPIN_HOME/config.json``::

    {"log": {"url": "https://log.example/toolpin/", "vkey": "log.vkey", "require-public": true}}

(a relative ``vkey`` path is read from ``TOOLPIN_HOME``). A flag wins over the
environment, the environment over the file; each of ``url`` and ``vkey`` comes from one
place with the other.

:func:`check` asks the log (:func:`toolpin.evidence.look_up`, verified end to end on this
machine) whether a surface digest was recorded and returns an :class:`Evidence`: the one
line to show, the JSON member for ``--json`` and the -31042 ``data.log``, and whether the
``require-public`` policy refuses it. A log that cannot be checked is one line too; it
refuses only under ``require-public`` (fail closed). Every word is toolpin's: the log's
origin line is shown with :func:`toolpin.core.render.visible`, never a server's text.

:mod:`toolpin.evidence` is imported only when a log is configured, so the proxy's start
path stays light.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolpin.errors import InputError, ToolpinError

if TYPE_CHECKING:
    import threading
    from collections.abc import Mapping, Sequence

    from toolpin.evidence import LogRef, NeverRecorded, Recorded
    from toolpin.evidence.lookup import Lookup

ENV_LOG: Final = "TOOLPIN_LOG"
ENV_VKEY: Final = "TOOLPIN_LOG_VKEY"
ENV_REQUIRE: Final = "TOOLPIN_REQUIRE_PUBLIC"
ENV_POLICY: Final = "TOOLPIN_LOG_POLICY"
CONFIG_FILE: Final = "config.json"
MAX_CONFIG: Final = 64 << 10
MAX_VKEY: Final = 4 << 10
MIN_DAYS: Final = 1
MAX_DAYS: Final = 3650
ACCEPTABLE_KINDS: Final = frozenset(
    {
        "wording",
        "removed",
        "field-removed",
        "field-type",
        "member-changed",
        "schema-changed",
        "schema-tightened",
        "schema-widened",
        "output-schema",
        "possible-rename",
        "new-tool",
        "new-prompt",
        "new-resource",
        "new-resource-template",
    }
)
"""The change labels ``accept-public-after`` may accept (an allow-list: a new label, an
instruction to the model, secrets or credential paths, hidden characters, a new link, a
permission-hint flip, a new server name, and a new input field or argument of an existing
tool (a channel for what the model is asked to send) always wait for a person)."""
DEFAULT_TIMEOUT: Final = 3.0
"""Seconds a lookup may take (the proxy waits for it only at a first pin or a block)."""


@dataclass(frozen=True, slots=True)
class LogSettings:
    """The log to consult and the policy, resolved from flags, environment and config."""

    url: str
    vkey: str
    """A file holding the verifier key (its last non-empty line), or the key text."""
    require_public: bool = False
    source: str = "--log"
    """Where the setting came from (for a message about a bad key file)."""
    base: str | None = None
    """The folder a relative key file is read from (``TOOLPIN_HOME`` for the config file)."""
    accept_after: int | None = None
    """``accept-public-after DAYS``: a change recorded at least this long is accepted when
    its labels aim at nothing the model reads (:data:`ACCEPTABLE_KINDS`)."""
    policy: str | None = None
    """A witness policy file (:func:`policy_file`): the log's checkpoint must carry its
    quorum's cosignatures before any answer is believed."""

    def ref(self) -> LogRef:
        """The log as :func:`toolpin.evidence.look_up` takes it (reads the key file)."""
        from toolpin.evidence import LogRef

        return LogRef(url=self.url, vkey=self.key_text(), policy=self.policy)

    def key_text(self) -> str:
        """The verifier key's text: the file's last non-empty line, or the value itself
        (an :class:`InputError` when the file cannot be read). Imports nothing."""
        path = Path(self.vkey).expanduser()
        if not path.is_absolute() and self.base is not None:
            path = Path(self.base) / path
        if "+" in self.vkey and not path.is_file():
            return self.vkey.strip()  # the key text itself
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_VKEY + 1)
        except OSError as exc:
            raise InputError(
                f"cannot read the log's verifier key {path} ({exc.strerror or type(exc).__name__})",
                advice=f"check the key file named by {self.source}",
            ) from None
        try:
            lines = [x.strip() for x in data.decode("ascii").splitlines() if x.strip()]
        except UnicodeDecodeError:
            lines = []
        if not lines or len(data) > MAX_VKEY:
            raise InputError(f"{path} holds no log verifier key (its last line is the key)")
        return lines[-1]


def settings(
    home: Path,
    *,
    url: str | None = None,
    vkey: str | None = None,
    require_public: bool = False,
    accept_after: int | None = None,
) -> LogSettings | None:
    """The log to consult, or ``None`` when none is configured.

    ``accept_after`` (else the config file's ``accept-public-after``) is the
    ``accept-public-after DAYS`` policy. Raises :class:`InputError` as :func:`_settings`
    does, and for ``accept-public-after`` without a log or not a whole number of days.
    """
    found = _settings(home, url=url, vkey=vkey, require_public=require_public)
    if found is not None:
        policy = policy_file(home)
        if policy is not None:
            found = replace(found, policy=str(policy))
    if accept_after is None:
        days = _config(home).get("accept-public-after")
        if days is not None and not (type(days) is int and MIN_DAYS <= days <= MAX_DAYS):
            raise InputError(
                f'{home / CONFIG_FILE}: "accept-public-after" must be a whole number of days '
                f"({MIN_DAYS} to {MAX_DAYS})"
            )
        accept_after = days
    if accept_after is None:
        return found
    if found is None:
        raise InputError("accept-public-after needs a log to check: give --log URL --vkey FILE")
    return replace(found, accept_after=accept_after)


def _settings(
    home: Path,
    *,
    url: str | None = None,
    vkey: str | None = None,
    require_public: bool = False,
) -> LogSettings | None:
    """The log to consult and ``require-public``, or ``None`` when no log is configured.

    Raises :class:`InputError` for half a setting (a URL without its key, or the
    reverse), an unreadable or malformed config file, or ``require-public`` without a log.
    """
    require = require_public or os.environ.get(ENV_REQUIRE, "") not in ("", "0")
    if url is not None or vkey is not None:
        if url is None or vkey is None:
            raise InputError("--log and --vkey go together (the log's URL and its verifier key)")
        return LogSettings(url, vkey, require or _config(home).get("require-public") is True)
    env_url, env_key = os.environ.get(ENV_LOG) or None, os.environ.get(ENV_VKEY) or None
    if env_url is not None or env_key is not None:
        if env_url is None or env_key is None:
            raise InputError(f"{ENV_LOG} and {ENV_VKEY} go together; set both or neither")
        return LogSettings(
            env_url, env_key, require or _config(home).get("require-public") is True, ENV_LOG
        )
    config = _config(home)
    if not config:
        if require:
            raise InputError(
                "require-public needs a log to check: give --log URL --vkey FILE, set "
                f"{ENV_LOG} and {ENV_VKEY}, or name it in {home / CONFIG_FILE}"
            )
        return None
    where = str(home / CONFIG_FILE)
    url_value, key_value = config.get("url"), config.get("vkey")
    if not (isinstance(url_value, str) and url_value and isinstance(key_value, str) and key_value):
        raise InputError(f'{where}: "log" needs "url" and "vkey" (strings)')
    policy = config.get("require-public", False)
    if not isinstance(policy, bool):
        raise InputError(f'{where}: "require-public" must be true or false')
    return LogSettings(url_value, key_value, require or policy, where, str(home))


def policy_file(home: Path, flag: str | None = None) -> Path | None:
    """The witness policy file: ``flag`` (``--policy``), else ``$TOOLPIN_LOG_POLICY``, else
    ``config.json``'s ``log.policy`` (a relative path is read from ``TOOLPIN_HOME``);
    ``None`` when none is set (then nothing changes)."""
    if flag:
        return Path(flag)
    env = os.environ.get(ENV_POLICY)
    if env:
        return Path(env).expanduser()
    value = _config(home).get("policy")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InputError(f'{home / CONFIG_FILE}: "log.policy" must be a file name (a string)')
    path = Path(value).expanduser()
    return path if path.is_absolute() else home / path


def _config(home: Path) -> dict[str, Any]:
    """The ``log`` object of ``TOOLPIN_HOME/config.json`` (empty when there is none)."""
    path = home / CONFIG_FILE
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InputError(f"cannot read {path} ({exc.strerror or type(exc).__name__})") from None
    if len(data) > MAX_CONFIG:
        raise InputError(f"{path} is larger than {MAX_CONFIG} bytes")
    from toolpin.core.canonical import parse_json

    try:
        doc = parse_json(data)
    except InputError as exc:
        raise InputError(f"{path} is not valid JSON ({exc.message})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path} must hold a JSON object")
    log = doc.get("log")
    if log is None:
        return {}
    if not isinstance(log, dict):
        raise InputError(f'{path}: "log" must be an object')
    unknown = sorted(set(log) - {"url", "vkey", "require-public", "accept-public-after", "policy"})
    if unknown:
        raise InputError(f'{path}: unknown member "log.{visible_key(unknown[0])}"')
    return log


def visible_key(text: str) -> str:
    from toolpin.core.render import visible

    return visible(text[:40])


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a log said about one digest (or why it could not say)."""

    settings: LogSettings
    digest: str
    found: Recorded | NeverRecorded | None
    problem: str | None = None
    """One line, toolpin's words, when the log could not be checked."""
    problem_kind: str | None = None

    @property
    def recorded(self) -> bool:
        from toolpin.evidence import Recorded

        return isinstance(self.found, Recorded)

    def line(self) -> str:
        """The one line to show: :func:`toolpin.evidence.describe`, or the problem."""
        from toolpin.core.render import visible

        if self.found is None:
            return visible(self.problem or "the public log could not be checked")
        from toolpin.evidence import describe

        return visible(describe(self.found))

    def about(self, subject: str) -> str:
        """``<subject> are publicly recorded since ...`` / ``<subject> were never recorded
        in ...``, or the problem line."""
        if self.found is None:
            return self.line()
        return f"{subject} {'are' if self.recorded else 'were'} {self.line()}"

    def lookup_command(self) -> str:
        """The command that asks the log again, for a person to run (the -31043
        ``review`` member of a require-public refusal)."""
        import shlex

        key = self.settings.key_text()  # the key text: public, and no path to resolve
        return (
            f"toolpin log lookup --log {shlex.quote(self.settings.url)} "
            f"--vkey {shlex.quote(key)} {self.digest}"
        )

    def recorded_days(self, now: datetime.datetime) -> int | None:
        """Whole days since the log first recorded this digest (``None``: not recorded,
        or no readable time)."""
        from toolpin.evidence import Recorded

        if not isinstance(self.found, Recorded):
            return None
        try:
            since = datetime.datetime.fromisoformat(self.found.recorded_at.replace("Z", "+00:00"))
        except ValueError:
            return None
        if since.tzinfo is None:
            return None
        return (now - since).days

    def acceptable(self, kinds: Sequence[str], now: datetime.datetime) -> bool:
        """Whether ``accept-public-after`` accepts a change with these label keys."""
        days = self.settings.accept_after
        if days is None or not kinds or not set(kinds) <= ACCEPTABLE_KINDS:
            return False
        recorded = self.recorded_days(now)
        return recorded is not None and recorded >= days

    def refusal(self) -> str | None:
        """Why ``require-public`` refuses this digest, or ``None`` when it does not
        (the policy is off, or the log recorded it)."""
        if not self.settings.require_public or self.recorded:
            return None
        if self.found is None:
            return f"require-public: {self.line()}, so it cannot show these definitions are public"
        return f"require-public: {self.about('these definitions')}"

    def to_json(self) -> dict[str, Any]:
        """The stable ``log`` member of ``--json`` and of the -31042 ``data``."""
        if self.found is None:
            return {
                "url": self.settings.url,
                "digest": self.digest,
                "status": "problem",
                "problem": self.problem_kind,
                "detail": self.problem,
            }
        from toolpin.evidence import to_json

        return {
            "url": self.settings.url,
            "digest": self.digest,
            "status": "recorded" if self.recorded else "never-recorded",
            **to_json(self.found),
        }


def check(
    log: LogSettings, digest: str, *, home: Path, timeout: float = DEFAULT_TIMEOUT
) -> Evidence:
    """Ask the log about ``digest`` (a surface digest); never raises for the log's faults.

    A key file that cannot be read raises :class:`InputError` (a setting to fix).
    """
    return PublicCheck(log, home, timeout=timeout).check(digest)


def _where(log: LogSettings) -> str:
    from toolpin.core.render import visible

    return visible(log.url[:200])


def _problem_line(log: LogSettings, exc: Any) -> str:
    from toolpin.core.render import visible

    where = _where(log)
    kind = str(getattr(exc, "kind", "unreachable"))
    if kind == "unreachable":
        return f"the public log at {where} could not be checked: {visible(exc.message)}"
    advice = f". {visible(exc.advice)}" if getattr(exc, "advice", None) else ""
    return f"the public log at {where} is not trusted ({kind}): {visible(exc.message)}{advice}"


def longest_wait(timeout: float = DEFAULT_TIMEOUT) -> float:
    """How long a thread checking a log with ``timeout`` per request may take before it is
    taken as stuck (two lookups' deadlines and the kept state's lock)."""
    from toolpin.evidence.fetch import DEADLINE_FACTOR
    from toolpin.evidence.state import LOCK_TIMEOUT

    return timeout * DEADLINE_FACTOR * 2 + LOCK_TIMEOUT


class PublicCheck:
    """The proxy's handle on a configured log: :meth:`check` at a first pin or a block.

    Built after the server is spawned: it reads the key (a bad key file refuses the
    server before anything is decided) and imports nothing more; :mod:`toolpin.evidence`
    is imported at the first :meth:`check`, so a session whose pin matches pays nothing.
    When a lookup is sure to come (no pin yet), :meth:`start` does the part that needs no
    digest in a thread while the server boots.
    """

    def __init__(self, log: LogSettings, home: Path, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.log = log
        self.home = home
        self.timeout = timeout
        self.require_public = log.require_public
        self._key = log.key_text()  # a bad key file stops here, before anything is decided
        self._early: threading.Thread | None = None
        self._prepared: Lookup | None = None
        self._failed: BaseException | None = None

    def start(self) -> None:
        """Begin the next lookup now: import the evidence package, build the guarded
        client, fetch the log's checkpoint and check it against the kept one, in a
        thread. The :meth:`check` that follows waits for it and fetches only what its
        digest needs (the bucket, the entry and its proof). Every check is the one
        :func:`toolpin.evidence.look_up` makes; a fault here is that check's answer."""
        import threading

        if self._early is None and self._prepared is None:
            self._early = threading.Thread(target=self._prepare, name="toolpin-log", daemon=True)
            self._early.start()

    def _prepare(self) -> None:
        try:
            from toolpin.evidence.lookup import LogRef, Lookup

            ref = LogRef(url=self.log.url, vkey=self._key, policy=self.log.policy)
            lookup = Lookup(ref, home=self.home, timeout=self.timeout)
            try:
                lookup.prepare(warm=True)
            except BaseException:
                lookup.close()
                raise
            self._prepared = lookup
        except Exception as exc:  # the check that follows answers with it
            self._failed = exc

    def _take_prepared(self) -> Lookup | None:
        """The lookup :meth:`start` prepared (``None``: not started); re-raises its fault."""
        early, self._early = self._early, None
        if early is None:
            return None
        early.join(longest_wait(self.timeout))
        if early.is_alive():
            from toolpin.evidence import LogProblem

            raise LogProblem("unreachable", "the log took too long to answer (the checkpoint)")
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed
        prepared, self._prepared = self._prepared, None
        return prepared

    def check(self, digest: str) -> Evidence:
        """The log's answer for ``digest``; a log fault is an :class:`Evidence` problem."""
        from toolpin.evidence import LogProblem, LogRef, look_up

        try:
            prepared = self._take_prepared()
            if prepared is not None:
                with prepared:
                    found = prepared.find(digest, kind="surface")
            else:
                ref = LogRef(url=self.log.url, vkey=self._key, policy=self.log.policy)
                found = look_up(ref, digest, kind="surface", home=self.home, timeout=self.timeout)
        except LogProblem as exc:
            return Evidence(self.log, digest, None, _problem_line(self.log, exc), exc.kind)
        except ToolpinError as exc:  # e.g. an unusable key: said in toolpin's words
            why = f"the public log at {_where(self.log)} could not be checked: {exc.message}"
            return Evidence(self.log, digest, None, why, "unusable")
        except Exception as exc:  # any other fault: no evidence (refused under require-public)
            where = _where(self.log)
            why = (
                f"the public log at {where} could not be checked "
                f"(an unexpected {type(exc).__name__})"
            )
            return Evidence(self.log, digest, None, why, "error")
        return Evidence(self.log, digest, found)


def evidence_for(
    home: Path,
    digest: str,
    *,
    url: str | None = None,
    vkey: str | None = None,
    require_public: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> Evidence | None:
    """The log's answer for ``digest`` with the settings the commands share, or ``None``
    when no log is configured (``show``, ``review``, ``approve``)."""
    found = settings(home, url=url, vkey=vkey, require_public=require_public)
    return None if found is None else check(found, digest, home=home, timeout=timeout)


def approval_refused(evidence: Evidence | None) -> InputError | None:
    """The error that stops ``approve`` under ``require-public`` (exit 2), or ``None``."""
    if evidence is None:
        return None
    why = evidence.refusal()
    if why is None:
        return None
    return InputError(
        f"not approved: {why}",
        advice="the pin was not changed; approve it once the log records it, or without "
        "require-public if you trust these definitions anyway",
    )


def evidence_each(
    home: Path,
    digests: Mapping[str, str],
    *,
    url: str | None = None,
    vkey: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[str, Evidence] | None:
    """The log's answer for each named digest (``lock``, ``lock --check``), or ``None``
    when no log is configured. Once the log cannot be reached, the rest are not tried
    (each would wait for the same timeout): they carry the same problem."""
    found = settings(home, url=url, vkey=vkey)
    if found is None:
        return None
    public = PublicCheck(found, home, timeout=timeout)
    out: dict[str, Evidence] = {}
    down: Evidence | None = None
    for name, digest in digests.items():
        if down is not None:
            out[name] = Evidence(found, digest, None, down.problem, down.problem_kind)
            continue
        out[name] = public.check(digest)
        if out[name].problem_kind == "unreachable":
            down = out[name]
    return out
