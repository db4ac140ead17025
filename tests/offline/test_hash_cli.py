"""``toolpin hash``: the open spec's hashes for saved files, checked against the published
vectors, the 1,000-tool listing, pages, prompts/resources/templates and instructions."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from offline_support import DATA, run_inprocess, run_process

VECTORS = json.loads((DATA / "vectors" / "mcp-pin-hash-vectors.json").read_text(encoding="utf-8"))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


def write(work: Path, name: str, text: str) -> str:
    (work / name).write_bytes(text.encode("utf-8", "surrogatepass"))
    return name


@pytest.mark.parametrize(
    "vector", VECTORS["definitions"], ids=[v["about"][:30] for v in VECTORS["definitions"]]
)
def test_definition_vectors(work: Path, vector: dict[str, Any]) -> None:
    name = write(work, "def.json", vector["input"])
    run = run_inprocess(["hash", "--json", name], work)
    assert run.exit == 0, run.stderr
    assert run.json["definition"]["hash"] == vector["hash"]
    text = run_inprocess(["hash", name], work)
    assert text.stdout.split()[0] == vector["hash"]


@pytest.mark.parametrize("vector", VECTORS["sets"], ids=[v["about"][:30] for v in VECTORS["sets"]])
def test_set_vectors(work: Path, vector: dict[str, Any]) -> None:
    pages = [write(work, f"page{i}.json", page) for i, page in enumerate(vector["pages"])]
    run = run_inprocess(["hash", "--json", *pages], work)
    assert run.exit == 0, run.stderr
    (group,) = run.json.values()
    assert group["setHash"] == vector["setHash"]
    assert [f"{x['name']}:{x['hash']}" for x in group["items"]] == vector["lines"]
    text = run_inprocess(["hash", *reversed(pages)], work)
    assert f"  set {vector['setHash']}" in text.stdout.splitlines()


def test_invalid_vectors(work: Path) -> None:
    for i, vector in enumerate(VECTORS["invalid"]):
        pages = (
            [write(work, f"bad{i}.json", vector["input"])]
            if "input" in vector
            else [write(work, f"bad{i}-{j}.json", page) for j, page in enumerate(vector["pages"])]
        )
        run = run_inprocess(["hash", *pages], work)
        run.assert_clean_failure()
        assert run.stdout == ""


def test_bench_listing_in_a_real_process(work: Path) -> None:
    run = run_process(["hash", "--json", str(DATA / "vectors" / "bench-tools-1000.json")], work)
    assert run.exit == 0, run.stderr
    assert len(run.json["tools"]["items"]) == 1000
    assert run.json["tools"]["setHash"] == (
        "5dd8270765edc633a0b03ed1178b26b6b6fce8594c2be455628554d7875c61cb"
    )


def test_every_kind_and_instructions(work: Path) -> None:
    doc = {
        "initialize": {
            "result": {"serverInfo": {"name": "s", "version": "1"}, "instructions": "Be brief."}
        },
        "tools": [{"name": "b"}, {"name": "a"}],
        "prompts": [{"name": "p"}],
        "resources": [{"uri": "file:///x"}],
        "resourceTemplates": [{"uriTemplate": "x://{y}"}],
    }
    name = write(work, "all.json", json.dumps(doc))
    run = run_inprocess(["hash", "--json", name], work)
    assert run.exit == 0, run.stderr
    out = run.json
    assert [x["name"] for x in out["tools"]["items"]] == ["a", "b"]
    assert out["prompts"]["items"][0]["name"] == "p"
    assert out["resources"]["items"][0]["uri"] == "file:///x"
    assert out["resourceTemplates"]["items"][0]["uriTemplate"] == "x://{y}"
    assert out["instructions"]["hash"] == hashlib.sha256(b"Be brief.").hexdigest()
    text = run_inprocess(["hash", name], work).stdout
    assert text.splitlines()[0] == "tools (2):"
    assert "resource templates (1):" in text
    assert f"instructions {hashlib.sha256(b'Be brief.').hexdigest()}" in text


def test_hash_tolerates_what_pin_refuses(work: Path) -> None:
    """The spec hashes a listing whose definitions share a name (ties by hash) and writes a
    lone surrogate as an escape; ``pin`` refuses both."""
    dup = write(work, "dup.json", '[{"name": "a", "v": 1}, {"name": "a", "v": 2}]')
    assert run_inprocess(["hash", dup], work).exit == 0
    assert run_inprocess(["pin", "--listing", dup, "--lock", "x.lock"], work).exit == 2
    lone = write(work, "lone.json", '[{"name": "a\\ud800"}]')
    run = run_inprocess(["hash", "--json", lone], work)
    assert run.exit == 0
    canonical = '{"name":"a\\ud800"}'
    assert run.json["tools"]["items"][0]["hash"] == hashlib.sha256(canonical.encode()).hexdigest()


def test_names_are_shown_safely(work: Path) -> None:
    name = write(work, "evil.json", '[{"name": "a\\u001b[2J\\u202e"}]')
    run = run_inprocess(["hash", name], work)
    assert "\x1b" not in run.stdout and "\u202e" not in run.stdout
    assert "a\\u{1b}[2J\\u{202e}" in run.stdout


def test_bom_is_accepted(work: Path) -> None:
    (work / "bom.json").write_bytes(b"\xef\xbb\xbf" + b'[{"name": "a"}]')
    assert run_inprocess(["hash", "bom.json"], work).exit == 0
