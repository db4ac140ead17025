"""What a verified log says about each server: its observations and the changes between them.

Built from the entries a verified checkpoint covers (:mod:`toolpin.lookup.source` runs the
audit first), read from the same immutable files the audit checked. Only the closed
vocabulary is kept: ids, names reduced by :func:`~toolpin.lookup.vocab.safe_name`, ISO
times, hex digests and counts. The label keys of a change come from comparing the two
observations' definitions (their blobs, whose digests the audit checked and whose
hashes must equal the record's) with the same fixed rules as ``toolpin review``; the
definitions themselves are never kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from toolpin.errors import ToolpinError
from toolpin.lookup.vocab import (
    HEX16,
    hex_or_none,
    label_keys,
    safe_name,
    time_or_none,
)

RECORD_TYPE: Final = "toolpin/observation"
RECORD_VERSION: Final = 1
DIGEST_KEYS: Final = ("surface", "tools", "prompts", "resources", "resourceTemplates")
MAX_ITEMS: Final = 50
"""Changed definitions listed per change (the count is always complete)."""


@dataclass(frozen=True)
class Observation:
    """One logged observation of a server, in closed vocabulary."""

    index: int
    server_id: str
    name: str
    package: str | None
    url_host: str | None
    observed_at: str
    digests: dict[str, str | None]
    counts: dict[str, int]
    blob: str | None

    @property
    def surface(self) -> str:
        surface = self.digests["surface"]
        assert surface is not None
        return surface


@dataclass
class ServerHistory:
    """Every observation of one server, oldest first."""

    server_id: str
    observations: list[Observation] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.observations[-1].name

    @property
    def package(self) -> str | None:
        return self.observations[-1].package

    def changes(self) -> list[tuple[Observation, Observation]]:
        """Consecutive pairs whose surface differs: (before, after)."""
        obs = self.observations
        return [(a, b) for a, b in itertools.pairwise(obs) if a.surface != b.surface]


def read_observation(index: int, value: Any) -> Observation | None:
    """The closed-vocabulary view of a decoded entry; ``None`` if it is not an observation
    record of a shape we read (other entries are skipped, never guessed at)."""
    if not isinstance(value, dict):
        return None
    if value.get("type") != RECORD_TYPE or value.get("v") != RECORD_VERSION:
        return None
    server, digests = value.get("server"), value.get("digests")
    if not isinstance(server, dict) or not isinstance(digests, dict):
        return None
    server_id = hex_or_none(server.get("id"), HEX16)
    observed_at = time_or_none(value.get("observedAt"))
    surface = hex_or_none(digests.get("surface"))
    if server_id is None or observed_at is None or surface is None:
        return None
    package = None
    raw_package = server.get("package")
    if isinstance(raw_package, dict) and isinstance(raw_package.get("name"), str):
        eco = safe_name(raw_package.get("ecosystem"))
        package = safe_name(f"{eco}:{raw_package['name']}")
    url_host = None
    raw_url = server.get("url")
    if isinstance(raw_url, str):
        url_host = safe_name(_host_of(raw_url))
    counts_raw = value.get("counts")
    counts = {}
    if isinstance(counts_raw, dict):
        counts = {
            k: v
            for k, v in counts_raw.items()
            if k in DIGEST_KEYS and type(v) is int and 0 <= v < 1 << 31
        }
    blob = value.get("blob")
    return Observation(
        index=index,
        server_id=server_id,
        name=safe_name(server.get("name")),
        package=package,
        url_host=url_host,
        observed_at=observed_at,
        digests={k: hex_or_none(digests.get(k)) for k in DIGEST_KEYS},
        counts=counts,
        blob=blob if isinstance(blob, str) else None,
    )


def _host_of(url: str) -> str:
    rest = url.split("://", 1)[-1]
    return rest.split("/", 1)[0].rsplit("@", 1)[-1]


def index_servers(entries: Iterator[tuple[int, Any]]) -> dict[str, ServerHistory]:
    """Group observations by server id (entries in log order)."""
    servers: dict[str, ServerHistory] = {}
    for index, value in entries:
        obs = read_observation(index, value)
        if obs is None:
            continue
        servers.setdefault(obs.server_id, ServerHistory(obs.server_id)).observations.append(obs)
    return servers


@dataclass(frozen=True)
class ChangeLabels:
    """What changed between two observations: label keys and the changed items."""

    labels: list[str]
    items: list[dict[str, Any]]
    item_count: int
    verified: bool
    """False when a blob was absent or did not match its record (no labels then)."""


BlobReader = Callable[[str], bytes]


class ChangeLabeller:
    """Label keys of changes, from the blobs of a verified log (cached per pair)."""

    def __init__(self, root: Path, read_blob: BlobReader) -> None:
        self.root = root
        self._read_blob = read_blob
        self._cache: dict[tuple[int, int], ChangeLabels] = {}

    def _snapshot(self, obs: Observation) -> Any:
        from toolpin.core.canonical import parse_json
        from toolpin.lockfile.native import entry_from_json

        if obs.blob is None:
            return None
        try:
            raw = parse_json(self._read_blob(obs.blob))
            entry = entry_from_json(raw, path=self.root, name=obs.server_id)
        except (ToolpinError, ValueError):
            return None
        snapshot = entry.snapshot
        return snapshot if snapshot.surface_hash() == obs.surface else None

    def labels(self, before: Observation, after: Observation) -> ChangeLabels:
        key = (before.index, after.index)
        if key not in self._cache:
            self._cache[key] = self._compute(before, after)
        return self._cache[key]

    def _compute(self, before: Observation, after: Observation) -> ChangeLabels:
        from toolpin.core.drift import compare

        old, new = self._snapshot(before), self._snapshot(after)
        if old is None or new is None:
            return ChangeLabels([], [], 0, verified=False)
        drift = compare(old, new)
        items: list[dict[str, Any]] = []
        keys: list[str] = []
        for change in drift.changes:
            keys += change.label_keys
            items.append(
                {
                    "kind": change.kind.value,
                    "name": safe_name(change.key),
                    "status": change.status,
                    "labels": label_keys(change.label_keys),
                }
            )
        if drift.instructions is not None:
            inst = [x.key for x in drift.instructions.labels]
            keys += inst
            items.append(
                {
                    "kind": "instructions",
                    "name": "instructions",
                    "status": "changed",
                    "labels": label_keys(inst),
                }
            )
        if drift.identity.name_changed:
            keys.append("server-name")
            items.append(
                {
                    "kind": "server",
                    "name": "server-name",
                    "status": "changed",
                    "labels": ["server-name"],
                }
            )
        return ChangeLabels(label_keys(keys), items[:MAX_ITEMS], len(items), verified=True)
