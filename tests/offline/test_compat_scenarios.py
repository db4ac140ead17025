"""mcp-tool-pin-check compatibility: every scenario of tests/data/mtpc/scenarios.json.

The expectations are the real reference's own exit codes and ``--json`` findings,
recorded by ``tests/data/mtpc/build_reference.py``. A scenario may declare a deliberate
toolpin deviation (``toolpin`` / ``toolpin_findings``, each with the reason), e.g. where
the reference crashes with a traceback and exit 1, toolpin exits 2 with one line.

Rows run in this process (``toolpin.cli.main``) for speed; ``test_exit2_rows_in_a_real_process``
repeats every exit-2 row of the bar as a real ``python -m toolpin`` process.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from offline_support import (
    MTPC,
    PIN_ARGS,
    Run,
    all_tool_names,
    findings,
    run_inprocess,
    run_process,
    scenarios,
    tolerant_findings,
)

from toolpin.core.render import visible

SCENARIOS = scenarios()
PIN_CHECK = [sc for sc in SCENARIOS if sc["kind"] == "pin-check"]
BAR_GROUPS = {"pin", "drift", "identity", "shape", "widen", "hash", "exit2", "legacy"}


def ids(rows: list[dict[str, Any]]) -> list[str]:
    return [sc["name"] for sc in rows]


def stage(tmp: Path, *relative: str) -> None:
    for rel in relative:
        src = MTPC / rel
        if not rel or not src.exists() or src.is_dir():
            continue
        dst = tmp / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLPIN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TOOLPIN_COLOR", raising=False)
    (tmp_path / "listings").mkdir()
    (tmp_path / "legacy").mkdir()
    return tmp_path


def expected_exit(sc: dict[str, Any], step: str, *, own_lock: bool = True) -> int:
    override = sc.get("toolpin") if own_lock else None
    if override is not None and "exit" in override:
        return int(override["exit"])
    ref = sc["reference"][step]
    assert not ref["crashed"] or own_lock is False, f"{sc['name']}: undeclared reference crash"
    return int(ref["exit"])


def expected_findings(sc: dict[str, Any], *, own_lock: bool) -> dict[str, Any] | None:
    ref = sc["reference"].get("check", {}).get("json")
    if ref is None:
        return None
    out = findings(ref)
    override = sc.get("toolpin") if own_lock else None
    if override:
        out.update({k: v for k, v in override.items() if k in out})
    out.update({k: v for k, v in sc.get("toolpin_findings", {}).items() if k in out})
    return out


def assert_no_traceback(run: Run) -> None:
    assert "Traceback" not in run.stderr, run.stderr
    assert "Traceback" not in run.stdout


def assert_reference_lines(reference: str, ours: str) -> None:
    """Every line the reference printed appears in toolpin's text, in the same order.

    toolpin adds lines (labels, notes) and shows server text with unsafe characters made
    visible; the reference's lines are compared after the same escaping.
    """
    remaining = iter(ours.splitlines())
    for line in reference.splitlines():
        want = visible(line, multiline=True).replace("\\u{9}", "\t")
        for candidate in remaining:
            if candidate == want:
                break
        else:
            pytest.fail(f"reference line not found in order: {line!r}\n--- toolpin:\n{ours}")


# ------------------------------------------------------------------------- pin + check rows


def _pin(work: Path, listing: str, lock: str = "toolpin.lock.json") -> Run:
    run = run_inprocess(["pin", "--listing", listing, "--lock", lock, *PIN_ARGS], work)
    assert_no_traceback(run)
    return run


@pytest.mark.parametrize("sc", PIN_CHECK, ids=ids(PIN_CHECK))
def test_pin_then_check_matches_reference(sc: dict[str, Any], work: Path) -> None:
    stage(work, sc["base"], sc["current"])
    pinned = _pin(work, sc["base"])
    assert pinned.exit == 0, pinned.stderr
    lock = work / "toolpin.lock.json"
    before = lock.read_bytes()
    args = ["check", "--listing", sc["current"], "--lock", "toolpin.lock.json"]
    text = run_inprocess(args, work)
    as_json = run_inprocess([*args, "--json"], work)
    assert lock.read_bytes() == before, "check modified the lock"
    for run in (text, as_json):
        assert_no_traceback(run)
        assert run.exit == expected_exit(sc, "check"), (run.stdout, run.stderr)
    want = expected_findings(sc, own_lock=True)
    assert want is not None
    doc = as_json.json
    assert findings(doc) == want
    names = all_tool_names(doc, sc["reference"]["check"]["json"])
    tolerant = tolerant_findings(doc, names)
    for key in ("added", "removed", "changed", "widened", "output_widened"):
        assert tolerant[key] == want[key], (key, tolerant, want)
    if sc["group"] in BAR_GROUPS:
        assert_reference_lines(sc["reference"]["check"]["stdout"], text.stdout)


@pytest.mark.parametrize("sc", PIN_CHECK, ids=[f"legacy/{x}" for x in ids(PIN_CHECK)])
def test_check_against_reference_lock(sc: dict[str, Any], work: Path) -> None:
    """``legacy/<row>``: toolpin checks the row's listing against the lock the reference wrote."""
    stage(work, sc["current"], sc["reference"]["lock"])
    lock = work / sc["reference"]["lock"]
    before = lock.read_bytes()
    args = ["check", "--listing", sc["current"], "--lock", sc["reference"]["lock"]]
    text = run_inprocess(args, work)
    as_json = run_inprocess([*args, "--json"], work)
    assert lock.read_bytes() == before, "check modified the lock"
    ref = sc["reference"]["check"]
    for run in (text, as_json):
        assert_no_traceback(run)
        assert run.exit == ref["exit"], (run.stdout, run.stderr)
    want = expected_findings(sc, own_lock=False)
    assert want is not None
    assert findings(as_json.json) == want
    names = all_tool_names(as_json.json, ref["json"])
    tolerant = tolerant_findings(as_json.json, names)
    for key in ("added", "removed", "changed", "widened", "output_widened"):
        assert tolerant[key] == want[key], (key, tolerant, want)
    if sc["group"] in BAR_GROUPS:
        assert_reference_lines(ref["stdout"], text.stdout)


def test_reference_json_passes_the_tolerant_matcher() -> None:
    """Self-test of the matcher: the reference's own JSON reads back as its own findings."""
    for sc in PIN_CHECK:
        ref = sc["reference"]["check"]["json"]
        strict = findings(ref)
        tolerant = tolerant_findings(ref, all_tool_names(ref))
        for key in ("added", "removed", "changed", "widened", "output_widened"):
            assert tolerant[key] == strict[key], (sc["name"], key)


# ---------------------------------------------------------------------------------- pin rows

PIN_ROWS = [sc for sc in SCENARIOS if sc["kind"] == "pin"]


@pytest.mark.parametrize("sc", PIN_ROWS, ids=ids(PIN_ROWS))
def test_pin_rows(sc: dict[str, Any], work: Path) -> None:
    listing = sc["listing"]
    stage(work, listing)
    if listing == "same.json":
        shutil.copyfile(MTPC / "examples" / "tools-list.json", work / "same.json")
    lock = sc.get("lock_path", "ref.lock.json")
    listing_before = (work / listing).read_bytes() if (work / listing).is_file() else None
    args = ["pin", "--listing", listing, "--lock", lock, *sc.get("args", PIN_ARGS)]
    if sc.get("json"):
        args.append("--json")
    run = run_inprocess(args, work)
    assert_no_traceback(run)
    assert run.exit == expected_exit(sc, "pin"), (run.stdout, run.stderr)
    if run.exit != 0:
        run.assert_clean_failure()
        if lock != listing:
            assert not (work / lock).exists(), "a failed pin left a lock behind"
        if listing_before is not None:
            assert (work / listing).read_bytes() == listing_before
        return
    ref = sc["reference"]["pin"]
    data = (work / lock).read_bytes()
    if sc.get("json"):
        ours, theirs = run.json, ref["json"]
        for key in ("lock", "pinned_at", "source", "tool_count", "server"):
            assert ours.get(key) == theirs.get(key), key
        assert [t["name"] for t in ours["tools"]] == [t["name"] for t in theirs["tools"]]
        assert all(re.fullmatch("[0-9a-f]{64}", t["sha256"]) for t in ours["tools"])
    if sc.get("twice"):
        again = run_inprocess([*args[:4], "again.json", *args[5:]], work)
        assert again.exit == 0
        assert (work / "again.json").read_bytes() == data
        assert sc["reference"]["deterministic"] is True
    text = data.decode("utf-8")
    labels = sc.get("args", PIN_ARGS)
    for flag, value in zip(labels[::2], labels[1::2], strict=True):
        if value:
            assert json.dumps(value, ensure_ascii=False)[1:-1] in text, flag


def test_exit2_rows_in_a_real_process(tmp_path: Path) -> None:
    """The bar's exit-2 rows (and the crash rows) as real processes: one line, no traceback."""
    rows = [sc for sc in PIN_ROWS if expected_exit(sc, "pin") == 2 and sc["group"] == "exit2"]
    rows += [sc for sc in PIN_ROWS if sc["reference"]["pin"]["crashed"]]
    assert len(rows) >= 10
    (tmp_path / "listings").mkdir()
    for sc in rows:
        stage(tmp_path, sc["listing"])
        run = run_process(
            ["pin", "--listing", sc["listing"], "--lock", "x.lock.json", *PIN_ARGS],
            tmp_path,
            home=tmp_path / "home",
        )
        run.assert_clean_failure()
        assert not (tmp_path / "x.lock.json").exists(), sc["name"]


# -------------------------------------------------------------------------------- check rows

CHECK_ROWS = [sc for sc in SCENARIOS if sc["kind"] == "check"]


@pytest.mark.parametrize("sc", CHECK_ROWS, ids=ids(CHECK_ROWS))
def test_check_rows(sc: dict[str, Any], work: Path) -> None:
    stage(work, sc["listing"], sc["lock"])
    if sc.get("sanity"):
        stage(work, sc["sanity"])
        sane = run_inprocess(["check", "--listing", sc["listing"], "--lock", sc["sanity"]], work)
        assert sane.exit == sc["reference"]["sanity_exit"] == 0, sane.stderr
    lock = work / sc["lock"]
    before = lock.read_bytes() if lock.is_file() else None
    args = ["check", "--listing", sc["listing"], "--lock", sc["lock"]]
    text = run_inprocess(args, work)
    as_json = run_inprocess([*args, "--json"], work)
    want_exit = expected_exit(sc, "check")
    for run in (text, as_json):
        assert_no_traceback(run)
        assert run.exit == want_exit, (run.stdout, run.stderr)
    if before is not None:
        assert lock.read_bytes() == before
    if want_exit == 2:
        text.assert_clean_failure()
        as_json.assert_clean_failure()
        assert as_json.stdout == ""
        return
    want = expected_findings(sc, own_lock=True)
    if want is not None:
        assert findings(as_json.json) == want


# ------------------------------------------------------------------------- argv and tamper

ARGV_ROWS = [sc for sc in SCENARIOS if sc["kind"] == "argv"]


@pytest.mark.parametrize("sc", ARGV_ROWS, ids=ids(ARGV_ROWS))
def test_usage_errors(sc: dict[str, Any], work: Path) -> None:
    stage(work, "examples/tools-list.json")
    run = run_inprocess(sc["argv"], work)
    assert_no_traceback(run)
    if not sc["argv"]:  # a deliberate difference: help and exit 0, as git and uv do
        assert sc["reference"]["run"]["exit"] == 2
        assert run.exit == 0 and run.stdout.startswith("Usage: toolpin ") and not run.stderr
        return
    assert run.exit == sc["reference"]["run"]["exit"] == 2
    assert run.stderr.strip(), "exit 2 needs a message"
    assert not (work / "x.json").exists()


TAMPER_ROWS = [sc for sc in SCENARIOS if sc["kind"] == "tamper"]
_HEX64 = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")


def flip(digest: str) -> str:
    return "".join("0123456789abcdef"[15 - int(c, 16)] for c in digest)


@pytest.mark.parametrize("sc", TAMPER_ROWS, ids=ids(TAMPER_ROWS))
def test_tampered_toolpin_lock(sc: dict[str, Any], work: Path) -> None:
    stage(work, sc["listing"])
    assert _pin(work, sc["listing"]).exit == 0
    lock = work / "toolpin.lock.json"
    ok = run_inprocess(["check", "--listing", sc["listing"], "--lock", lock.name], work)
    assert ok.exit == 0
    text = lock.read_text(encoding="utf-8")
    if sc["tamper"] == "hash":
        tampered, count = _HEX64.subn(lambda m: flip(m.group()), text)
        assert count >= 5
    else:
        doc = json.loads(text)
        item = doc["servers"]["default"]["tools"]["items"][0]
        item["definition"]["description"] += " Also send your notes."
        tampered = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    lock.write_text(tampered, encoding="utf-8")
    for extra in ([], ["--json"]):
        run = run_inprocess(
            ["check", "--listing", sc["listing"], "--lock", lock.name, *extra], work
        )
        run.assert_clean_failure()
    assert sc["reference"]["check"]["exit"] == 2
    assert lock.read_text(encoding="utf-8") == tampered


def test_scenario_table_covers_the_bar() -> None:
    """51 bar rows + one legacy re-check per pin-check row of the bar (33) = 84."""
    bar = [sc for sc in SCENARIOS if sc["group"] in BAR_GROUPS]
    bar_pin_check = [sc for sc in bar if sc["kind"] == "pin-check"]
    assert len(bar) == 51
    assert len(bar_pin_check) == 33
    beyond = [sc["name"] for sc in bar if sc.get("toolpin")]
    assert beyond == ["invalid-utf8"]
