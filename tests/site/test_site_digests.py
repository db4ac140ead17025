"""The private digest index (``api/v1/digests/<p>.json``) of a built site, its prefix
length chosen from the log (``index.json``), and the audit of both."""

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
from site_helpers import NOW, LogWriter, legacy_digests, sample_log, tool

import toolpin.cli
from toolpin.core import digestindex
from toolpin.core.digestindex import most_digits, prefix_digits
from toolpin.publog.entries import decode_entry
from toolpin.publog.note import Verifier
from toolpin.publog.tiles import TileLog
from toolpin.site import build as site_build
from toolpin.site import digests
from toolpin.site.api import SCHEMAS
from toolpin.site.build import build_site, parse_now
from toolpin.site.digests import DIGESTS, INDEX, prefixes

toolpin.cli._register_commands()


def _entries(log: Path) -> list[dict[str, Any]]:
    """Every entry of the log, decoded here (not by the index's code)."""
    opened = TileLog.open(log)
    return [decode_entry(raw) for raw in opened.iter_entries(0, opened.size)]


def _expected(log: Path, digits: int) -> dict[str, set[tuple[str, str, int]]]:
    """``{prefix: {(digest, kind, index)}}`` straight from the entries."""
    out: dict[str, set[tuple[str, str, int]]] = {}
    for index, entry in enumerate(_entries(log)):
        for kind in ("surface", "tools"):
            digest = entry["digests"].get(kind)
            if digest is not None:
                out.setdefault(digest[:digits], set()).add((digest, kind, index))
    return out


def _digits(out: Path) -> int:
    digits: int = json.loads((out / INDEX).read_bytes())["prefix_digits"]
    return digits


def _names(out: Path) -> list[str]:
    return sorted(p.name for p in (out / DIGESTS).iterdir())


def _bucket(out: Path, prefix: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((out / DIGESTS / f"{prefix}.json").read_bytes())
    return loaded


def test_the_prefix_rule_at_its_boundaries() -> None:
    per = digestindex.RECORDS_PER_BUCKET
    assert per == 1024
    # the smallest d with records / 16**d <= 1,024
    assert [prefix_digits(n) for n in (0, 1, 16 * per, 16 * per + 1)] == [1, 1, 1, 2]
    assert [prefix_digits(n) for n in (256 * per, 256 * per + 1)] == [2, 3]
    assert [prefix_digits(n) for n in (4096 * per, 4096 * per + 1)] == [3, 4]
    assert [prefix_digits(n) for n in (65536 * per, 65536 * per + 1)] == [4, 5]
    assert prefix_digits(10**12) == 5  # never longer than 5
    assert prefix_digits(200_000) == 2 and prefix_digits(2_000_000) == 3
    assert prefix_digits(17, per_bucket=1) == 2 and prefix_digits(16, per_bucket=1) == 1
    # a reader's bound: the rule for 2 records per entry, never under the old layout's 3
    assert most_digits(0) == most_digits(100_000) == 3
    assert most_digits(2048 * per) == 3 and most_digits(2048 * per + 1) == 4
    assert prefixes(1) == [f"{n:x}" for n in range(16)]
    assert len(prefixes(3)) == 4096 and prefixes(3)[0] == "000" and prefixes(3)[-1] == "fff"


def test_every_prefix_has_a_bucket_and_nothing_else(sample_site: dict[str, Any]) -> None:
    out = sample_site["out"]
    # ten records (five entries, a surface and a tools digest each): one hex digit
    assert (out / INDEX).read_bytes() == b'{"prefix_digits":1}'
    assert _names(out) == sorted([f"{n:x}.json" for n in range(16)] + ["index.json"])


def test_the_buckets_list_exactly_the_log_s_digests(sample_site: dict[str, Any]) -> None:
    out, log = sample_site["out"], sample_site["log"]
    expected = _expected(log, 1)
    checkpoint = json.loads((out / "api" / "v1" / "log.json").read_text())["checkpoint"]
    listed = 0
    for prefix in prefixes(1):
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
    found = [d for d in _bucket(out, tools[: _digits(out)])["digests"] if d["digest"] == tools]
    assert {d["kind"]: d["entries"] for d in found}["tools"] == [0, 1, 3]


def test_buckets_are_rfc8785_and_stable_bytes(sample_site: dict[str, Any], tmp_path: Path) -> None:
    out = sample_site["out"]
    writer, _ = sample_log(tmp_path / "log")
    again = tmp_path / "again"
    build_site(tmp_path / "log", Verifier.from_text(writer.vkey), again, now=parse_now(NOW))
    assert _names(out) == _names(again)
    for prefix in [*prefixes(_digits(out)), "index"]:
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
    for path in sorted((api / "digests").glob("?.json")):
        validator.validate(json.loads(path.read_bytes()))
    cp = _bucket(sample_site["out"], "0")["checkpoint"]
    assert validator.is_valid({"checkpoint": cp, "prefix": "abcde", "digests": []})
    for prefix in ("", "abcdef", "ABC", "g"):
        assert not validator.is_valid({"checkpoint": cp, "prefix": prefix, "digests": []})
    index = json.loads((api / "schema" / "digests-index.schema.json").read_text())
    assert index == json.loads(json.dumps(SCHEMAS["digests-index"]))
    jsonschema.Draft202012Validator.check_schema(index)
    jsonschema.validate(json.loads((api / "digests" / "index.json").read_bytes()), index)
    for bad in ({"prefix_digits": 0}, {"prefix_digits": 6}, {}, {"prefix_digits": 2, "x": 1}):
        assert not jsonschema.Draft202012Validator(index).is_valid(bad)
    openapi = json.loads((api / "openapi.json").read_text())
    bucket = openapi["paths"]["/digests/{prefix}.json"]["get"]
    assert bucket["parameters"][0]["schema"]["pattern"] == "^[0-9a-f]{1,5}$"
    ref = bucket["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ref == "schema/digests.schema.json"
    listed = openapi["paths"]["/digests/index.json"]["get"]["responses"]["200"]
    assert listed["content"]["application/json"]["schema"]["$ref"] == (
        "schema/digests-index.schema.json"
    )


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
    old = {p: _bucket(out, p) for p in prefixes(1)}
    writer.observe(
        "one", [tool("a", "changed")], "2026-11-30T00:00:00Z", last_good_look="2026-11-29T00:00:00Z"
    )
    writer.commit()
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    new = {p: _bucket(out, p) for p in prefixes(1)}
    # Issue 26: only the buckets the new entry falls in are rewritten (naming checkpoint 2);
    # every other one keeps its bytes and the checkpoint it was built from
    touched = {d["digest"][:1] for d in new.values() for d in d["digests"] if 1 in d["entries"]}
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
    assert {"digest": surface, "kind": "surface", "entries": [1]} in new[surface[:1]]["digests"]


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
    assert "digest index: 16 buckets of 1 prefix digit match the log" in ok.output
    as_json = json.loads(_verify(copy, vkey, "--json").output)
    assert as_json["ok"] is True and as_json["digest_buckets_checked"] == 16
    assert as_json["digest_prefix_digits"] == 1
    # the log directory itself has no index: nothing is said about one
    plain = _verify(sample_site["log"], vkey)
    assert plain.return_value == 0 and "digest index" not in plain.output


def _a_listed_digest(out: Path) -> tuple[str, dict[str, Any]]:
    for prefix in prefixes(_digits(out)):
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
    doc = _bucket(copy, "a")
    fake = "a" + "0" * 63
    doc["digests"] = sorted(
        [*doc["digests"], {"digest": fake, "kind": "surface", "entries": [2]}],
        key=lambda d: (d["digest"], d["kind"]),
    )
    _rewrite(copy, "a", doc)
    result = _verify(copy, sample_site["vkey"])
    assert result.return_value == 1
    assert result.output.strip() == (
        "FAILED: the digest index: api/v1/digests/a.json lists a surface digest "
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
    (copy / DIGESTS / "7.json").unlink()
    missing = _verify(copy, vkey)
    assert missing.return_value == 1
    assert missing.output.strip() == "FAILED: the digest index: api/v1/digests/7.json is missing"
    (copy / DIGESTS / "7.json").write_bytes(b"[" * 200_000)
    nested = _verify(copy, vkey)
    assert nested.return_value == 1
    assert nested.output.strip() == "FAILED: the digest index: api/v1/digests/7.json is not JSON"
    shutil.copy(sample_site["out"] / DIGESTS / "7.json", copy / DIGESTS / "7.json")
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
    prefix = entries[1]["digests"]["surface"][:1]
    stale = (tmp_path / "old" / DIGESTS / f"{prefix}.json").read_bytes()
    (out / DIGESTS / f"{prefix}.json").write_bytes(stale)
    assert json.loads(stale)["checkpoint"]["size"] == 1
    assert _verify(out, writer.vkey).return_value == 0  # complete up to its checkpoint


def _grow(writer: LogWriter, start: int, stop: int) -> None:
    """Entries ``start`` to ``stop - 1``: a new server each, two new records each."""
    for n in range(start, stop):
        writer.observe(f"s{n}", [tool(f"t{n}")], f"2026-11-{n + 1:02d}T00:00:00Z")
    writer.commit()


def test_a_log_growing_past_a_length_moves_every_bucket_once_to_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One record per bucket on average: 16 records fit one digit, 17 need two (the rule
    # as at 1,024, without building a log of 16,385 records).
    monkeypatch.setattr(digestindex, "RECORDS_PER_BUCKET", 1)
    writer = LogWriter(tmp_path / "log")
    _grow(writer, 0, 4)  # 8 records
    vkey = Verifier.from_text(writer.vkey)
    out, cache, full = tmp_path / "out", tmp_path / "cache", tmp_path / "full"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    one = sorted([f"{n:x}.json" for n in range(16)] + ["index.json"])
    assert _digits(out) == 1 and _names(out) == one
    shutil.copytree(out, full)
    _grow(writer, 4, 9)  # 18 records: two digits
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    two = sorted([f"{n:02x}.json" for n in range(256)] + ["index.json"])
    assert _digits(out) == 2 and _names(out) == two  # the one-digit buckets are gone
    assert (out / INDEX).read_bytes() == b'{"prefix_digits":2}'
    for index, entry in enumerate(_entries(tmp_path / "log")):
        surface = entry["digests"]["surface"]
        rows = _bucket(out, surface[:2])["digests"]
        assert {"digest": surface, "kind": "surface", "entries": [index]} in rows
    # The same published site built in full (no kept state: every bucket grouped, encoded
    # and compared) has the same bytes; that build removes nothing, so its one-digit
    # buckets are left, and the audit names them.
    build_site(tmp_path / "log", vkey, full, now=parse_now(NOW))
    for name in two:
        assert (out / DIGESTS / name).read_bytes() == (full / DIGESTS / name).read_bytes(), name
    assert set(_names(full)) - set(two) == set(one) - {"index.json"}
    assert _verify(out, writer.vkey).return_value == 0
    left = _verify(full, writer.vkey)
    assert left.return_value == 1
    assert left.output.strip() == (
        "FAILED: the digest index: api/v1/digests/0.json is a bucket of 1 prefix digits, "
        "left beside the index's 2"
    )
    # Unchanged since: nothing is written again.
    assert build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache).written == 0
    # Grown within the length: only the buckets the new entry falls in are rewritten.
    before = _mtimes(out / DIGESTS)
    _grow(writer, 9, 10)
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    after = _mtimes(out / DIGESTS)
    latest = _entries(tmp_path / "log")[9]["digests"]
    new = {latest[kind][:2] for kind in ("surface", "tools")}
    assert {p.name for p in after if after[p] != before[p]} == {f"{p}.json" for p in new}
    assert _verify(out, writer.vkey).return_value == 0


def _put_index(folder: Path, data: bytes) -> None:
    (folder / INDEX).write_bytes(data)


def test_verify_fails_on_a_wrong_or_malformed_prefix_length(
    sample_site: dict[str, Any], copy: Path
) -> None:
    vkey = sample_site["vkey"]
    _put_index(copy, b'{"prefix_digits":2}')
    wrong = _verify(copy, vkey)
    assert wrong.return_value == 1
    assert wrong.output.strip() == (
        "FAILED: the digest index: api/v1/digests/index.json gives 2 prefix digits; "
        "the rule gives 1 for the log's 10 records"
    )
    # consistent with itself (every two-digit bucket, each right) is still not the rule
    legacy_digests(copy, digits=2, index=True)
    assert "the rule gives 1" in _verify(copy, vkey).output
    shutil.rmtree(copy / DIGESTS)
    shutil.copytree(sample_site["out"] / DIGESTS, copy / DIGESTS)
    assert _verify(copy, vkey).return_value == 0
    for bad in (b'{"prefix_digits": 1}', b'{"prefix_digits":9}', b"[1]", b'{"prefix_digits":"1"}'):
        _put_index(copy, bad)
        result = _verify(copy, vkey)
        assert result.return_value == 1, bad
        assert result.output.strip() == (
            'FAILED: the digest index: api/v1/digests/index.json is not {"prefix_digits": d} '
            "with d from 1 to 5 (RFC 8785)"
        ), bad


def test_verify_fails_on_a_bucket_of_another_length_or_a_stray_file(
    sample_site: dict[str, Any], copy: Path
) -> None:
    vkey = sample_site["vkey"]
    shutil.copy(copy / DIGESTS / "a.json", copy / DIGESTS / "abc.json")
    left = _verify(copy, vkey)
    assert left.return_value == 1
    assert left.output.strip() == (
        "FAILED: the digest index: api/v1/digests/abc.json is a bucket of 3 prefix digits, "
        "left beside the index's 1"
    )
    (copy / DIGESTS / "abc.json").unlink()
    (copy / DIGESTS / "notes\x1b[2J.txt").write_bytes(b"")
    stray = _verify(copy, vkey)
    assert stray.return_value == 1
    assert stray.output.strip() == (
        "FAILED: the digest index: api/v1/digests/ holds a file that is not a bucket of the index"
    )


def test_an_old_three_digit_site_is_audited_at_three_digits(
    sample_site: dict[str, Any], copy: Path
) -> None:
    vkey = sample_site["vkey"]
    legacy_digests(copy)
    assert len(_names(copy)) == 4096 and not (copy / INDEX).exists()
    ok = _verify(copy, vkey)
    assert ok.return_value == 0, ok.output
    assert "digest index: 4096 buckets of 3 prefix digits match the log" in ok.output
    as_json = json.loads(_verify(copy, vkey, "--json").output)
    assert as_json["digest_buckets_checked"] == 4096 and as_json["digest_prefix_digits"] == 3
    shutil.copy(sample_site["out"] / DIGESTS / "a.json", copy / DIGESTS / "a.json")
    assert "a.json is a bucket of 1 prefix digits" in _verify(copy, vkey).output
    (copy / DIGESTS / "a.json").unlink()
    (copy / DIGESTS / "7f0.json").unlink()
    missing = _verify(copy, vkey)
    assert missing.output.strip() == "FAILED: the digest index: api/v1/digests/7f0.json is missing"


def test_the_fast_bucket_encoding_is_the_rfc8785_one() -> None:
    from toolpin.site.digests import _row_bytes, _rows, bucket_bytes, buckets

    found = [
        ("ab" * 32, "tools", 7),
        ("ab" * 32, "surface", 3),
        ("ab" * 32, "tools", 2),
        ("a0" + "f" * 62, "surface", 9),
        ("0" * 64, "surface", 1),
        ("f" * 64, "tools", 12),
    ]
    cp = {"origin": 'log.example/\u00e9t\u00e9 "x"\n', "size": 12, "root": "A" * 43 + "="}
    for digits in (1, 2, 3):
        rows, docs = _rows(found, 12, digits), buckets(found, 12, digits)
        assert rows.keys() == docs.keys() and len(rows) == 16**digits
        for prefix in rows:
            assert _row_bytes(cp, prefix, rows[prefix]) == bucket_bytes(cp, prefix, docs[prefix])
    assert buckets(found, 12, 1)["a"] == [
        {"digest": "a0" + "f" * 62, "kind": "surface", "entries": [9]},
        {"digest": "ab" * 32, "kind": "surface", "entries": [3]},
        {"digest": "ab" * 32, "kind": "tools", "entries": [2, 7]},
    ]
    assert buckets(found, 12, 1)["f"] == []  # entry 12 is not below the size


def _write_old_digests(writer: Any, view: Any, published: Any = None, kept_below: int = 0) -> None:
    """What a build wrote before the prefix rule: 4,096 buckets of 3 hex digits, each
    naming the current checkpoint, and no ``index.json``."""
    cp = view.checkpoint
    current = {"origin": cp.origin, "size": cp.size, "root": cp.root}
    found = [item for _, v in view.versions() for item in digests.recorded(v.index, v.digests)]
    for prefix, items in digests.buckets(found, cp.size, 3).items():
        writer.write(digests.bucket_path(prefix), digests.bucket_bytes(current, prefix, items))


def test_a_three_digit_site_moves_to_the_log_s_length_at_its_next_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    out, cache = tmp_path / "out", tmp_path / "cache"
    with monkeypatch.context() as old:  # the toolpin before the rule (other code: other inputs)
        old.setattr(digests, "write_digests", _write_old_digests)
        old.setattr(site_build, "code_digest", lambda: "0" * 64)
        build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    assert len(_names(out)) == 4096 and not (out / INDEX).exists()
    assert "4096 buckets of 3 prefix digits match" in _verify(out, writer.vkey).output
    moved = build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    assert _names(out) == sorted([f"{n:x}.json" for n in range(16)] + ["index.json"])
    assert moved.removed == 4096  # the old buckets were the last build's files
    assert "16 buckets of 1 prefix digit match" in _verify(out, writer.vkey).output


def test_the_buckets_one_at_a_time_are_the_grouped_buckets() -> None:
    # write_digests takes each bucket's rows from the records sorted in place, one bucket
    # at a time: the same rows, in the same order, as the grouping of the whole index
    # (every prefix, the empty ones too; the entries at or past the size left out).
    import hashlib

    found: list[tuple[str, str, int]] = []
    for index in range(400):
        digest = hashlib.sha256(str(index % 150).encode()).hexdigest()
        found.extend((digest, kind, index) for kind in ("surface", "tools")[: 1 + index % 2])
    found.reverse()
    for digits in (1, 2, 3):
        for size in (0, 1, 250, 400):
            grouped = digests._rows(list(found), size, digits)
            one_by_one = list(digests._bucket_rows(list(found), size, digits))
            assert [p for p, _ in one_by_one] == list(grouped) == digests.prefixes(digits)
            assert dict(one_by_one) == grouped
