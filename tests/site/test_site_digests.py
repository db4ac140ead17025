"""The private digest index (``api/v1/digests/<p>.json``) of a built site."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import rfc8785
from site_helpers import NOW, LogWriter, sample_log, tool

from toolpin.publog.entries import decode_entry
from toolpin.publog.tiles import TileLog
from toolpin.site.build import build_site, parse_now
from toolpin.site.digests import BUCKETS, DIGESTS, prefixes


def _entries(log: Path) -> list[dict[str, Any]]:
    """Every entry of the log, decoded here (not by the index's code)."""
    opened = TileLog.open(log)
    return [decode_entry(raw) for raw in opened.iter_entries(0, opened.size)]


def _expected(log: Path) -> dict[str, set[tuple[str, str, int]]]:
    """``{prefix: {(digest, kind, index)}}`` straight from the entries."""
    out: dict[str, set[tuple[str, str, int]]] = {}
    for index, entry in enumerate(_entries(log)):
        for kind in ("surface", "tools"):
            digest = entry["digests"].get(kind)
            if digest is not None:
                out.setdefault(digest[:3], set()).add((digest, kind, index))
    return out


def _bucket(out: Path, prefix: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((out / DIGESTS / f"{prefix}.json").read_bytes())
    return loaded


def test_every_prefix_has_a_bucket_and_nothing_else(sample_site: dict[str, Any]) -> None:
    folder = sample_site["out"] / DIGESTS
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == BUCKETS == 4096
    assert names == [f"{n:03x}.json" for n in range(4096)]
    assert prefixes()[0] == "000" and prefixes()[-1] == "fff"


def test_the_buckets_list_exactly_the_log_s_digests(sample_site: dict[str, Any]) -> None:
    out, log = sample_site["out"], sample_site["log"]
    expected = _expected(log)
    checkpoint = json.loads((out / "api" / "v1" / "log.json").read_text())["checkpoint"]
    listed = 0
    for prefix in prefixes():
        doc = _bucket(out, prefix)
        assert doc["prefix"] == prefix
        assert doc["checkpoint"] == {k: checkpoint[k] for k in ("origin", "size", "root")}
        got = {(d["digest"], d["kind"], i) for d in doc["digests"] for i in d["entries"]}
        assert got == expected.get(prefix, set()), prefix
        keys = [(d["digest"], d["kind"]) for d in doc["digests"]]
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        for d in doc["digests"]:
            assert d["digest"].startswith(prefix)
            assert d["entries"] == sorted(d["entries"])
            assert all(0 <= i < doc["checkpoint"]["size"] for i in d["entries"])
        listed += len(got)
    # five entries, each with a surface and a tools digest; the opted-out one included
    assert listed == 10 == sum(len(v) for v in expected.values())
    assert base64.b64decode(checkpoint["root"])


def test_a_digest_many_entries_recorded_lists_them_all(tmp_path: Path) -> None:
    writer = LogWriter(tmp_path / "log")
    # the same tools served by two servers, then by the first again after a change back
    writer.observe("one", [tool("a")], "2026-11-01T00:00:00Z")
    writer.observe("two", [tool("a")], "2026-11-02T00:00:00Z")
    writer.observe("one", [tool("b")], "2026-11-03T00:00:00Z")
    writer.observe("one", [tool("a")], "2026-11-04T00:00:00Z")
    writer.commit()
    from toolpin.publog.note import Verifier

    out = tmp_path / "out"
    build_site(tmp_path / "log", Verifier.from_text(writer.vkey), out, now=parse_now(NOW))
    entries = _entries(tmp_path / "log")
    tools = entries[0]["digests"]["tools"]
    assert entries[1]["digests"]["tools"] == entries[3]["digests"]["tools"] == tools
    found = [d for d in _bucket(out, tools[:3])["digests"] if d["digest"] == tools]
    assert {d["kind"]: d["entries"] for d in found}["tools"] == [0, 1, 3]


def test_buckets_are_rfc8785_and_stable_bytes(sample_site: dict[str, Any], tmp_path: Path) -> None:
    out = sample_site["out"]
    writer, _ = sample_log(tmp_path / "log")
    from toolpin.publog.note import Verifier

    again = tmp_path / "again"
    build_site(tmp_path / "log", Verifier.from_text(writer.vkey), again, now=parse_now(NOW))
    for prefix in prefixes():
        data = (out / DIGESTS / f"{prefix}.json").read_bytes()
        assert data == rfc8785.dumps(json.loads(data))
        assert data == (again / DIGESTS / f"{prefix}.json").read_bytes()
