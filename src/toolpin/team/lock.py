"""The team lock: ``toolpin lock``, ``toolpin lock --check`` and ``toolpin run --lock``.

``lock`` reads a shared MCP config (``mcpServers``, VS Code's ``servers``, Codex TOML),
fills ``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}`` from the environment the way
clients do, resolves the exact package version and registry digest behind each server
(npm ``dist.integrity``, PyPI file hashes, an OCI digest written in the command), starts
each local server at exactly that version, reads everything the model would read
(:mod:`toolpin.probe.stdio`; no tool is ever called), and writes one lock entry per server keyed
by its config name. The entry's ``id`` is computed from the command *as written* (before
expansion), so it is the same on every machine. Servers start where a client starts them
(the project directory, or their ``cwd`` relative to it); servers the config disables are
skipped. Some servers show more tools to clients that declare more capabilities, so the
capabilities a server was listed with are recorded in its entry and reused by ``--check``.

``lock --check`` does the same and compares; any difference exits 1. ``run --lock`` makes
the lock entry the proxy's pin (no trust on first use) and runs the locked package
version even when the config asks for the newest.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from toolpin.clients.config import Config, ConfiguredServer, RemoteServer, read_config
from toolpin.core.render import counted, visible
from toolpin.errors import (
    InputError,
    LockfileError,
    PackageError,
    ProbeError,
)
from toolpin.lockfile.native import LockEntry, Lockfile, read_lock, write_lock

if TYPE_CHECKING:
    from toolpin.core.drift import Drift
    from toolpin.core.snapshot import Snapshot
    from toolpin.packages import PackageRef, ResolvedPackage
    from toolpin.probe.http import Authorizer
    from toolpin.skills.check import SkillOutcome

DEFAULT_LOCK: Final = "toolpin.lock"
CLIENT_CAPABILITIES: Final = ("elicitation", "roots", "sampling")
"""Client capabilities ``lock`` can declare when it lists a server (``--client-capabilities``).
Some servers offer more tools to a client that declares them (server-everything adds
``get-roots-list`` for ``roots``); the lock must list what the team's client is shown."""
PROBED_WITH: Final = "probedWith"
"""Lock entry member recording the client capabilities the server was listed with."""


Status = Literal["locked", "match", "changed", "failed", "new", "gone", "moved"]
"""What became of one server: ``locked`` (by ``lock``), ``match`` (``--check`` found it as
locked), ``changed``, ``failed`` (could not be started or listed), ``new`` (not in the
lock), ``gone`` (in the lock, not in the config), ``moved`` (its command changed)."""
OK_STATUSES: Final[frozenset[Status]] = frozenset({"locked", "match"})


@dataclass(frozen=True)
class LockOptions:
    """How ``lock`` and ``lock --check`` run (the same for both)."""

    definitions_only: bool = False
    """Do not resolve or hold package versions; lock definitions only."""
    timeout: float = 60.0
    """Seconds per server for the whole conversation, however slowly it starts."""
    concurrency: int = 4
    """Servers started at once."""
    client_capabilities: tuple[str, ...] | None = None
    """Declared to every server (see :data:`CLIENT_CAPABILITIES`); ``None``: what the lock
    records per server (``lock`` without a record: every capability)."""
    progress: Callable[[str], None] | None = None
    """Called with one line of text as each server starts."""
    environ: Mapping[str, str] | None = None
    """The environment servers start in (``None``: this process's)."""
    remote_auth: Callable[[str], Authorizer | None] | None = None
    """The stored OAuth authorization of a remote server, by its URL (``None`` when it
    has none); a remote server with no ``Authorization`` header uses it."""
    annotate: Callable[[Mapping[str, LockEntry]], Mapping[str, LockEntry]] | None = None
    """Called by ``lock`` with the entries observed now, before the lock is written;
    returns them as they are to be written (``lock --log`` adds each recorded entry's
    public-log proof, :class:`toolpin.pins.lockproofs.Recorder`)."""
    skills: Path | None = None
    """``lock``: the project's skills folder to record (``None``: the one the lock
    records, if any). ``lock --check`` always checks the folder the lock records."""

    def env(self) -> Mapping[str, str]:
        return self.environ if self.environ is not None else dict(os.environ)


@dataclass(frozen=True)
class ServerOutcome:
    """What happened to one server during ``lock`` or ``lock --check``."""

    name: str
    status: Status
    message: str
    entry: LockEntry | None = None
    drift: Drift | None = None
    notes: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    """Why a change looks driven by this machine's environment, and the fix (never an
    acceptance: the server still differs)."""
    held: bool = False
    """The config asks for the newest package version; the lock holds this one."""

    @property
    def ok(self) -> bool:
        """True for ``locked`` and ``match``."""
        return self.status in OK_STATUSES


@dataclass(frozen=True)
class LockReport:
    """The outcome of ``lock`` or ``lock --check``."""

    lock_path: Path
    outcomes: tuple[ServerOutcome, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    wrote: bool = False
    newest_held: int = 0
    skills: tuple[SkillOutcome, ...] = ()
    """The project's skills (``lock --skills``): locked, matching, changed or new."""
    skills_gone: tuple[str, ...] = ()
    """Skills the lock records that are no longer in the folder."""

    @property
    def ok(self) -> bool:
        """Every server and skill locked / matching."""
        skills_ok = all(o.ok for o in self.skills) and not self.skills_gone
        return all(o.ok for o in self.outcomes) and skills_ok


def _detect(argv: Sequence[str]) -> PackageRef | None:
    from toolpin.packages import detect_package

    return detect_package(argv)


def _run_env(server: ConfiguredServer, environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    env.update(server.env)
    return env


def capability_names(names: Sequence[str]) -> tuple[str, ...]:
    """Validated, sorted, de-duplicated client capability names."""
    out = sorted({n.strip() for n in names if n.strip()})
    unknown = [n for n in out if n not in CLIENT_CAPABILITIES]
    if unknown:
        raise InputError(
            f"unknown client capability {visible(unknown[0])!r}",
            advice=f"Choose among: {', '.join(CLIENT_CAPABILITIES)}.",
        )
    return tuple(out)


def recorded_capabilities(entry: LockEntry | None) -> tuple[str, ...]:
    """The client capabilities a lock entry was listed with (none when not recorded)."""
    if entry is None:
        return ()
    probed = entry.extra.get(PROBED_WITH)
    names = probed.get("clientCapabilities") if isinstance(probed, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return ()
    try:
        return capability_names(names)
    except InputError:
        raise LockfileError(
            "a lock entry records a client capability this toolpin does not know",
            advice="Upgrade toolpin, or re-create the lock.",
        ) from None


def _probe(
    server: ConfiguredServer, argv: Sequence[str], opts: LockOptions, caps: tuple[str, ...]
) -> Snapshot:
    from toolpin.probe.stdio import probe_stdio

    result = probe_stdio(
        argv,
        env=_run_env(server, opts.env()),
        cwd=server.cwd,
        timeout=opts.timeout,
        capabilities={name: {} for name in caps},
    )
    return result.snapshot


def _lock_one(server: ConfiguredServer, opts: LockOptions, caps: tuple[str, ...]) -> ServerOutcome:
    notes: list[str] = []
    argv = list(server.argv)
    package: dict[str, Any] | None = None
    label = ""
    try:
        ref = None if opts.definitions_only else _detect(argv)
        if ref is not None:
            resolved, argv, note = _resolve_for_lock(ref, argv, _where(server, opts))
            if note:
                notes.append(note)
            if resolved is not None:
                package = resolved.to_json()
                label = f", {resolved.name} {resolved.version}"
        if opts.progress:
            opts.progress(f"{server.name}: starting")
        snapshot = _probe(server, argv, opts, caps)
    except (ProbeError, PackageError, LockfileError) as exc:
        notes.extend([exc.advice] if exc.advice else [])
        return ServerOutcome(server.name, "failed", exc.message, notes=tuple(notes))
    extra = {PROBED_WITH: {"clientCapabilities": list(caps)}}
    entry = LockEntry(snapshot=snapshot, server_id=server.server_id, package=package, extra=extra)
    tools = len(snapshot.tools) if snapshot.tools is not None else 0
    return ServerOutcome(
        server.name,
        "locked",
        f"locked ({counted(tools, 'tool')}{label})",
        entry=entry,
        notes=tuple(notes),
        held=argv != list(server.argv),
    )


def _where(server: ConfiguredServer, opts: LockOptions) -> tuple[Path | None, dict[str, str]]:
    """The folder and environment a server starts in: what its runner reads its registry
    configuration from (a project ``.npmrc`` or ``uv.toml``, ``PIP_INDEX_URL``, ...)."""
    return (Path(server.cwd) if server.cwd else None), _run_env(server, opts.env())


def _resolve_for_lock(
    ref: PackageRef, argv: list[str], where: tuple[Path | None, dict[str, str]]
) -> tuple[ResolvedPackage | None, list[str], str | None]:
    from toolpin.packages import pin_argv, resolve

    if ref.ecosystem == "oci":
        if ref.exact is None:
            return (
                None,
                argv,
                f"image {ref.name} is not pinned by digest, so it can change on any start",
            )
        from toolpin.packages import ResolvedPackage

        return ResolvedPackage("oci", ref.name, ref.requested, ref.exact), argv, None
    if ref.is_range:
        raise PackageError(
            f"{ref.name} asks for {ref.requested!r}, a version range; pin an exact version"
        )
    resolved = resolve(ref, where=where[0], env=where[1])
    if ref.pinned:
        return resolved, argv, None
    pinned = pin_argv(argv, ref, resolved.version)
    if pinned is None:
        return (
            resolved,
            argv,
            f"{ref.name} cannot be held at {resolved.version} in this form; "
            "only its definitions are locked",
        )
    return resolved, pinned, None


def lock(config_path: Path, lock_path: Path, opts: LockOptions | None = None) -> LockReport:
    """Write (or update) the lock for every local server of the config.

    Every server is started (``opts.concurrency`` at a time) and listed; then, under a
    cross-process mutex, the previous lock is read and the new one written atomically.
    A server that fails this time keeps its previous entry when its command is unchanged.
    ``opts.client_capabilities`` are declared to every server (see
    :data:`CLIENT_CAPABILITIES`); ``None`` keeps what the previous lock recorded per
    server.
    """
    opts = opts or LockOptions()
    config = read_config(config_path)
    explicit = (
        None if opts.client_capabilities is None else capability_names(opts.client_capabilities)
    )
    before = _previous(lock_path) if explicit is None else {}

    def one(server: ConfiguredServer) -> ServerOutcome:
        caps = explicit if explicit is not None else _caps_or_none(before.get(server.name))
        return _lock_one(server, opts, caps)

    with ThreadPoolExecutor(max_workers=max(1, opts.concurrency)) as pool:
        outcomes = list(pool.map(one, config.servers))
        outcomes += pool.map(lambda r: _lock_remote(r, opts), config.remotes)
    entries = {o.name: o.entry for o in outcomes if o.entry is not None}
    if opts.annotate is not None and entries:
        entries = dict(opts.annotate(entries))
    wrote = False
    skills_doc: dict[str, Any] | None = None
    skill_outcomes: list[SkillOutcome] = []
    with _mutex(lock_path):
        if lock_path.exists():
            # A lock that no longer verifies is re-created from what was observed now.
            try:
                previous_lock: Lockfile | None = read_lock(lock_path)
            except LockfileError:
                previous_lock = None
                if opts.skills is None and _records_skills(lock_path):
                    raise LockfileError(
                        f"{lock_path} does not verify, and it records skills",
                        advice="Re-create it naming the folder: toolpin lock --skills DIR",
                    ) from None
            previous = previous_lock.servers if previous_lock is not None else {}
            ids: dict[str, str | None] = {s.name: s.server_id for s in config.servers}
            ids.update((r.name, _remote_id(r, opts)) for r in config.remotes)
            for name, entry in previous.items():
                if (
                    name not in entries
                    and entry.server_id is not None
                    and ids.get(name) == entry.server_id
                ):
                    entries[name] = entry
        else:
            previous_lock = None
        skills_doc, skill_outcomes = _lock_skills(lock_path, previous_lock, opts.skills)
        if entries or skills_doc is not None:
            write_lock(lock_path, entries, skills=skills_doc)
            wrote = True
    newest = sum(1 for o in outcomes if o.held)
    return LockReport(
        lock_path,
        tuple(outcomes),
        _not_remote(config),
        wrote,
        newest,
        skills=tuple(skill_outcomes),
    )


def _lock_skills(
    lock_path: Path, previous: Lockfile | None, folder: Path | None
) -> tuple[dict[str, Any] | None, list[SkillOutcome]]:
    """The lock's ``skills`` member (``None``: the lock records no skills) and what was
    locked. The folder is ``folder``, else the one the previous lock records; a previous
    ``skills`` member that does not verify stops the lock (exit 2), never dropped."""
    from toolpin.skills import lock as skills_lock
    from toolpin.skills.check import SkillOutcome

    before = None
    if previous is not None and previous.skills is not None:
        before = skills_lock.read(previous.skills, lock_path)
    if folder is None:
        if before is None:
            return None, []
        folder = before.folder(lock_path)
    doc = skills_lock.record(folder, lock_path, before)
    locked = skills_lock.read(doc, lock_path)
    outcomes = [
        SkillOutcome(skills_lock.ref_of(folder / name), "pinned", pin.tree, pin)
        for name, pin in locked.items.items()
    ]
    return doc, outcomes


def _records_skills(lock_path: Path) -> bool:
    """Whether a lock that does not verify still holds a ``skills`` member (then ``lock``
    without ``--skills`` must not re-create it without them)."""
    from toolpin.core.canonical import parse_json
    from toolpin.errors import ToolpinError
    from toolpin.lockfile.native import SKILLS, read_bytes

    try:
        doc = parse_json(read_bytes(lock_path))
    except ToolpinError:
        return False
    return isinstance(doc, dict) and SKILLS in doc


def _previous(lock_path: Path) -> Mapping[str, LockEntry]:
    """The entries of an existing lock (empty when there is none or it does not verify)."""
    if not lock_path.exists():
        return {}
    try:
        return read_lock(lock_path).servers
    except LockfileError:
        return {}


def _caps_or_none(entry: LockEntry | None) -> tuple[str, ...]:
    """The capabilities to list a server with when ``--client-capabilities`` is not given:
    what its lock entry records, else every capability toolpin can declare. Servers offer
    more to a client that declares more, and the proxy accepts a client seeing a subset of
    what a lock approved, so locking the fullest view covers every teammate's client."""
    if entry is None or PROBED_WITH not in entry.extra:
        return CLIENT_CAPABILITIES
    try:
        return recorded_capabilities(entry)
    except LockfileError:
        return CLIENT_CAPABILITIES


@contextlib.contextmanager
def _mutex(lock_path: Path) -> Iterator[None]:
    """A cross-process mutex for one lock file, kept under ``TOOLPIN_HOME`` (not beside
    the lock, so the project folder gets nothing but the lock itself)."""
    import hashlib

    from toolpin.util.fs import ensure_private_dir, locked, toolpin_home

    key = hashlib.sha256(str(lock_path.absolute()).encode("utf-8", "surrogateescape"))
    try:
        folder = ensure_private_dir(toolpin_home() / "locks")
    except OSError:  # no writable state directory: a single writer is still safe
        yield
        return
    with locked(folder / f"{key.hexdigest()[:32]}.lock", timeout=60.0):
        yield


def check_json(report: LockReport) -> dict[str, Any]:
    """``lock --check --json``: stable keys, documented in docs/teamlock.md.

    ``diff`` holds the lines ``lock --check`` prints for a change (the proxy's renderer,
    terminal-safe); ``changes`` the label keys of each changed definition. Strings are
    as they are; print it with :func:`toolpin.core.render.safe_json`, which escapes what
    could drive a terminal.
    """
    from toolpin.core.drift import change_keys
    from toolpin.report.text import review_lines

    servers = []
    for outcome in report.outcomes:
        drift = outcome.drift
        servers.append(
            {
                "name": outcome.name,
                "status": outcome.status,
                "ok": outcome.ok,
                "message": outcome.message,
                "changes": change_keys(drift) if drift is not None else [],
                "diff": [line.text for line in review_lines(drift)] if drift is not None else [],
                "hints": list(outcome.hints),
                "notes": list(outcome.notes),
            }
        )
    out: dict[str, Any] = {
        "ok": report.ok,
        "lock": str(report.lock_path),
        "servers": servers,
        "skipped": [{"name": n, "reason": r} for n, r in report.skipped],
    }
    if report.skills or report.skills_gone:  # a lock without skills keeps its keys
        from toolpin.skills.report import lock_json

        out["skills"] = lock_json(report.skills, report.skills_gone)
    return out


def check(config_path: Path, lock_path: Path, opts: LockOptions | None = None) -> LockReport:
    """Compare every local server of the config with the lock (``lock --check``).

    Each server is listed with the client capabilities its entry records, unless
    ``opts.client_capabilities`` says otherwise.
    """
    opts = opts or LockOptions()
    if not lock_path.exists():
        raise LockfileError(f"no lockfile at {lock_path}", advice="Write one with: toolpin lock")
    locked = read_lock(lock_path).servers
    config = read_config(config_path)
    explicit = (
        None if opts.client_capabilities is None else capability_names(opts.client_capabilities)
    )

    def one(server: ConfiguredServer) -> ServerOutcome:
        return _check_one(server, locked.get(server.name), opts, explicit)

    with ThreadPoolExecutor(max_workers=max(1, opts.concurrency)) as pool:
        outcomes = list(pool.map(one, config.servers))
        outcomes += pool.map(lambda r: _check_remote(r, locked.get(r.name), opts), config.remotes)
    skills, gone = _check_skills(lock_path)
    names = {s.name for s in config.servers} | {r.name for r in config.remotes}
    for name in sorted(set(locked) - names):
        why = config.skip_reason(name)
        text = (
            "in the lock but no longer in the config"
            if why is None
            else (f"in the lock but no longer locked by the config ({why})")
        )
        outcomes.append(ServerOutcome(name, "gone", text))
    return LockReport(
        lock_path,
        tuple(outcomes),
        _not_remote(config),
        skills=tuple(skills),
        skills_gone=tuple(gone),
    )


def _check_skills(lock_path: Path) -> tuple[list[SkillOutcome], list[str]]:
    """The skills the lock records compared with its folder now (none recorded: none)."""
    from toolpin.skills import lock as skills_lock

    raw = read_lock(lock_path).skills
    if raw is None:
        return [], []
    return skills_lock.check(skills_lock.read(raw, lock_path), lock_path)


def _check_one(
    server: ConfiguredServer,
    entry: LockEntry | None,
    opts: LockOptions,
    explicit: tuple[str, ...] | None,
) -> ServerOutcome:
    from toolpin.core.drift import compare

    if entry is None:
        return ServerOutcome(server.name, "new", "not in the lock")
    if entry.server_id is not None and entry.server_id != server.server_id:
        return ServerOutcome(
            server.name, "moved", "its command in the config changed since it was locked"
        )
    notes: list[str] = []
    argv = list(server.argv)
    label = ""
    try:
        ref = None if opts.definitions_only else _detect(argv)
        if ref is not None:
            argv, label, note, problem = _check_package(ref, argv, entry, _where(server, opts))
            if note:
                notes.append(note)
            if problem:
                return ServerOutcome(server.name, "changed", problem, notes=tuple(notes))
        caps = explicit if explicit is not None else recorded_capabilities(entry)
        observed = _probe(server, argv, opts, caps)
    except (ProbeError, PackageError, LockfileError) as exc:
        notes.extend([exc.advice] if exc.advice else [])
        return ServerOutcome(
            server.name, "failed", f"could not check: {exc.message}", notes=tuple(notes)
        )
    drift = compare(entry.snapshot, observed)
    if drift.ok:
        return ServerOutcome(server.name, "match", f"matches the lock{label}", notes=tuple(notes))
    from toolpin.report.environment import environment_hints

    hints = environment_hints(drift, machine_values(_run_env(server, opts.env())))
    return ServerOutcome(
        server.name,
        "changed",
        "changed since it was locked",
        drift=drift,
        notes=tuple(notes),
        hints=tuple(hints),
    )


def machine_values(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` plus the machine facts servers commonly write into definitions, under the
    variable that sets them when it is not set: ``TZ`` (the local timezone), ``USER``
    and ``HOME``."""
    import getpass

    out = dict(env)
    if "TZ" not in out:
        zone = _local_zone()
        if zone:
            out["TZ"] = zone
    if "USER" not in out:
        with contextlib.suppress(Exception):
            out["USER"] = getpass.getuser()
    if "HOME" not in out:
        home = os.path.expanduser("~")
        if home != "~":
            out["HOME"] = home
    return out


def _local_zone() -> str | None:
    """The IANA name of the local timezone (``/etc/localtime``), when it can be told."""
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        return None
    marker = "/zoneinfo/"
    if marker not in target:
        return None
    return target.split(marker, 1)[1] or None


def _check_package(
    ref: PackageRef,
    argv: list[str],
    entry: LockEntry,
    where: tuple[Path | None, dict[str, str]],
) -> tuple[list[str], str, str | None, str | None]:
    """(argv to probe, label, note, problem) for the package behind a locked server."""
    from toolpin.packages import ResolvedPackage, latest_version, pin_argv, resolve

    if entry.package is None:
        if ref.ecosystem == "oci" and ref.exact is None:
            return argv, "", f"image {ref.name} is not pinned by digest", None
        return argv, "", None, "its package is not recorded in the lock yet; run toolpin lock"
    locked = ResolvedPackage.from_json(entry.package)
    if (locked.ecosystem, locked.name) != (ref.ecosystem, ref.name):
        return argv, "", None, f"it now runs {ref.name}, but the lock approved {locked.name}"
    label = f" ({locked.name} {locked.version})"
    if ref.exact is not None and ref.exact != locked.version:
        return (
            argv,
            label,
            None,
            (
                f"it runs {ref.name} {ref.exact}, but the lock approved {locked.version}; "
                "update the lock in a pull request (toolpin lock)"
            ),
        )
    if locked.ecosystem == "oci":
        return argv, label, None, None
    now = resolve(ref, version=locked.version, where=where[0], env=where[1])
    if not now.same_contents(locked):
        return (
            argv,
            label,
            None,
            (
                f"the registry now serves different contents for {locked.name} {locked.version} "
                "than when it was locked"
            ),
        )
    note = None
    try:
        newest = latest_version(ref, where=where[0], env=where[1])
        if newest != locked.version:
            note = (
                f"{locked.name} {newest} is out; this project keeps running {locked.version} "
                "until the lock is updated (toolpin lock)"
            )
    except PackageError:
        pass
    if ref.exact is None:
        pinned = pin_argv(argv, ref, locked.version)
        if pinned is None:
            return (
                argv,
                label,
                None,
                (
                    f"{ref.name} cannot be held at {locked.version} in this form and the lock "
                    "records a version"
                ),
            )
        argv = pinned
    return argv, label, note, None


# ---------------------------------------------------------------------- remote servers


def _not_remote(config: Config) -> tuple[tuple[str, str], ...]:
    """The skipped servers, less the remote ones (those are locked too)."""
    remote = {r.name for r in config.remotes}
    return tuple((n, why) for n, why in config.skipped if n not in remote)


def _remote_url(remote: RemoteServer, opts: LockOptions) -> str:
    from toolpin.clients.config import expand

    if not remote.url:
        raise ProbeError("a remote server without a URL")
    return expand(remote.url, opts.env())


def _remote_id(remote: RemoteServer, opts: LockOptions) -> str | None:
    """The id ``toolpin run --name NAME --url URL`` uses (name + origin + path)."""
    from toolpin.pins.serverid import remote_server_id

    try:
        return remote_server_id(_remote_url(remote, opts), remote.name)
    except ProbeError:
        return None


def _remote_headers(remote: RemoteServer, opts: LockOptions) -> tuple[tuple[str, str], ...]:
    """The entry's static headers, ``${env:VAR}`` filled from the lock's environment
    (:func:`toolpin.core.headers.parse_header`: the reading ``toolpin run --url`` uses).
    Raises ProbeError naming the header, never its value."""
    from toolpin.core.headers import parse_header
    from toolpin.errors import InputError

    if remote.header_problem is not None:
        raise ProbeError(remote.header_problem)
    env = opts.env()
    out: list[tuple[str, str]] = []
    for text in remote.headers:
        try:
            name, value = parse_header(text, env)
        except InputError as exc:
            raise ProbeError(exc.message) from None
        if "${" in value:
            raise ProbeError(f"the header {name} uses a variable form toolpin does not expand")
        out.append((name, value))
    return tuple(out)


def _probe_remote(remote: RemoteServer, opts: LockOptions) -> Snapshot:
    """List a remote server over Streamable HTTP (the probe's own conversation), with the
    entry's headers, else the OAuth tokens ``toolpin run --url`` stored for it, through
    the environment's proxies. The URL is the team's choice, so private and loopback
    addresses are allowed; link-local and cloud metadata addresses never are."""
    from toolpin.core.headers import has_authorization
    from toolpin.core.wire import identity_url
    from toolpin.probe.http import AuthorizationRequired, probe_http
    from toolpin.probe.ssrf import AddressPolicy

    url = _remote_url(remote, opts)
    if remote.transport == "sse":
        raise ProbeError("the legacy HTTP+SSE transport is not probed; lock it over HTTP")
    headers = _remote_headers(remote, opts)
    auth = None
    if not has_authorization(headers) and opts.remote_auth is not None:
        auth = opts.remote_auth(url)
    try:
        result = probe_http(
            url,
            policy=AddressPolicy(allow_private=True),
            timeout=opts.timeout,
            headers=headers,
            auth=auth,
            trust_env=True,
        )
    except AuthorizationRequired as exc:
        shown = identity_url(url)
        if has_authorization(headers):
            raise ProbeError(
                f"the server refused the Authorization header (HTTP {exc.status}); "
                "check the headers in the config and the variables they name"
            ) from None
        again = "again " if auth is not None else ""
        raise ProbeError(
            f"the server requires authorization (HTTP {exc.status}); authorize toolpin "
            f"{again}once with `toolpin login --url {shown}`"
        ) from None
    return result.snapshot


def _lock_remote(remote: RemoteServer, opts: LockOptions) -> ServerOutcome:
    try:
        if opts.progress:
            opts.progress(f"{remote.name}: listing the remote server")
        snapshot = _probe_remote(remote, opts)
    except ProbeError as exc:
        return ServerOutcome(remote.name, "failed", exc.message)
    entry = LockEntry(snapshot=snapshot, server_id=_remote_id(remote, opts))
    tools = len(snapshot.tools) if snapshot.tools is not None else 0
    return ServerOutcome(
        remote.name, "locked", f"locked ({counted(tools, 'tool')}, remote)",
        entry=entry,
    )  # fmt: skip


def _check_remote(
    remote: RemoteServer, entry: LockEntry | None, opts: LockOptions
) -> ServerOutcome:
    from toolpin.core.drift import compare

    if entry is None:
        return ServerOutcome(remote.name, "new", "not in the lock")
    if entry.server_id is not None and entry.server_id != _remote_id(remote, opts):
        return ServerOutcome(
            remote.name, "moved", "its URL in the config changed since it was locked"
        )
    try:
        observed = _probe_remote(remote, opts)
    except ProbeError as exc:
        return ServerOutcome(remote.name, "failed", f"could not check: {exc.message}")
    drift = compare(entry.snapshot, observed)
    if drift.ok:
        return ServerOutcome(remote.name, "match", "matches the lock (remote)")
    return ServerOutcome(remote.name, "changed", "changed since it was locked", drift=drift)


# ---------------------------------------------------------------------- run --lock
