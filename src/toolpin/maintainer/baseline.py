"""``toolpin snapshot``: a server's definitions as a baseline file its repository keeps.

The server is started from the working tree (or reached at a URL) and listed with the
probe ``toolpin lock`` uses (:mod:`toolpin.probe`): everything the model would read,
no tool called. The baseline is a toolpin lock (:mod:`toolpin.lockfile.native`) with one
entry per ``--name``: definitions sorted by name, each one a block of indented JSON with
its members sorted, each with its hash, so a pull request's diff of the file is readable
and the file verifies itself (``toolpin check --lock`` reads it too). Nothing in it
depends on the machine or the time, so listing an unchanged server writes the same bytes.

``snapshot --check`` reads the baseline (a missing, corrupt or hand-edited one is exit 2),
lists the server the same way (with the client capabilities the baseline records) and
compares (:func:`toolpin.core.drift.compare`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolpin.core.drift import Drift, compare
from toolpin.core.render import visible
from toolpin.core.snapshot import Snapshot
from toolpin.errors import InputError, LockfileError
from toolpin.lockfile.native import LockEntry, read_lock, write_lock
from toolpin.team.lock import CLIENT_CAPABILITIES, PROBED_WITH, recorded_capabilities

DEFAULT_BASELINE: Final = ".toolpin/definitions.json"
DEFAULT_NAME: Final = "server"


@dataclass(frozen=True)
class Target:
    """The server to list: a command (``argv``, started in ``cwd`` with ``env``) or a
    Streamable HTTP ``url`` (its own, so loopback and private addresses are allowed)."""

    argv: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if bool(self.argv) == bool(self.url):
            raise InputError("give the server as a command after `--`, or as --url (one of them)")


@dataclass(frozen=True)
class Written:
    """What ``snapshot`` wrote."""

    name: str
    baseline: Path
    snapshot: Snapshot
    changed: bool
    """The file's bytes differ from what was there before (or there was none)."""
    created: bool = False
    """There was no baseline before."""


@dataclass(frozen=True)
class Checked:
    """What ``snapshot --check`` found."""

    name: str
    baseline: Path
    drift: Drift
    observed: Snapshot

    @property
    def ok(self) -> bool:
        return self.drift.ok


def observe(target: Target, capabilities: Sequence[str] = CLIENT_CAPABILITIES) -> Snapshot:
    """List the server once (no tool called). Raises :class:`toolpin.errors.ProbeError`."""
    caps: dict[str, Any] = {name: {} for name in capabilities}
    if target.url is not None:
        from toolpin.probe.http import probe_http
        from toolpin.probe.ssrf import AddressPolicy

        return probe_http(
            target.url,
            policy=AddressPolicy(allow_private=True),
            timeout=target.timeout,
        ).snapshot
    from toolpin.probe.stdio import probe_stdio

    return probe_stdio(
        target.argv, env=target.env, cwd=target.cwd, timeout=target.timeout, capabilities=caps
    ).snapshot


def _entries(path: Path) -> dict[str, LockEntry]:
    """The baseline's entries, verified. Raises InputError / LockfileError (exit 2)."""
    if not path.exists():
        raise InputError(
            f"no baseline at {path}",
            advice="Write one with `toolpin snapshot -- CMD ARGS` and commit it.",
        )
    return dict(read_lock(path).servers)


def _pick(entries: Mapping[str, LockEntry], name: str | None, path: Path) -> tuple[str, LockEntry]:
    if name is None:
        if len(entries) == 1:
            ((only, entry),) = entries.items()
            return only, entry
        if DEFAULT_NAME not in entries:
            raise InputError(f"{path} holds several servers; say which with --name")
        name = DEFAULT_NAME
    found = entries.get(name)
    if found is None:
        raise InputError(f"{path} has no server named {visible(name)!r}", advice="Check --name.")
    return name, found


def write(path: Path, target: Target, name: str | None = None) -> Written:
    """List the server and write its baseline entry (other entries are kept), atomically
    and under the lock's cross-process mutex."""
    from toolpin.lockfile.native import render_lock
    from toolpin.team.lock import _mutex  # the one mutex for a lock file's writers

    if name is not None:
        _check_name(name)
    snapshot = observe(target)
    extra = {PROBED_WITH: {"clientCapabilities": list(CLIENT_CAPABILITIES)}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LockfileError(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    with _mutex(path):
        before, entries = _previous(path)
        if name is None:
            name = next(iter(entries)) if len(entries) == 1 else DEFAULT_NAME
        entries[name] = LockEntry(snapshot=snapshot, extra=extra)
        changed = before != render_lock(entries)
        if changed:
            write_lock(path, entries)
    return Written(name, path, snapshot, changed, created=before is None)


def _previous(path: Path) -> tuple[bytes | None, dict[str, LockEntry]]:
    """The baseline's bytes and entries (none when there is no file or it no longer
    verifies: it is then written anew from what was observed)."""
    from toolpin.util.fs import read_input

    if not path.exists():
        return None, {}
    data = read_input(path, error=LockfileError)
    try:
        return data, dict(read_lock(path, data=data).servers)
    except LockfileError:
        return data, {}


def _check_name(name: str) -> None:
    if not name or len(name) > 128 or not name.isprintable() or name.strip() != name:
        raise InputError("--name must be 1 to 128 printable characters")


def check(path: Path, target: Target, name: str | None = None) -> Checked:
    """Compare the live server with its baseline entry."""
    chosen, entry = _pick(_entries(path), name, path)
    observed = observe(target, recorded_capabilities(entry))
    return Checked(chosen, path, compare(entry.snapshot, observed), observed)
