"""Work kept between builds of a site: each change's explanation and HTML, by leaf hash.

Comparing two versions, explaining the change and building its HTML is most of a build's
work, and an entry never changes once logged, so a build keeps what it made and the next
one redoes only new entries. The cache lives outside the published folder (toolpin's data
folder, one per log directory), as JSON in 256 shards by the first two hex digits of the
server id (a worker process owns whole shards, so no two write one file). Each item is
reused only when the entry's leaf hash and its previous entry's leaf hash are the same
(for a pair of versions: both leaf hashes), and a whole cache made by other code (another
toolpin version, changed templates) is ignored. A shard that cannot be read is rebuilt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import orjson

__all__ = ["FORMAT", "WorkCache", "shard_of"]

FORMAT: Final = 1


def shard_of(server_id: str) -> str:
    return server_id[:2]


def _read(path: Path) -> Any:
    """A shard's document, or ``None`` when it cannot be read (then it is rebuilt)."""
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


class WorkCache:
    """The cached work of the servers of some shards (see the module doc)."""

    def __init__(self, folder: Path | None, code: str) -> None:
        self.folder = folder
        self.code = code
        self._shards: dict[str, dict[str, Any]] = {}
        self._dirty: set[str] = set()

    def _shard(self, key: str) -> dict[str, Any]:
        found = self._shards.get(key)
        if found is not None:
            return found
        servers: dict[str, Any] = {}
        if self.folder is not None:
            doc = _read(self.folder / f"{key}.json")
            if (
                isinstance(doc, dict)
                and doc.get("v") == FORMAT
                and doc.get("code") == self.code
                and isinstance(doc.get("servers"), dict)
            ):
                servers = doc["servers"]
        self._shards[key] = servers
        return servers

    def get(self, server_id: str) -> dict[str, Any]:
        """The cached work of one server (empty when there is none)."""
        found = self._shard(shard_of(server_id)).get(server_id)
        return found if isinstance(found, dict) else {}

    def put(self, server_id: str, record: dict[str, Any]) -> None:
        shard = shard_of(server_id)
        servers = self._shard(shard)
        if servers.get(server_id) != record:
            servers[server_id] = record
            self._dirty.add(shard)

    def flush(self) -> None:
        """Write the shards that changed (atomically; a cache is never half written)."""
        if self.folder is None or not self._dirty:
            return
        from toolpin.util.fs import atomic_write, ensure_private_dir

        ensure_private_dir(self.folder)
        for key in sorted(self._dirty):
            doc = {"v": FORMAT, "code": self.code, "servers": self._shards[key]}
            try:
                data = orjson.dumps(doc)
            except TypeError:  # orjson.JSONEncodeError: a lone surrogate in kept HTML
                data = json.dumps(doc, separators=(",", ":")).encode("ascii")
            atomic_write(self.folder / f"{key}.json", data, sync=False)
        self._dirty.clear()
