"""The team lock: ``toolpin lock``, ``toolpin lock --check`` and ``toolpin run --lock``.

``lock`` reads a shared MCP config (``mcpServers``, VS Code's ``servers``, Codex TOML),
fills ``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}`` from the environment the way
clients do, resolves the exact package version and registry digest behind each server
(npm ``dist.integrity``, PyPI file hashes, an OCI digest written in the command), starts
each local server at exactly that version, reads everything the model would read
(:mod:`toolpin.probe`; no tool is ever called), and writes one lock entry per server keyed
by its config name. The entry's ``id`` is computed from the command *as written* (before
expansion), so it is the same on every machine.

``lock --check`` does the same and compares; any difference exits 1. ``run --lock`` makes
the lock entry the proxy's pin (no trust on first use) and runs the locked package
version even when the config asks for the newest.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolpin.core.render import visible
from toolpin.errors import ConfigError, LockfileError, PackageError, ProbeError, ToolpinError
from toolpin.lockfile import LockEntry, read_lock, write_lock
from toolpin.serverid import server_id

if TYPE_CHECKING:
    from toolpin.core.drift import Drift
    from toolpin.core.snapshot import Snapshot
    from toolpin.packages import PackageRef, ResolvedPackage

DEFAULT_CONFIG: Final = ".mcp.json"
DEFAULT_LOCK: Final = "toolpin.lock"
_VAR: Final = re.compile(r"\$\{(?:env:([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?)\}")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Fill ``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}``; other forms stay literal.

    An unset or empty variable takes the default, or ``""``.
    """

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        value = env.get(name, "")
        if value == "":
            return match.group(3) or ""
        return value

    return _VAR.sub(one, text)


@dataclass(frozen=True)
class ConfiguredServer:
    """One local server of the config, as written and as it will run."""

    name: str
    written: tuple[str, ...]
    """The command as written in the config (what the id is computed from)."""
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None

    @property
    def server_id(self) -> str:
        """The id every machine computes from the command as written."""
        return server_id(self.written)


@dataclass(frozen=True)
class Config:
    """The servers of a config file (local ones; remote ones are listed as skipped)."""

    path: Path
    servers: tuple[ConfiguredServer, ...]
    skipped: tuple[tuple[str, str], ...] = ()


def read_config(path: Path, *, environ: Mapping[str, str] | None = None) -> Config:
    """Read the servers of a shared MCP config (JSON, JSON with comments, or Codex TOML)."""
    from toolpin.clients.documents import open_document
    from toolpin.clients.wrap import recognise_wrap

    environ = os.environ if environ is None else environ
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"no config at {path}", advice="Give one with --config FILE.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    dialect = "codex" if path.suffix == ".toml" else "auto"
    document = open_document(text, dialect)  # type: ignore[arg-type]
    servers: list[ConfiguredServer] = []
    skipped: list[tuple[str, str]] = []
    for entry in document.entries():
        if entry.kind == "remote":
            skipped.append((entry.name, "remote server: the proxy speaks stdio only"))
            continue
        if entry.kind != "stdio":
            skipped.append((entry.name, entry.reason or "not a usable server entry"))
            continue
        written = tuple(entry.argv)
        form = recognise_wrap(written)
        if form is not None:
            start = form.inner_start
            if start is None or start >= len(written):
                skipped.append((entry.name, "wrapped in a form toolpin does not recognise"))
                continue
            written = written[start:]
        env = {k: expand(v, environ) for k, v in entry.env}
        cwd_raw = entry.value.get("cwd") if isinstance(entry.value, dict) else None
        cwd = expand(cwd_raw, environ) if isinstance(cwd_raw, str) else None
        servers.append(
            ConfiguredServer(
                name=entry.name,
                written=written,
                argv=tuple(expand(a, environ) for a in written),
                env=env,
                cwd=cwd,
            )
        )
    if not servers and not skipped:
        raise ConfigError(f"{path} lists no MCP servers (mcpServers or servers)")
    return Config(path=path, servers=tuple(servers), skipped=tuple(skipped))


# ------------------------------------------------------------------------------ locking


@dataclass(frozen=True)
class ServerOutcome:
    """What happened to one server during ``lock`` or ``lock --check``."""

    name: str
    status: str
    """``locked`` | ``match`` | ``changed`` | ``failed`` | ``new`` | ``gone`` | ``moved``."""
    message: str
    entry: LockEntry | None = None
    drift: Drift | None = None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True for ``locked`` and ``match``."""
        return self.status in ("locked", "match")


@dataclass(frozen=True)
class LockReport:
    """The outcome of ``lock`` or ``lock --check``."""

    lock_path: Path
    outcomes: tuple[ServerOutcome, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    wrote: bool = False
    newest_held: int = 0

    @property
    def ok(self) -> bool:
        """Every server locked / matching."""
        return all(o.ok for o in self.outcomes)


@dataclass
class _Options:
    definitions_only: bool
    timeout: float
    progress: Callable[[str], None] | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


def _detect(argv: Sequence[str]) -> PackageRef | None:
    from toolpin.packages import detect_package

    return detect_package(argv)


def _run_env(server: ConfiguredServer, environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    env.update(server.env)
    return env


def _probe(server: ConfiguredServer, argv: Sequence[str], opts: _Options) -> Snapshot:
    from toolpin.probe import probe_stdio

    result = probe_stdio(argv, env=_run_env(server, opts.environ), cwd=server.cwd, timeout=opts.timeout)
    return result.snapshot


def _lock_one(server: ConfiguredServer, opts: _Options) -> ServerOutcome:
    notes: list[str] = []
    argv = list(server.argv)
    package: dict[str, Any] | None = None
    label = ""
    try:
        ref = None if opts.definitions_only else _detect(argv)
        if ref is not None:
            resolved, argv, note = _resolve_for_lock(ref, argv)
            if note:
                notes.append(note)
            if resolved is not None:
                package = resolved.to_json()
                label = f", {resolved.name} {resolved.version}"
        if opts.progress:
            opts.progress(f"{server.name}: starting")
        snapshot = _probe(server, argv, opts)
    except (ProbeError, PackageError, LockfileError) as exc:
        return ServerOutcome(server.name, "failed", exc.message, notes=tuple(notes))
    entry = LockEntry(snapshot=snapshot, server_id=server.server_id, package=package)
    tools = len(snapshot.tools) if snapshot.tools is not None else 0
    return ServerOutcome(
        server.name,
        "locked",
        f"locked ({tools} tool{'s' if tools != 1 else ''}{label})",
        entry=entry,
        notes=tuple(notes),
    )


def _resolve_for_lock(ref: PackageRef, argv: list[str]) -> tuple[ResolvedPackage | None, list[str], str | None]:
    from toolpin.packages import pin_argv, resolve

    if ref.ecosystem == "oci":
        if ref.exact is None:
            return None, argv, f"image {ref.name} is not pinned by digest, so it can change on any start"
        from toolpin.packages import ResolvedPackage

        return ResolvedPackage("oci", ref.name, ref.requested, ref.exact), argv, None
    if ref.is_range:
        raise PackageError(f"{ref.name} asks for {ref.requested!r}, a version range; pin an exact version")
    resolved = resolve(ref)
    if ref.pinned:
        return resolved, argv, None
    pinned = pin_argv(argv, ref, resolved.version)
    if pinned is None:
        return resolved, argv, f"{ref.name} cannot be held at {resolved.version} in this form; only its definitions are locked"
    return resolved, pinned, None


def lock(
    config_path: Path,
    lock_path: Path,
    *,
    definitions_only: bool = False,
    timeout: float = 60.0,
    concurrency: int = 4,
    progress: Callable[[str], None] | None = None,
) -> LockReport:
    """Write (or update) the lock for every local server of the config."""
    config = read_config(config_path)
    opts = _Options(definitions_only=definitions_only, timeout=timeout, progress=progress)
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        outcomes = list(pool.map(lambda s: _lock_one(s, opts), config.servers))
    entries = {o.name: o.entry for o in outcomes if o.entry is not None}
    if lock_path.exists():
        # Keep entries of servers that failed to start this time; drop removed servers.
        try:
            previous = read_lock(lock_path).servers
        except LockfileError:
            previous = {}
        names = {s.name for s in config.servers}
        for name, entry in previous.items():
            if name in names and name not in entries:
                entries[name] = entry
    wrote = False
    if entries:
        write_lock(lock_path, entries)
        wrote = True
    newest = sum(
        1 for s in config.servers if not definitions_only and _unpinned_package(s.argv)
    )
    return LockReport(lock_path, tuple(outcomes), config.skipped, wrote, newest)


def _unpinned_package(argv: Sequence[str]) -> bool:
    try:
        ref = _detect(argv)
    except PackageError:
        return False
    return ref is not None and ref.ecosystem != "oci" and not ref.pinned


def check(
    config_path: Path,
    lock_path: Path,
    *,
    definitions_only: bool = False,
    timeout: float = 60.0,
    concurrency: int = 4,
    progress: Callable[[str], None] | None = None,
) -> LockReport:
    """Compare every local server of the config with the lock (``lock --check``)."""
    if not lock_path.exists():
        raise LockfileError(f"no lockfile at {lock_path}", advice="Write one with: toolpin lock")
    locked = read_lock(lock_path).servers
    config = read_config(config_path)
    opts = _Options(definitions_only=definitions_only, timeout=timeout, progress=progress)
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        outcomes = list(pool.map(lambda s: _check_one(s, locked.get(s.name), opts), config.servers))
    names = {s.name for s in config.servers}
    for name in sorted(set(locked) - names):
        outcomes.append(ServerOutcome(name, "gone", "in the lock but no longer in the config"))
    return LockReport(lock_path, tuple(outcomes), config.skipped)


def _check_one(server: ConfiguredServer, entry: LockEntry | None, opts: _Options) -> ServerOutcome:
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
            argv, label, note, problem = _check_package(ref, argv, entry)
            if note:
                notes.append(note)
            if problem:
                return ServerOutcome(server.name, "changed", problem, notes=tuple(notes))
        observed = _probe(server, argv, opts)
    except (ProbeError, PackageError, LockfileError) as exc:
        return ServerOutcome(server.name, "failed", f"could not check: {exc.message}", notes=tuple(notes))
    drift = compare(entry.snapshot, observed)
    if drift.ok:
        return ServerOutcome(server.name, "match", f"matches the lock{label}", notes=tuple(notes))
    return ServerOutcome(
        server.name, "changed", "changed since it was locked", drift=drift, notes=tuple(notes)
    )


def _check_package(
    ref: PackageRef, argv: list[str], entry: LockEntry
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
        return argv, label, None, (
            f"it runs {ref.name} {ref.exact}, but the lock approved {locked.version}; "
            "update the lock in a pull request (toolpin lock)"
        )
    if locked.ecosystem == "oci":
        return argv, label, None, None
    now = resolve(ref, version=locked.version)
    if not now.same_contents(locked):
        return argv, label, None, (
            f"the registry now serves different contents for {locked.name} {locked.version} "
            "than when it was locked"
        )
    note = None
    try:
        newest = latest_version(ref)
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
            return argv, label, None, (
                f"{ref.name} cannot be held at {locked.version} in this form and the lock "
                "records a version"
            )
        argv = pinned
    return argv, label, note, None


# ---------------------------------------------------------------------- run --lock


class LockPinSource:
    """The proxy's pin from a team lock entry: no trust on first use, nothing written."""

    def __init__(self, lock_path: Path, entry_name: str, entry: LockEntry, label: str) -> None:
        self.lock_path = lock_path
        self.entry_name = entry_name
        self.entry = entry
        self.label = label

    def pinned(self) -> Snapshot | None:
        """The locked snapshot."""
        return self.entry.snapshot

    def pin_first(self, snapshot: Snapshot) -> tuple[Snapshot, bool]:  # pragma: no cover
        """Never called: a lock entry always exists."""
        return self.entry.snapshot, False

    def record_drift(self, snapshot: Snapshot, drift: Drift, *, mid_session: bool) -> None:
        """A lock is read-only; the audit log records the event (best effort)."""
        from toolpin import audit
        from toolpin.store import PinStore, change_keys

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


def prepare_locked_run(
    lock_file: str, argv: Sequence[str], *, name: str | None, label: str
) -> LockedRun | None:
    """Find the lock entry of ``argv`` (by ``--name`` first, then by command id).

    Returns ``None`` when the lock has no entry for it. Raises :class:`ToolpinError` when
    the lock is unusable or the command runs another package or version than the lock.
    """
    path = Path(lock_file)
    try:
        servers = read_lock(path.absolute()).servers
    except LockfileError as exc:
        raise LockfileError(
            f"cannot use the lockfile {path.absolute()}: {exc.message}",
            advice="A relative --lock path is read from the directory the client starts "
            "the server in.",
        ) from None
    entry_name = None
    if name is not None and name in servers:
        entry_name = name
    else:
        sid = server_id(argv)
        entry_name = next((n for n, e in servers.items() if e.server_id == sid), None)
    if entry_name is None:
        return None
    entry = servers[entry_name]
    run_argv = list(argv)
    notes: list[str] = []
    if entry.package is not None:
        run_argv, note = _hold_package(entry, run_argv)
        if note:
            notes.append(note)
    return LockedRun(LockPinSource(path.absolute(), entry_name, entry, label), run_argv, tuple(notes))


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
            f"{ref.name} cannot be held at {locked.version} in this form; only its definitions are checked"
        )
    return pinned, f"running {ref.name} {locked.version}, the version in the lock"
