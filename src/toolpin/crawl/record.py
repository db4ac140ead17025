"""The observation record: one log entry per *change* of a server's surface.

An entry is the RFC 8785 form of::

    {
      "type": "toolpin/observation", "v": 1,
      "server": {"id", "name", "source", "transport", "url"?, "package"?},
      "change": "new" | "definitions" | "package",   # why this entry was made (optional)
      "observedAt": "2026-11-30T04:05:51Z",
      "protocol": {"era": "modern" | "handshake", "version": "2026-07-28" | null},
      "digests": {"surface", "tools", "prompts", "resources", "resourceTemplates",
                  "instructions"},            # hex SHA-256; null = unknown / no instructions
      "counts": {"tools": 3, ...},             # per listing observed (same names as digests)
      "serverInfo": {"name", "version"?}?,     # self-reported, display only
      "previous": 12 | null,                   # this server's previous entry (continuity)
      "previousLookAt": "2026-11-29T04:01:10Z"?,  # the last good look before this one
      "probeEnv": {"supplied": [...], "placeholders": [...]}?,   # variable names only
      "blob": "sha256:<hex>"                   # the full definitions (see below)
    }

``server.package`` is ``{"ecosystem", "name", "version"?, "digest"?, "files"?}``: the exact
release a package candidate was installed at, or the one a config entry (``npx``, ``uvx``,
``pipx run``, ``docker run image@sha256:...``) was resolved and pinned to; ``files`` is a
PyPI release's ``[{"filename", "sha256"}]``. ``change`` says why the entry exists: a server
seen for the first time, a changed surface (``definitions``), or the same surface served by
another release (``package``: version or digest changed, definitions did not). Entries
written before ``change`` existed have none and read as ``new`` / ``definitions``.

``digests.surface`` is :meth:`toolpin.core.snapshot.Snapshot.surface_hash`; the per-kind
digests are the hash spec's set hashes and the instructions hash. The blob holds the
canonical (RFC 8785) form of the lockfile entry of the whole snapshot
(:func:`toolpin.lockfile.entry_json`), so anyone can recompute every digest of the record
from it. ``previousLookAt`` (absent on a server's first entry and in older logs) is the last
good look that still saw the previous surface: the change happened in the window
``(previousLookAt, observedAt]``, which is how a change first seen after a crawl gap is
dated (see :mod:`toolpin.crawl.report`). Every string that came from elsewhere is
length-capped, so a record stays far below the 64 KiB entry limit whatever a server or
registry sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from toolpin.core.snapshot import KINDS, Snapshot
from toolpin.crawl.candidates import (
    MAX_NAME_CHARS,
    MAX_URL_CHARS,
    Candidate,
    PackageCoords,
    clip,
)

RECORD_TYPE: Final = "toolpin/observation"
RECORD_VERSION: Final = 1
MAX_INFO_CHARS: Final = 256
Change = Literal["new", "definitions", "package"]
CHANGES: Final = ("new", "definitions", "package")


@dataclass(frozen=True)
class Observation:
    """A successful look at one server."""

    snapshot: Snapshot
    era: str
    protocol_version: str | None
    observed_at: str
    supplied_env: tuple[str, ...] | None = None
    """Names of the variables the server was started with (stdio only; never values)."""
    placeholders: tuple[str, ...] = ()
    """Names of the variables given a placeholder value on the retry."""
    package: PackageCoords | None = None
    """The package as installed (exact version and digest), when one was."""

    @property
    def surface_hash(self) -> str:
        return self.snapshot.surface_hash()


def definitions_blob(snapshot: Snapshot) -> bytes:
    """The blob of a snapshot: RFC 8785 bytes of its lockfile entry form."""
    from toolpin.core.canonical import canonical_bytes, normalize
    from toolpin.lockfile.native import LockEntry, entry_json

    return canonical_bytes(normalize(entry_json(LockEntry(snapshot=snapshot))))


def observation_record(
    candidate: Candidate,
    observation: Observation,
    *,
    previous: int | None,
    blob: str,
    previous_look: str | None = None,
    change: Change | None = None,
) -> dict[str, Any]:
    """The record of ``observation`` (pass it to :func:`toolpin.publog.encode_entry`)."""
    snap = observation.snapshot
    server: dict[str, Any] = {
        "id": candidate.id,
        "name": clip(candidate.name, MAX_NAME_CHARS),
        "source": candidate.source,
        "transport": candidate.transport,
    }
    if candidate.public_url is not None:
        server["url"] = clip(candidate.public_url, MAX_URL_CHARS)
    package = observation.package or candidate.package
    if package is not None:
        server["package"] = {
            k: clip(v, MAX_NAME_CHARS) if isinstance(v, str) else v
            for k, v in package.to_json().items()
        }
        if "files" in server["package"]:
            server["package"]["files"] = [
                {"filename": clip(f["filename"], MAX_NAME_CHARS), "sha256": f["sha256"]}
                for f in server["package"]["files"]
            ]
    digests: dict[str, str | None] = {"surface": snap.surface_hash()}
    for kind in KINDS:
        listing = snap.listing(kind)
        digests[kind.list_member] = listing.set_hash if listing is not None else None
    digests["instructions"] = snap.instructions_hash
    record: dict[str, Any] = {
        "type": RECORD_TYPE,
        "v": RECORD_VERSION,
        "server": server,
        **({"change": change} if change is not None else {}),
        "observedAt": observation.observed_at,
        "protocol": {"era": observation.era, "version": observation.protocol_version},
        "digests": digests,
        "counts": {x.kind.list_member: len(x) for x in snap.listings()},
        "previous": previous,
        "blob": blob,
    }
    if previous is not None and previous_look is not None:
        record["previousLookAt"] = previous_look
    if snap.identity is not None:
        record["serverInfo"] = {"name": clip(snap.identity.name, MAX_INFO_CHARS)}
        if snap.identity.version is not None:  # none given: no member (never "(none)")
            record["serverInfo"]["version"] = clip(snap.identity.version, MAX_INFO_CHARS)
    if observation.supplied_env is not None:
        record["probeEnv"] = {
            "supplied": sorted(observation.supplied_env),
            "placeholders": sorted(observation.placeholders),
        }
    return record


@dataclass(frozen=True)
class LoggedObservation:
    """The parts of a logged record that crawl state needs (see :func:`read_record`)."""

    server_id: str
    name: str
    source: str
    transport: str
    surface: str
    observed_at: str
    tool_count: int | None
    package: PackageCoords | None = None
    change: str | None = None


def read_record(value: Mapping[str, Any]) -> LoggedObservation | None:
    """The state-relevant fields of a decoded entry, or ``None`` if it is not ours."""
    if value.get("type") != RECORD_TYPE or value.get("v") != RECORD_VERSION:
        return None
    server = value.get("server")
    digests = value.get("digests")
    observed = value.get("observedAt")
    if not isinstance(server, dict) or not isinstance(digests, dict):
        return None
    server_id, surface = server.get("id"), digests.get("surface")
    if not (isinstance(server_id, str) and isinstance(surface, str) and isinstance(observed, str)):
        return None
    name, source, transport = server.get("name"), server.get("source"), server.get("transport")
    counts = value.get("counts")
    tools = counts.get("tools") if isinstance(counts, dict) else None
    package = server.get("package")
    change = value.get("change")
    return LoggedObservation(
        server_id=server_id,
        name=name if isinstance(name, str) else "",
        source=source if isinstance(source, str) else "unknown",
        transport=transport if isinstance(transport, str) else "unknown",
        surface=surface,
        observed_at=observed,
        tool_count=tools if isinstance(tools, int) else None,
        package=PackageCoords.from_json(package) if isinstance(package, dict) else None,
        change=change if change in CHANGES else None,
    )
