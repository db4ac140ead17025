"""The observation record, its blob, and the opt-out list."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from toolpin.core.snapshot import Identity, Kind, Listing, Snapshot
from toolpin.crawl.candidates import Candidate, PackageCoords
from toolpin.crawl.optout import apply_optout, load_optout, parse_optout
from toolpin.crawl.record import (
    RECORD_TYPE,
    Observation,
    definitions_blob,
    observation_record,
    read_record,
)
from toolpin.errors import InputError
from toolpin.publog.entries import MAX_ENTRY_BYTES, decode_entry, encode_entry


def _snapshot(identity: Identity | None = None) -> Snapshot:
    tools = Listing.parse(
        Kind.TOOL,
        [{"name": f"t{i}", "description": "x" * 1000, "inputSchema": {}} for i in range(50)],
    )
    prompts = Listing.parse(Kind.PROMPT, [{"name": "p"}])
    return Snapshot(
        tools=tools,
        prompts=prompts,
        instructions="Read me.",
        instructions_known=True,
        identity=identity,
    )


def test_record_fields_and_size() -> None:
    huge = Identity("n" * 100_000, "v" * 100_000, "2025-06-18")
    snap = _snapshot(huge)
    cand = Candidate(
        id="abcdef0123456789",
        name="io.example/" + "x" * 5000,
        source="registry",
        transport="streamable-http",
        url="https://mcp.example.com/" + "p" * 5000,
        package=PackageCoords("npm", "@ex/pkg", "1.2.3", "sha512-abc"),
    )
    obs = Observation(snap, "handshake", "2025-06-18", "2026-11-30T04:05:51Z", ("PATH",), ())
    blob = "sha256:" + hashlib.sha256(definitions_blob(snap)).hexdigest()
    record = observation_record(cand, obs, previous=7, blob=blob)
    entry = encode_entry(record)
    assert len(entry) < 8 * 1024 < MAX_ENTRY_BYTES
    value = decode_entry(entry)
    assert value["type"] == RECORD_TYPE and value["v"] == 1
    assert value["previous"] == 7
    assert value["digests"]["surface"] == snap.surface_hash()
    assert value["digests"]["tools"] == snap.tools.set_hash  # type: ignore[union-attr]
    assert value["digests"]["resources"] is None  # not offered
    assert value["digests"]["instructions"] == snap.instructions_hash
    assert value["counts"] == {"tools": 50, "prompts": 1}
    assert value["server"]["package"]["digest"] == "sha512-abc"
    assert len(value["serverInfo"]["name"]) <= 256
    assert value["probeEnv"] == {"supplied": ["PATH"], "placeholders": []}
    logged = read_record(value)
    assert logged is not None
    assert (logged.server_id, logged.surface, logged.tool_count) == (
        "abcdef0123456789",
        snap.surface_hash(),
        50,
    )
    assert read_record({"type": "other"}) is None


def test_blob_is_canonical_and_content_addressed() -> None:
    blob = definitions_blob(_snapshot())
    again = definitions_blob(_snapshot())
    assert blob == again
    data = json.loads(blob)
    assert data["surfaceHash"] == _snapshot().surface_hash()
    compact = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert blob == compact.encode()


def test_optout_parsing() -> None:
    text = "# header\n\nSome-Server\n  io.example/Thing   # trailing comment\n#x\n"
    assert parse_optout(text) == {"some-server", "io.example/thing"}


def test_optout_matches_names_and_packages(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "OPTOUT.txt").write_text("io.example/ONE\n")
    (tmp_path / "b" / "OPTOUT.txt").write_text("@Scope/Pkg\n")
    names = load_optout([tmp_path / "a", tmp_path / "b", tmp_path / "missing"])
    one = Candidate("1", "io.example/one", "registry", "unknown")
    two = Candidate(
        "2", "io.example/two", "registry", "stdio", package=PackageCoords("npm", "@scope/pkg")
    )
    three = Candidate("3", "keep", "npm", "stdio")
    kept, dropped = apply_optout([one, two, three], names)
    assert kept == [three] and dropped == [one, two]


def test_unreadable_optout_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "OPTOUT.txt").write_bytes(b"\xff\xfe bad")
    with pytest.raises(InputError, match="not UTF-8"):
        load_optout([tmp_path])


def test_a_config_url_is_recorded_without_its_secrets() -> None:
    url = "https://mcp.example.com:8443/v1/mcp?api_key=s3cret#frag"
    local = Candidate("1", "mine", "config", "streamable-http", url=url)
    listed = Candidate("2", "io.example/x", "registry", "streamable-http", url=url)
    assert local.public_url == "https://mcp.example.com:8443/v1/mcp"
    assert "s3cret" not in json.dumps(local.descriptor())
    assert listed.public_url == url
    obs = Observation(_snapshot(), "modern", "2026-07-28", "2026-11-30T00:00:00Z")
    record = observation_record(local, obs, previous=None, blob="sha256:" + "0" * 64)
    assert record["server"]["url"] == "https://mcp.example.com:8443/v1/mcp"
