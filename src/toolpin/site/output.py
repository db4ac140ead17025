"""Incremental, atomic writes of a built site.

:class:`SiteWriter` writes a file only when its bytes differ from what is there (so an
unchanged rebuild touches no file), each one atomically (:func:`toolpin.util.fs.
atomic_write`). Paths are checked to stay inside the output folder. A manifest
(``.toolpin-site``) lists what the last build wrote; files it listed that this build no
longer writes are removed, and nothing else in the folder is ever deleted.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Final

from toolpin.errors import InputError
from toolpin.util.fs import atomic_write

MANIFEST: Final = ".toolpin-site"
_SAFE_PART: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")

__all__ = ["MANIFEST", "SiteWriter"]


class SiteWriter:
    """Writes the files of one build into ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths: set[str] = set()
        self.written = 0
        self.unchanged = 0
        self._dirs: set[Path] = set()

    def _target(self, rel: str) -> Path:
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or any(not _SAFE_PART.fullmatch(p) for p in parts):
            raise InputError(f"internal error: unsafe site path {rel!r}")
        return self.root.joinpath(*parts)

    def write(self, rel: str, data: bytes) -> None:
        """Write ``data`` at ``rel`` unless the file already holds exactly these bytes."""
        if rel in self.paths:
            raise InputError(f"internal error: {rel} written twice")
        target = self._target(rel)
        self.paths.add(rel)
        try:
            if target.stat().st_size == len(data) and target.read_bytes() == data:
                self.unchanged += 1
                return
        except FileNotFoundError:
            pass
        parent = target.parent
        if parent not in self._dirs:
            parent.mkdir(parents=True, exist_ok=True)
            self._dirs.add(parent)
        atomic_write(target, data)
        self.written += 1

    def text(self, rel: str, text: str) -> None:
        self.write(rel, text.encode("utf-8"))

    def finish(self) -> int:
        """Remove what the previous build wrote and this one did not; write the manifest.

        Returns how many stale files were removed.
        """
        manifest = self.root / MANIFEST
        old: set[str] = set()
        try:
            old = set(manifest.read_text(encoding="utf-8").split("\n")) - {""}
        except FileNotFoundError:
            pass
        except (OSError, UnicodeDecodeError):
            raise InputError(f"{manifest} cannot be read; remove it to rebuild") from None
        removed = 0
        for rel in sorted(old - self.paths):
            try:
                target = self._target(rel)
            except InputError:
                continue  # never delete outside the folder, whatever the manifest says
            if target.is_file():
                target.unlink()
                removed += 1
        data = ("\n".join(sorted(self.paths)) + "\n").encode("utf-8")
        try:
            same = manifest.read_bytes() == data
        except FileNotFoundError:
            same = False
        if not same:
            atomic_write(manifest, data)
        return removed
