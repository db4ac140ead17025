"""The tools' answers, in process (the SDK transports are covered by the stdio/HTTP tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.lookup.conftest import WEATHER
from tests.lookup.lookup_helpers import LogBuilder, server_id_of, signer, snapshot, tool
from toolpin.crawl.record import definitions_blob
from toolpin.lookup.source import LogSource
from toolpin.lookup.tools import Lookup, ToolInputError
from toolpin.publog.blobs import BlobStore


def lookup_of(builder: LogBuilder, home: Path) -> Lookup:
    return Lookup(LogSource(str(builder.root), builder.signer.verifier), home=home)


def test_definitions_hashed_by_the_client_are_recognised(
    weather_log: LogBuilder, tmp_path: Path
) -> None:
    from tests.lookup.conftest import POISONED

    current = snapshot([tool("forecast", POISONED, properties={"context": {"type": "string"}})])
    listing = current.tools
    assert listing is not None
    definitions = [{"name": d.key, "hash": d.hash} for d in listing.items]
    answer = lookup_of(weather_log, tmp_path).call(
        "check_definitions", {"server": WEATHER, "definitions": definitions}
    )
    assert answer["status"] == "seen" and answer["matchedAs"] == "tools"
    assert answer["current"] is True and answer["hash"] == listing.set_hash
    other = [{"name": "forecast", "hash": "1" * 64}]
    answer = lookup_of(weather_log, tmp_path).call(
        "check_definitions", {"server": WEATHER, "definitions": other}
    )
    assert answer["status"] == "not-seen" and answer["entries"] == []


def test_ambiguous_and_unknown_servers(tmp_path: Path) -> None:
    builder = LogBuilder(tmp_path / "log", signer())
    builder.observe("twin", [tool("a")], "2026-11-01T00:00:00Z", server_id="a" * 16)
    builder.observe("twin", [tool("b")], "2026-11-01T00:00:00Z", server_id="b" * 16)
    lookup = lookup_of(builder, tmp_path / "home")
    answer = lookup.call("lookup_server", {"server": "twin"})
    assert answer["status"] == "ambiguous" and answer["server"] is None
    assert [m["id"] for m in answer["matches"]] == ["a" * 16, "b" * 16]
    assert lookup.call("lookup_server", {"server": "b" * 16})["status"] == "found"
    assert lookup.call("lookup_server", {"server": "nobody"})["status"] == "not-found"


def test_history_limit_keeps_the_newest(weather_log: LogBuilder, tmp_path: Path) -> None:
    lookup = lookup_of(weather_log, tmp_path)
    answer = lookup.call("server_history", {"server": server_id_of(WEATHER), "limit": 1})
    assert answer["total"] == 2 and [h["event"] for h in answer["history"]] == ["change"]
    for bad in (0, 201, "2", True):
        with pytest.raises(ToolInputError):
            lookup.call("server_history", {"server": WEATHER, "limit": bad})


def test_a_blob_that_is_not_the_records_gives_no_labels(tmp_path: Path) -> None:
    """The audit checks a blob against its digest; the labels also need the blob to be the
    definitions the record's hashes describe, else none are given."""
    builder = LogBuilder(tmp_path / "log", signer())
    first = builder.observe("srv", [tool("a")], "2026-11-01T00:00:00Z")
    record: dict[str, Any] = builder.log_record(first)
    decoy = BlobStore(builder.root).put(definitions_blob(snapshot([tool("a", "decoy")])))
    record.update(observedAt="2026-11-02T00:00:00Z", blob=decoy, previous=first)
    record["digests"] = {**record["digests"], "surface": "e" * 64}
    builder.append_raw(record)
    answer = lookup_of(builder, tmp_path / "home").call("lookup_server", {"server": "srv"})
    change = answer["server"]["lastChange"]
    assert answer["server"]["changes"] == 1
    assert change["labelsVerified"] is False and change["labels"] == []


def test_every_answer_says_whether_its_checkpoint_is_stale(
    weather_log: LogBuilder, tmp_path: Path
) -> None:
    from datetime import UTC, datetime, timedelta

    later = datetime.now(UTC) + timedelta(days=3)
    lookup = Lookup(
        LogSource(str(weather_log.root), weather_log.signer.verifier),
        home=tmp_path,
        now=lambda: later,
    )
    assert lookup.call("lookup_server", {"server": WEATHER})["log"]["stale"] is True
    status = lookup.call("log_status", {})
    assert status["stale"] is True and status["ageSeconds"] >= 3 * 86400 - 60
    fresh = lookup_of(weather_log, tmp_path)
    assert fresh.call("lookup_server", {"server": WEATHER})["log"]["stale"] is False
