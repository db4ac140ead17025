"""Incremental, atomic writes of a built site.

:class:`SiteWriter` writes a file only when its bytes differ from what is there, each one
atomically (:func:`toolpin.util.fs.atomic_write`; without fsync: the site is rebuilt from
the log, never the only copy of anything). Paths are checked to stay inside the output
folder.

A manifest (``.toolpin-site``) records the digest of the build's inputs and the size and
modification time of every file the build wrote. A build whose inputs are unchanged and
whose files are all still as recorded touches nothing (:meth:`SiteWriter.up_to_date`);
otherwise every file is produced again and compared. Files the previous build listed that
this one no longer writes are removed; nothing else in the folder is ever deleted.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Final

from toolpin.errors import InputError
from toolpin.util.fs import atomic_write

MANIFEST: Final = ".toolpin-site"
_HEADER: Final = "toolpin-site 1 "
_SAFE_PART: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")

__all__ = ["MANIFEST", "SiteWriter"]


class SiteWriter:
    """Writes the files of one build into ``root``."""

    def __init__(self, root: Path, *, manifest: bool = True) -> None:
        self.root = root
        self.paths: set[str] = set()
        self.written = 0
        self.unchanged = 0
        self._dirs: set[Path] = set()
        self._previous: dict[str, tuple[int, int]] = {}
        self._previous_inputs: str | None = None
        if manifest:
            self._read_manifest()

    def _read_manifest(self) -> None:
        manifest = self.root / MANIFEST
        try:
            text = manifest.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError):
            raise InputError(f"{manifest} cannot be read; remove it to rebuild") from None
        lines = text.split("\n")
        if not lines or not lines[0].startswith(_HEADER):
            raise InputError(f"{manifest} is not a toolpin site manifest; remove it to rebuild")
        self._previous_inputs = lines[0].removeprefix(_HEADER)
        for line in lines[1:]:
            parts = line.split("\t")
            if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                self._previous[parts[0]] = (int(parts[1]), int(parts[2]))

    def _target(self, rel: str) -> Path:
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or any(not _SAFE_PART.fullmatch(p) for p in parts):
            raise InputError(f"internal error: unsafe site path {rel!r}")
        return self.root.joinpath(*parts)

    def up_to_date(self, inputs: str) -> bool:
        """True when the last build had these inputs and its files are all as it left them."""
        if self._previous_inputs != inputs or not self._previous:
            return False
        for rel, (size, mtime) in self._previous.items():
            try:
                info = self._target(rel).stat()
            except (OSError, InputError):
                return False
            if (info.st_size, info.st_mtime_ns) != (size, mtime):
                return False
        self.paths = set(self._previous)
        self.unchanged = len(self.paths)
        return True

    def _claim(self, rel: str) -> Path:
        if rel in self.paths:
            raise InputError(f"internal error: {rel} written twice")
        self.paths.add(rel)
        target = self._target(rel)
        parent = target.parent
        if parent not in self._dirs:
            parent.mkdir(parents=True, exist_ok=True)
            self._dirs.add(parent)
        return target

    def write(self, rel: str, data: bytes) -> None:
        """Write ``data`` at ``rel`` unless the file already holds exactly these bytes."""
        target = self._claim(rel)
        try:
            if target.stat().st_size == len(data) and target.read_bytes() == data:
                self.unchanged += 1
                return
        except FileNotFoundError:
            pass
        atomic_write(target, data, sync=False)
        self.written += 1

    def merge(self, paths: set[str], written: int, unchanged: int) -> None:
        """Account for files another process wrote for this build."""
        clash = self.paths & paths
        if clash:
            raise InputError(f"internal error: {min(clash)} written twice")
        self.paths |= paths
        self.written += written
        self.unchanged += unchanged

    def text(self, rel: str, text: str) -> None:
        self.write(rel, text.encode("utf-8"))

    def finish(self, inputs: str) -> int:
        """Remove what the previous build wrote and this one did not; write the manifest.

        Returns how many stale files were removed.
        """
        removed = 0
        for rel in sorted(set(self._previous) - self.paths):
            try:
                target = self._target(rel)
            except InputError:
                continue  # never delete outside the folder, whatever the manifest says
            if target.is_file():
                target.unlink()
                removed += 1
        lines = [_HEADER + inputs]
        for rel in sorted(self.paths):
            info = self._target(rel).stat()
            lines.append(f"{rel}\t{info.st_size}\t{info.st_mtime_ns}")
        data = ("\n".join(lines) + "\n").encode("utf-8")
        manifest = self.root / MANIFEST
        try:
            same = manifest.read_bytes() == data
        except FileNotFoundError:
            same = False
        if not same:
            atomic_write(manifest, data, sync=False)
        return removed


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
