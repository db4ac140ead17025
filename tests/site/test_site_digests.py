"""The private digest index (``api/v1/digests/<p>.json``) of a built site."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import rfc8785
from click.testing import CliRunner, Result
from site_helpers import NOW, LogWriter, sample_log, tool

import toolpin.cli
from toolpin.publog.entries import decode_entry
from toolpin.publog.note import Verifier
from toolpin.publog.tiles import TileLog
from toolpin.site.api import SCHEMAS
from toolpin.site.build import build_site, parse_now
from toolpin.site.digests import BUCKETS, DIGESTS, prefixes

toolpin.cli._register_commands()


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
    again = tmp_path / "again"
    build_site(tmp_path / "log", Verifier.from_text(writer.vkey), again, now=parse_now(NOW))
    for prefix in prefixes():
        data = (out / DIGESTS / f"{prefix}.json").read_bytes()
        assert data == rfc8785.dumps(json.loads(data))
        assert data == (again / DIGESTS / f"{prefix}.json").read_bytes()


def test_every_bucket_matches_its_schema_and_the_openapi_names_it(
    sample_site: dict[str, Any],
) -> None:
    api = sample_site["out"] / "api" / "v1"
    schema = json.loads((api / "schema" / "digests.schema.json").read_text())
    assert schema == json.loads(json.dumps(SCHEMAS["digests"]))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted((api / "digests").iterdir()):
        validator.validate(json.loads(path.read_bytes()))
    bad = {"checkpoint": _bucket(sample_site["out"], "000")["checkpoint"], "prefix": "0000"}
    assert not validator.is_valid({**bad, "digests": []})
    openapi = json.loads((api / "openapi.json").read_text())
    bucket = openapi["paths"]["/digests/{prefix}.json"]["get"]
    assert bucket["parameters"][0]["schema"]["pattern"] == "^[0-9a-f]{3}$"
    ref = bucket["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ref == "schema/digests.schema.json"


def _mtimes(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in sorted(folder.iterdir())}


def test_an_unchanged_log_rewrites_no_bucket_and_a_grown_one_only_the_buckets_it_grew(
    tmp_path: Path,
) -> None:
    writer = LogWriter(tmp_path / "log")
    writer.observe("one", [tool("a")], "2026-11-01T00:00:00Z")
    writer.commit()
    vkey = Verifier.from_text(writer.vkey)
    out, cache = tmp_path / "out", tmp_path / "cache"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    before = _mtimes(out / DIGESTS)
    again = build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    assert again.written == 0
    # without the kept state every file is compared again, and none is rewritten
    third = build_site(tmp_path / "log", vkey, out, now=parse_now(NOW))
    assert third.written == 0
    assert _mtimes(out / DIGESTS) == before
    old = {p: _bucket(out, p) for p in prefixes()}
    writer.observe(
        "one", [tool("a", "changed")], "2026-11-30T00:00:00Z", last_good_look="2026-11-29T00:00:00Z"
    )
    writer.commit()
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    new = {p: _bucket(out, p) for p in prefixes()}
    # Issue 26: only the buckets the new entry falls in are rewritten (naming checkpoint 2);
    # every other one keeps its bytes and the checkpoint it was built from
    touched = {d["digest"][:3] for d in new.values() for d in d["digests"] if 1 in d["entries"]}
    assert touched
    for prefix, doc in new.items():
        assert doc["checkpoint"]["size"] == (2 if prefix in touched else 1), prefix
        assert (doc == old[prefix]) == (prefix not in touched), prefix
    assert _verify(out, writer.vkey).exit_code == 0
    assert {
        (d["digest"], i) for doc in old.values() for d in doc["digests"] for i in d["entries"]
    } < {(d["digest"], i) for doc in new.values() for d in doc["digests"] for i in d["entries"]}
    entries = _entries(tmp_path / "log")
    surface = entries[1]["digests"]["surface"]
    assert {"digest": surface, "kind": "surface", "entries": [1]} in new[surface[:3]]["digests"]


def _verify(folder: Path, vkey: str, *more: str) -> Result:
    return CliRunner().invoke(
        toolpin.cli.cli,
        ["log", "verify", "--log", str(folder), "--vkey", vkey, *more],
        standalone_mode=False,
    )


def _rewrite(out: Path, prefix: str, doc: dict[str, Any]) -> None:
    (out / DIGESTS / f"{prefix}.json").write_bytes(rfc8785.dumps(doc))


@pytest.fixture
def copy(sample_site: dict[str, Any], tmp_path: Path) -> Path:
    return Path(shutil.copytree(sample_site["out"], tmp_path / "copy"))


def test_verify_audits_the_published_buckets(sample_site: dict[str, Any], copy: Path) -> None:
    vkey = sample_site["vkey"]
    ok = _verify(copy, vkey)
    assert ok.return_value == 0, ok.output
    assert "digest index: 4096 buckets match the log" in ok.output
    as_json = json.loads(_verify(copy, vkey, "--json").output)
    assert as_json["ok"] is True and as_json["digest_buckets_checked"] == 4096
    # the log directory itself has no index: nothing is said about one
    plain = _verify(sample_site["log"], vkey)
    assert plain.return_value == 0 and "digest index" not in plain.output


def _a_listed_digest(out: Path) -> tuple[str, dict[str, Any]]:
    for prefix in prefixes():
        doc = _bucket(out, prefix)
        if doc["digests"]:
            return prefix, doc
    raise AssertionError("no digest in any bucket")


def test_verify_fails_on_an_omitted_digest(sample_site: dict[str, Any], copy: Path) -> None:
    prefix, doc = _a_listed_digest(copy)
    gone = doc["digests"].pop(0)
    _rewrite(copy, prefix, doc)
    result = _verify(copy, sample_site["vkey"])
    assert result.return_value == 1
    lines = result.output.strip().splitlines()
    assert lines == [
        f"FAILED: the digest index: api/v1/digests/{prefix}.json omits the {gone['kind']} "
        f"digest {gone['digest']} of entry {gone['entries'][0]} (checkpoint 5)"
    ]


def test_verify_fails_on_an_extra_digest_or_entry(sample_site: dict[str, Any], copy: Path) -> None:
    doc = _bucket(copy, "abc")
    fake = "abc" + "0" * 61
    doc["digests"] = sorted(
        [*doc["digests"], {"digest": fake, "kind": "surface", "entries": [2]}],
        key=lambda d: (d["digest"], d["kind"]),
    )
    _rewrite(copy, "abc", doc)
    result = _verify(copy, sample_site["vkey"])
    assert result.return_value == 1
    assert result.output.strip() == (
        "FAILED: the digest index: api/v1/digests/abc.json lists a surface digest "
        f"{fake} for entry 2, which does not record it (checkpoint 5)"
    )
    # a real digest credited to one more entry than recorded it
    prefix, listed = _a_listed_digest(shutil.copytree(sample_site["out"], copy.parent / "c2"))
    listed["digests"][0]["entries"] = sorted({*listed["digests"][0]["entries"], 4, 3})
    _rewrite(copy.parent / "c2", prefix, listed)
    again = _verify(copy.parent / "c2", sample_site["vkey"])
    assert again.return_value == 1 and "which does not record it" in again.output


def test_verify_fails_on_a_missing_reordered_or_foreign_bucket(
    sample_site: dict[str, Any], copy: Path
) -> None:
    vkey = sample_site["vkey"]
    (copy / DIGESTS / "7f0.json").unlink()
    missing = _verify(copy, vkey)
    assert missing.return_value == 1
    assert missing.output.strip() == "FAILED: the digest index: api/v1/digests/7f0.json is missing"
    (copy / DIGESTS / "7f0.json").write_bytes(b"[" * 200_000)
    nested = _verify(copy, vkey)
    assert nested.return_value == 1
    assert nested.output.strip() == "FAILED: the digest index: api/v1/digests/7f0.json is not JSON"
    shutil.copy(sample_site["out"] / DIGESTS / "7f0.json", copy / DIGESTS / "7f0.json")
    prefix, doc = _a_listed_digest(copy)
    path = copy / DIGESTS / f"{prefix}.json"
    path.write_text(json.dumps(doc, indent=1))  # the same facts, not in RFC 8785 form
    reordered = _verify(copy, vkey)
    assert reordered.return_value == 1
    assert "is not in the index's form" in reordered.output
    _rewrite(copy, prefix, doc)
    assert _verify(copy, vkey).return_value == 0
    doc["checkpoint"] = {**doc["checkpoint"], "root": base64.b64encode(b"\1" * 32).decode()}
    _rewrite(copy, prefix, doc)
    forged = _verify(copy, vkey)
    assert forged.return_value == 1
    assert "with a root this log never had" in forged.output


def test_a_bucket_of_an_older_checkpoint_is_audited_at_its_own_size(tmp_path: Path) -> None:
    writer = LogWriter(tmp_path / "log")
    writer.observe("one", [tool("a")], "2026-11-01T00:00:00Z")
    writer.commit()
    vkey = Verifier.from_text(writer.vkey)
    build_site(tmp_path / "log", vkey, tmp_path / "old", now=parse_now(NOW))
    writer.observe("two", [tool("b")], "2026-11-30T00:00:00Z")
    writer.commit()
    out = tmp_path / "out"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW))
    entries = _entries(tmp_path / "log")
    prefix = entries[1]["digests"]["surface"][:3]
    stale = (tmp_path / "old" / DIGESTS / f"{prefix}.json").read_bytes()
    (out / DIGESTS / f"{prefix}.json").write_bytes(stale)
    assert json.loads(stale)["checkpoint"]["size"] == 1
    assert _verify(out, writer.vkey).return_value == 0  # complete up to its checkpoint
