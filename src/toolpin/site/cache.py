"""Work kept between builds of a site: each change's explanation and HTML, by leaf hash.

Comparing two versions, explaining the change and building its HTML is most of a build's
work, and an entry never changes once logged, so a build keeps what it made and the next
one redoes only new entries. The cache lives outside the published folder (toolpin's data
folder, one per log directory), as JSON, in two parts:

* ``summary/<2 hex>.json``, 256 shards by the first two hex digits of the server id: per
  server, each change's summary and the reports' explanation of it (no HTML). This is
  what the whole-log pages and the reports need of every server, so a build reads all of
  it; it is small (about 200 bytes a change);
* ``work/<2 hex>/<server id>.json``, one file per server: each change's HTML, the diff
  pages' HTML and the current definitions. Only a server whose files are built again
  reads (and, when it changed, writes) its own file, so a daily build that changes 1,000
  of 20,000 servers reads and writes 1,000 of these, not the whole cache.

A worker process owns whole shards (and their servers), so no two write one file. Each
item is reused only when the entry's leaf hash and its previous entry's leaf hash are the
same (for a pair of versions: both leaf hashes), and a whole cache made by other code
(another toolpin version, changed templates) is ignored. A file that cannot be read is
rebuilt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import orjson

__all__ = ["FORMAT", "WorkCache", "shard_of"]

FORMAT: Final = 2


def shard_of(server_id: str) -> str:
    return server_id[:2]


def _read(path: Path) -> Any:
    """A file's document, or ``None`` when it cannot be read (then it is rebuilt)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return orjson.loads(data)
    except ValueError:  # orjson.JSONDecodeError; also a lone surrogate it will not read
        pass
    try:
        return json.loads(data)
    except ValueError:
        return None


def _dumps(doc: Any) -> bytes:
    try:
        return orjson.dumps(doc)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate in kept HTML
        return json.dumps(doc, separators=(",", ":")).encode("ascii")


class WorkCache:
    """The cached work of the servers of some shards (see the module doc)."""

    def __init__(self, folder: Path | None, code: str) -> None:
        self.folder = folder
        self.code = code
        self._shards: dict[str, dict[str, Any]] = {}
        self._dirty: set[str] = set()
        self._work: dict[str, dict[str, Any]] = {}

    def _ours(self, doc: Any, member: str) -> Any:
        if (
            isinstance(doc, dict)
            and doc.get("v") == FORMAT
            and doc.get("code") == self.code
            and isinstance(doc.get(member), dict)
        ):
            return doc[member]
        return {}

    def _shard(self, key: str) -> dict[str, Any]:
        found = self._shards.get(key)
        if found is not None:
            return found
        servers: dict[str, Any] = {}
        if self.folder is not None:
            servers = self._ours(_read(self.folder / "summary" / f"{key}.json"), "servers")
        self._shards[key] = servers
        return servers

    def summary(self, server_id: str) -> dict[str, Any]:
        """One server's kept change summaries (``{index: item}``; empty when none)."""
        found = self._shard(shard_of(server_id)).get(server_id)
        return found if isinstance(found, dict) else {}

    def forget(self) -> None:
        """Drop the shards read so far (only when none was changed since its last flush)."""
        if self._dirty:
            raise RuntimeError("internal error: unwritten cache shards")
        self._shards.clear()

    def put_summary(self, server_id: str, record: dict[str, Any]) -> None:
        shard = shard_of(server_id)
        servers = self._shard(shard)
        if servers.get(server_id) != record:
            servers[server_id] = record
            self._dirty.add(shard)

    def _work_path(self, server_id: str) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / "work" / shard_of(server_id) / f"{server_id}.json"

    def get(self, server_id: str) -> dict[str, Any]:
        """The cached page work of one server (empty when there is none)."""
        path = self._work_path(server_id)
        if path is None:
            return {}
        found = self._ours(_read(path), "work")
        return found if isinstance(found, dict) else {}

    def put(self, server_id: str, record: dict[str, Any], kept: dict[str, Any]) -> None:
        """Keep ``record``, one server's page work (``kept``: what :meth:`get` gave; an
        unchanged record is not written again)."""
        if record != kept:
            self._work[server_id] = record

    def flush(self) -> None:
        """Write what changed (atomically; a cache file is never half written)."""
        if self.folder is None or not (self._dirty or self._work):
            return
        from toolpin.util.fs import atomic_write, ensure_private_dir

        ensure_private_dir(self.folder)
        if self._dirty:
            ensure_private_dir(self.folder / "summary")
        for key in sorted(self._dirty):
            doc = {"v": FORMAT, "code": self.code, "servers": self._shards[key]}
            atomic_write(self.folder / "summary" / f"{key}.json", _dumps(doc), sync=False)
        made: set[Path] = set()
        for sid in sorted(self._work):
            path = self._work_path(sid)
            assert path is not None
            if path.parent not in made:
                ensure_private_dir(path.parent)
                made.add(path.parent)
            doc = {"v": FORMAT, "code": self.code, "work": self._work[sid]}
            atomic_write(path, _dumps(doc), sync=False)
        self._dirty.clear()
        self._work.clear()
