"""Golden files: the exact text and ``--json`` output of ``pin`` and ``check`` on the
example listings of mcp-tool-pin-check (tests/data/mtpc/examples), with toolpin's own
lock and with the lock the reference wrote.

Regenerate after an intended change with ``TOOLPIN_UPDATE_GOLDEN=1 pytest tests/offline``
and review the diff like code.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from offline_support import GOLDEN, MTPC, PIN_ARGS, run_inprocess

UPDATE = os.environ.get("TOOLPIN_UPDATE_GOLDEN") == "1"
CASES = {
    "unchanged-roundtrip": ("tools-list.json", "tools-list.json"),
    "examples-changed": ("tools-list.json", "tools-list.changed.json"),
    "output-enum-widened": ("tools-list.output.json", "tools-list.output-enum-widened.json"),
    "identity-version-info": ("tools-list.identity.json", "tools-list.identity-version.json"),
    "identity-protocol-info": ("tools-list.identity.json", "tools-list.identity-protocol.json"),
    "identity-name-drift": ("tools-list.identity.json", "tools-list.identity-name.json"),
    "identity-removed-info": ("tools-list.identity.json", "tools-list.json"),
    "identity-added-info": ("tools-list.json", "tools-list.identity.json"),
}


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLPIN_HOME", str(tmp_path / "home"))
    for path in (MTPC / "examples").glob("*.json"):
        shutil.copyfile(path, tmp_path / path.name)
    return tmp_path


def compare(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"missing golden file {path.name}; run with TOOLPIN_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{name} differs from its golden file"


@pytest.mark.parametrize("listing", ["tools-list.json", "tools-list.identity.json"])
def test_pin_output(work: Path, listing: str) -> None:
    stem = listing.removesuffix(".json")
    for extra, suffix in (([], "txt"), (["--json"], "json")):
        run = run_inprocess(
            ["pin", "--listing", listing, "--lock", "x.lock", *PIN_ARGS, *extra], work
        )
        assert run.exit == 0 and run.stderr == ""
        compare(f"pin.{stem}.{suffix}", run.stdout)
    compare(f"lock.{stem}.json", (work / "x.lock").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", list(CASES))
def test_check_output(work: Path, name: str) -> None:
    base, current = CASES[name]
    assert run_inprocess(["pin", "--listing", base, "--lock", "x.lock", *PIN_ARGS], work).exit == 0
    shutil.copyfile(MTPC / "reference" / f"{name}.lock.json", work / "ref.lock")
    for lock, prefix in (("x.lock", "check"), ("ref.lock", "legacy")):
        for extra, suffix in (([], "txt"), (["--json"], "json")):
            run = run_inprocess(["check", "--listing", current, "--lock", lock, *extra], work)
            assert run.exit in (0, 1) and run.stderr == ""
            compare(f"{prefix}.{name}.{suffix}", run.stdout)


def test_no_stale_golden_files() -> None:
    expected = {
        f"pin.{s}.{x}" for s in ("tools-list", "tools-list.identity") for x in ("txt", "json")
    }
    expected |= {f"lock.{s}.json" for s in ("tools-list", "tools-list.identity")}
    expected |= {
        f"{p}.{n}.{x}" for p in ("check", "legacy") for n in CASES for x in ("txt", "json")
    }
    assert {p.name for p in GOLDEN.iterdir()} == expected
