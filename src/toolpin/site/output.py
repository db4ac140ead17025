"""Incremental, atomic writes of a built site.

:class:`SiteWriter` writes a file only when its bytes differ from what is there, each one
atomically (:func:`toolpin.util.fs.atomic_write`; without fsync: the site is rebuilt from
the log, never the only copy of anything). Paths are checked to stay inside the output
folder.

The build's own state is never published: it lives outside the output folder, in the
log's work cache (:func:`state_path`: ``<cache>/outputs/<16 hex>.manifest``, keyed by the
output folder's resolved path), and records the digest of the build's inputs and the size
and modification time of every file the build wrote. A build whose inputs are unchanged
and whose files are all still as recorded touches nothing (:meth:`SiteWriter.up_to_date`);
otherwise every file is produced again and compared, but for what cannot have changed:
a file that is immutable by the site's layout (a blob, a full tile, a proof of an earlier
checkpoint: :meth:`SiteWriter.keep`) and the files of a server whose inputs are the ones
the last build recorded for it (:meth:`SiteWriter.keep_group`) are kept when they are
still as recorded, and not produced at all. Files the previous build listed that
this one no longer writes are removed; nothing else in the folder is ever deleted. So the
published folder is a pure function of the log, ``--base-url`` and ``--now``: two builds
give ``diff -r``-identical folders. Without a cache no state is kept (every file is
compared, none removed). A manifest that older builds wrote into the folder
(``.toolpin-site``) is read once for its file list and removed; a file of that name that is
not one is left alone.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

from toolpin.errors import InputError
from toolpin.util.fs import atomic_write

MANIFEST: Final = ".toolpin-site"
"""The manifest older builds wrote into the published folder (now removed when found)."""
_HEADER: Final = "toolpin-site 1 "
_SAFE_PART: Final = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_SAFE_PATH: Final = re.compile(rf"(?:{_SAFE_PART}/)*{_SAFE_PART}")
"""A relative path whose every part is a safe name (no ``..``, no empty or hidden part)."""

__all__ = ["MANIFEST", "Previous", "SiteWriter", "state_path"]

Previous = tuple[dict[str, tuple[int, int]], dict[str, tuple[str, list[str]]], tuple[int, ...]]
"""What the last build recorded: every file's size and time, every server's group, and
the checkpoint sizes it had published."""


def state_path(cache: Path, out: Path) -> Path:
    """Where the build state of the site in ``out`` is kept, in the log's work cache."""
    import hashlib

    tag = hashlib.sha256(str(out.resolve()).encode("utf-8")).hexdigest()[:16]
    return cache / "outputs" / f"{tag}.manifest"


def as_recorded(path: str | Path, recorded: tuple[int, int]) -> bool:
    """Whether the file at ``path`` still has the size and modification time a build
    recorded for it (a missing or unreadable file has not)."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return (info.st_size, info.st_mtime_ns) == recorded


class SiteWriter:
    """Writes the files of one build into ``root``.

    ``fresh``: ``root`` is a new, empty folder only this build writes (the staging folder
    of a first build, renamed into place when the build is done), so files are created
    directly; otherwise each file is compared with what is there and replaced atomically
    when it differs. The size and modification time of every file is recorded as it is
    written or found unchanged, for the manifest.
    """

    def __init__(
        self,
        root: Path,
        *,
        state: Path | None = None,
        manifest: bool = True,
        fresh: bool = False,
        previous: Previous | None = None,
    ) -> None:
        self.root = root
        self.state = state
        """The build state file (outside ``root``); ``None``: nothing is kept."""
        self.fresh = fresh
        self._legacy = False  # an old manifest inside ``root``, removed by finish()
        self.stats: dict[str, tuple[int, int]] = {}
        self.written = 0
        self.unchanged = 0
        self._dirs: set[str] = set()
        self._previous: dict[str, tuple[int, int]] = {}
        self._previous_inputs: str | None = None
        self._previous_groups: dict[str, tuple[str, list[str]]] = {}
        self.previous_history: tuple[int, ...] = ()
        """The checkpoint sizes the last build recorded (:mod:`toolpin.site.history`)."""
        self.groups: dict[str, tuple[str, list[str]]] = {}
        """``{server id: (inputs key, files)}`` of this build (:meth:`keep_group`)."""
        self.history: tuple[int, ...] = ()
        self.counts: tuple[int, int] = (0, 0)
        """The servers shown and opted out (kept for an unchanged rebuild's result)."""
        self.previous_counts: tuple[int, int] = (0, 0)
        self._group: list[str] | None = None
        self._tmp = f".{os.getpid()}.tmp"
        self._prefix = os.path.join(root, "")
        if manifest:
            self._read_manifest()
        if previous is not None:
            self._previous, self._previous_groups, self.previous_history = previous

    @property
    def paths(self) -> set[str]:
        return set(self.stats)

    def _read_manifest(self) -> None:
        legacy = self.root / MANIFEST
        self._legacy = _is_manifest(legacy)
        if self.state is not None and os.path.lexists(self.state):
            self._parse(self.state)
        elif self._legacy:
            self._parse(legacy)

    def _parse(self, manifest: Path) -> None:
        try:
            text = manifest.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            raise InputError(f"{manifest} cannot be read; remove it to rebuild") from None
        lines = text.split("\n")
        if not lines or not lines[0].startswith(_HEADER):
            raise InputError(f"{manifest} is not a toolpin site manifest; remove it to rebuild")
        self._previous_inputs = lines[0].removeprefix(_HEADER)
        for line in lines[1:]:
            parts = line.split("\t")
            if line.startswith("@"):
                if parts[0] == "@server" and len(parts) == 4:
                    self._previous_groups[parts[1]] = (parts[2], parts[3].split(" "))
                elif parts[0] == "@counts" and len(parts) == 3:
                    if parts[1].isdigit() and parts[2].isdigit():
                        self.previous_counts = (int(parts[1]), int(parts[2]))
                elif parts[0] == "@history" and len(parts) == 2:
                    sizes = parts[1].split(" ")
                    if all(n.isdigit() for n in sizes):
                        self.previous_history = tuple(map(int, sizes))
                continue
            if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                self._previous[parts[0]] = (int(parts[1]), int(parts[2]))

    def _target(self, rel: str) -> str:
        if not _SAFE_PATH.fullmatch(rel):
            raise InputError(f"internal error: unsafe site path {rel!r}")
        return self._prefix + rel

    def _still(self, rel: str, recorded: tuple[int, int]) -> bool:
        """Whether the recorded file ``rel`` is a safe path of this folder whose file still
        has the recorded size and time (a path the state should never hold is not)."""
        return _SAFE_PATH.fullmatch(rel) is not None and as_recorded(self._prefix + rel, recorded)

    def up_to_date(self, inputs: str) -> bool:
        """True when the last build had these inputs and its files are all as it left them."""
        if self._previous_inputs != inputs or not self._previous:
            return False
        if not all(self._still(rel, recorded) for rel, recorded in self._previous.items()):
            return False
        self.stats = dict(self._previous)
        self.unchanged = len(self.stats)
        return True

    @property
    def previous(self) -> Previous:
        """What the last build recorded (for another process's writer of this build)."""
        return self._previous, self._previous_groups, self.previous_history

    def keep(self, rel: str) -> bool:
        """Count the file at ``rel`` as this build's, unchanged, when the last build
        recorded it and it is still as recorded (size and time): for a file whose bytes
        cannot differ (a blob, a full tile, a proof of a checkpoint the last build had
        published). False, and nothing counted, otherwise (then write it)."""
        recorded = self._previous.get(rel)
        if recorded is None or rel in self.stats or not as_recorded(self._target(rel), recorded):
            return False
        self.stats[rel] = recorded
        self.unchanged += 1
        if self._group is not None:
            self._group.append(rel)
        return True

    def recorded_key(self, name: str) -> str | None:
        """The inputs key the last build recorded for the group ``name`` (``None``: none)."""
        found = self._previous_groups.get(name)
        return None if found is None else found[0]

    def keep_group(self, name: str, key: str) -> bool:
        """Keep every file of the group ``name`` (one server's) unchanged when the last
        build recorded the group with this inputs ``key`` and each file is still as
        recorded; False, and nothing kept, otherwise."""
        found = self._previous_groups.get(name)
        if found is None or found[0] != key:
            return False
        kept: dict[str, tuple[int, int]] = {}
        for rel in found[1]:
            recorded = self._previous.get(rel)
            if recorded is None or rel in self.stats or not self._still(rel, recorded):
                return False
            kept[rel] = recorded
        self.stats.update(kept)
        self.unchanged += len(kept)
        self.groups[name] = found
        return True

    def begin_group(self) -> None:
        """Collect the files written from now on (but blobs, which have no owner after
        the first build) into a group, until :meth:`end_group`."""
        self._group = []

    def end_group(self, name: str, key: str | None) -> None:
        """Record the group's files with their inputs ``key`` (``None``: record nothing,
        the group was kept whole by :meth:`keep_group`)."""
        if self._group is not None and key is not None:
            self.groups[name] = (key, self._group)
        self._group = None

    def _claim(self, rel: str) -> str:
        if rel in self.stats:
            raise InputError(f"internal error: {rel} written twice")
        target = self._target(rel)
        if self._group is not None and not rel.startswith("blob/"):
            self._group.append(rel)
        parent = os.path.dirname(target)
        if parent not in self._dirs:
            try:
                os.mkdir(parent)  # the common case: its parent exists
            except FileExistsError:
                if not os.path.isdir(parent):
                    raise
            except FileNotFoundError:
                os.makedirs(parent, exist_ok=True)
                above = os.path.dirname(parent)  # made too (servers/<id> of .../diff)
                while len(above) >= len(self._prefix) and above not in self._dirs:
                    self._dirs.add(above)
                    above = os.path.dirname(above)
            self._dirs.add(parent)
        return target

    def write(self, rel: str, data: bytes) -> None:
        """Write ``data`` at ``rel`` unless the file already holds exactly these bytes."""
        target = self._claim(rel)
        if self.fresh:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                _write_all(fd, data)
                info = os.fstat(fd)
            finally:
                os.close(fd)
            self.stats[rel] = (info.st_size, info.st_mtime_ns)
            self.written += 1
            return
        try:
            found = os.stat(target)
            if found.st_size == len(data):
                with open(target, "rb") as handle:
                    same = handle.read() == data
                if same:
                    self.stats[rel] = (found.st_size, found.st_mtime_ns)
                    self.unchanged += 1
                    return
        except FileNotFoundError:
            pass
        self.stats[rel] = _replace(target, target + self._tmp, data)
        self.written += 1

    def link(self, rel: str, source: str | Path, ref: str) -> bytes:
        """A new site's copy of the log's blob ``source`` (digest ``ref``): a hard link
        when the file system allows, else a copy; either way read back and checked (the
        bytes are returned)."""
        import hashlib

        if not self.fresh:
            raise InputError("internal error: links are only made in a new site")
        target = self._claim(rel)
        try:
            os.link(source, target)
        except OSError:
            self.write(rel, Path(source).read_bytes())
            del self.stats[rel]
            self.written -= 1
        with open(target, "rb", buffering=0) as handle:
            data = handle.readall()
            info = os.fstat(handle.fileno())
        if "sha256:" + hashlib.sha256(data).hexdigest() != ref:
            raise InputError(f"blob {ref} does not match its digest")
        self.stats[rel] = (info.st_size, info.st_mtime_ns)
        self.written += 1
        return data

    def merge(
        self,
        stats: Mapping[str, tuple[int, int]],
        written: int,
        unchanged: int,
        groups: Mapping[str, tuple[str, list[str]]] | None = None,
    ) -> None:
        """Account for files another process wrote for this build."""
        clash = self.stats.keys() & stats.keys()
        if clash:
            raise InputError(f"internal error: {min(clash)} written twice")
        self.stats.update(stats)
        if groups:
            self.groups.update(groups)
        self.written += written
        self.unchanged += unchanged

    def adopt(self, rels: Iterable[str], written: int, unchanged: int) -> None:
        """Account for files written for this build by code that writes on its own."""
        found: dict[str, tuple[int, int]] = {}
        for rel in rels:
            info = os.stat(self._target(rel))
            found[rel] = (info.st_size, info.st_mtime_ns)
        self.merge(found, written, unchanged)

    def text(self, rel: str, text: str) -> None:
        self.write(rel, text.encode("utf-8"))

    def finish(self, inputs: str) -> int:
        """Remove what the previous build wrote and this one did not (and an old manifest
        inside the folder); write the build state.

        Returns how many stale files were removed.
        """
        removed = 0
        for rel in sorted(self._previous.keys() - self.stats.keys()):
            try:
                target = self._target(rel)
            except InputError:
                continue  # never delete outside the folder, whatever the manifest says
            if os.path.isfile(target):
                os.unlink(target)
                removed += 1
        lines = [_HEADER + inputs]
        stats = self.stats  # (sorting the paths alone: twice as fast as sorting the pairs)
        lines.extend(f"{rel}\t{stats[rel][0]}\t{stats[rel][1]}" for rel in sorted(stats))
        lines.append(f"@counts\t{self.counts[0]}\t{self.counts[1]}")
        if self.history:
            lines.append("@history\t" + " ".join(map(str, self.history)))
        lines.extend(
            f"@server\t{name}\t{key}\t{' '.join(rels)}"
            for name, (key, rels) in sorted(self.groups.items())
            if rels
        )
        data = ("\n".join(lines) + "\n").encode("utf-8")
        if self.state is not None:
            try:
                same = self.state.read_bytes() == data
            except FileNotFoundError:
                same = False
            if not same:
                self.state.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(self.state, data, sync=False)
        if self._legacy:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.root / MANIFEST)
            self._legacy = False
        return removed


def _is_manifest(path: Path) -> bool:
    """Whether ``path`` is a manifest a toolpin build wrote (it starts with the header)."""
    if os.path.islink(path) or not os.path.isfile(path):  # never open a FIFO or follow a link
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_HEADER))
    except OSError:
        return False
    return head == _HEADER.encode("ascii")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _replace(target: str, tmp: str, data: bytes) -> tuple[int, int]:
    """Replace ``target`` with ``data`` through a temporary file beside it (a reader sees
    the old file or the new one, never a mixture); the new file's size and time."""
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:  # left by a build of this process id that was killed
        os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            _write_all(fd, data)
            info = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return info.st_size, info.st_mtime_ns


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` unless the file already holds exactly it (an unchanged rebuild
    touches no file); True when written."""
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)
    return True
