"""Helpers of the lookup tests: real signed logs of observation records, real pin stores."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolpin.core.snapshot import Snapshot, snapshot_from_export
from toolpin.crawl.candidates import Candidate, PackageCoords
from toolpin.crawl.record import Observation, definitions_blob, observation_record
from toolpin.publog.blobs import BlobStore
from toolpin.publog.entries import encode_entry
from toolpin.publog.note import Signer
from toolpin.publog.tiles import TileLog

ORIGIN = "log.example/toolpin-lookup-test"


def signer(label: str = "one", origin: str = ORIGIN) -> Signer:
    return Signer.from_seed(origin, hashlib.sha256(label.encode()).digest())


def tool(name: str, description: str = "Does a thing.", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": extra.pop("properties", {})},
        **extra,
    }


def snapshot(tools: Sequence[dict[str, Any]], instructions: str | None = None) -> Snapshot:
    doc: dict[str, Any] = {"tools": list(tools)}
    if instructions is not None:
        doc = {
            "result": {"instructions": instructions, "serverInfo": {"name": "s", "version": "1"}}
        }
        return snapshot_from_export([doc, {"tools": list(tools)}], paged=True).snapshot
    return snapshot_from_export(doc).snapshot


def server_id_of(name: str) -> str:
    return hashlib.sha256(f"registry:{name}".encode()).hexdigest()[:16]


@dataclass
class LogBuilder:
    """Append observation records (with their definitions blobs) to a real tlog-tiles log."""

    root: Path
    signer: Signer
    previous: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.log = TileLog.open(self.root)

    @property
    def vkey(self) -> str:
        return self.signer.verifier.text

    def observe(
        self,
        name: str,
        tools: Sequence[dict[str, Any]],
        at: str,
        *,
        package: str | None = None,
        url: str | None = None,
        server_id: str | None = None,
    ) -> int:
        snap = snapshot(tools)
        sid = server_id or server_id_of(name)
        candidate = Candidate(
            id=sid,
            name=name,
            source="registry",
            transport="streamable-http" if url else "stdio",
            url=url,
            package=PackageCoords("npm", package, "1.0.0") if package else None,
        )
        obs = Observation(
            snapshot=snap, era="modern", protocol_version="2026-07-28", observed_at=at
        )
        blob = BlobStore(self.root).put(definitions_blob(snap))
        record = observation_record(candidate, obs, previous=self.previous.get(sid), blob=blob)
        index = self.log.size
        self.log.append([encode_entry(record)], self.signer)
        self.previous[sid] = index
        return index

    def log_record(self, index: int) -> dict[str, Any]:
        from toolpin.publog.entries import decode_entry

        return decode_entry(self.log.read_entry(index))

    def append_raw(self, record: dict[str, Any]) -> int:
        index = self.log.size
        self.log.append([encode_entry(record)], self.signer)
        return index
