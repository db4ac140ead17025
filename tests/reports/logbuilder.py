"""Write small public logs the way the crawler does: one observation record per change,
the definitions in a blob, batches under one signed checkpoint each."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolpin.core.snapshot import Kind, Listing, Snapshot
from toolpin.crawl.candidates import Candidate
from toolpin.crawl.record import Observation, definitions_blob, observation_record
from toolpin.publog.blobs import BlobStore
from toolpin.publog.entries import encode_entry
from toolpin.publog.note import Signer
from toolpin.publog.tiles import TileLog

ORIGIN = "log.example/toolpin-reports"


def signer(label: str = "one") -> Signer:
    return Signer.from_seed(ORIGIN, hashlib.sha256(label.encode()).digest())


def tools(**descriptions: str) -> Snapshot:
    """A snapshot whose tools are ``name=description`` (schema: one string field ``q``)."""
    items = [
        {
            "name": name,
            "description": text,
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
        for name, text in descriptions.items()
    ]
    return Snapshot(tools=Listing.parse(Kind.TOOL, items))


def with_field(snapshot: Snapshot, tool: str, field_name: str) -> Snapshot:
    """``snapshot`` with a new input field on one tool (description unchanged)."""
    assert snapshot.tools is not None
    items: list[Any] = []
    for d in snapshot.tools.items:
        value = dict(d.value)
        if d.key == tool:
            schema = dict(value["inputSchema"])  # type: ignore[arg-type]
            props = dict(schema["properties"])
            props[field_name] = {"type": "string"}
            schema["properties"] = props
            value["inputSchema"] = schema
        items.append(value)
    return Snapshot(tools=Listing.parse(Kind.TOOL, items))


@dataclass
class LogBuilder:
    path: Path
    key: Signer = field(default_factory=signer)
    _last: dict[str, tuple[int, str]] = field(default_factory=dict)
    _size: int = 0

    def __post_init__(self) -> None:
        self.log = TileLog.open(self.path)
        self.blobs = BlobStore(self.path)

    @property
    def vkey(self) -> str:
        return self.key.verifier.text

    def batch(self, *observations: tuple[str, str, Snapshot, str]) -> int:
        """Append ``(server id, name, snapshot, observedAt)`` records; returns the new size."""
        entries = []
        for server_id, name, snap, when in observations:
            ref = self.blobs.put(definitions_blob(snap))
            cand = Candidate(id=server_id, name=name, source="registry", transport="stdio")
            obs = Observation(snap, "handshake", "2025-06-18", when)
            last = self._last.get(server_id)
            record = observation_record(
                cand,
                obs,
                previous=last[0] if last else None,
                blob=ref,
                previous_look=last[1] if last else None,
            )
            entries.append(encode_entry(record))
            self._last[server_id] = (self._size + len(entries) - 1, when)
        self._size = self.log.append(entries, self.key).size
        return self._size

    def look(self, server_id: str, when: str) -> None:
        """A crawl look that found nothing new (not logged; moves the next window)."""
        index, _ = self._last[server_id]
        self._last[server_id] = (index, when)

    def checkpoint_text(self) -> str:
        return (self.path / "checkpoint").read_text(encoding="utf-8")
