"""A plain ``check`` of exactly the bytes this machine already checked and found unchanged
prints the remembered output (toolpin.offline.remembered) without importing the checker:
byte for byte what the full check printed, per output form, and never for other bytes,
``--no-cache``, or a record directory others can write to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from offline_support import MTPC, SRC, run_inprocess

EXAMPLES = MTPC / "examples"


@pytest.fixture
def pinned(tmp_path: Path, toolpin_home: Path) -> Path:
    for name in ("tools-list.json", "tools-list.changed.json"):
        (tmp_path / name).write_bytes((EXAMPLES / name).read_bytes())
    argv = ["pin", "--listing", "tools-list.json", "--lock", "t.lock"]
    assert run_inprocess(argv, tmp_path).exit == 0
    return tmp_path


def _outputs(home: Path) -> list[str]:
    directory = home / "cache" / "check"
    return sorted(p.name.split(".", 1)[1] for p in directory.glob("*.out"))


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_replayed_output_is_the_checked_output(
    pinned: Path, toolpin_home: Path, extra: list[str]
) -> None:
    argv = ["check", "--listing", "tools-list.json", "--lock", "t.lock", *extra]
    cold = run_inprocess(["check", "--no-cache", *argv[1:]], pinned)
    first = run_inprocess(argv, pinned)  # full check: remembers verdict and output
    assert _outputs(toolpin_home) == ["json.out" if extra else "text.out"]
    import toolpin.offline.check as offline_check

    calls = []
    real = offline_check.check
    offline_check.check = lambda *a, **k: calls.append(1) or real(*a, **k)  # type: ignore[assignment]
    try:
        again = run_inprocess(argv, pinned)
    finally:
        offline_check.check = real  # type: ignore[assignment]
    assert calls == []  # replayed, the checker never ran
    assert (again.exit, again.stdout, again.stderr) == (first.exit, first.stdout, first.stderr)
    assert (again.exit, again.stdout) == (cold.exit, cold.stdout)


def test_other_bytes_no_cache_and_a_foreign_directory_are_never_replayed(
    pinned: Path, toolpin_home: Path
) -> None:
    argv = ["check", "--listing", "tools-list.json", "--lock", "t.lock"]
    assert run_inprocess(argv, pinned).exit == 0
    listing = pinned / "tools-list.json"
    listing.write_bytes((EXAMPLES / "tools-list.changed.json").read_bytes())
    drift = run_inprocess(argv, pinned)
    assert drift.exit == 1 and "changed" in drift.stdout
    assert len(_outputs(toolpin_home)) == 1  # drift is never remembered
    listing.write_bytes((EXAMPLES / "tools-list.json").read_bytes())
    from toolpin.offline.remembered import replay

    assert replay([str(listing)], str(pinned / "t.lock"), None, "text") == 0
    assert replay([str(listing)], str(pinned / "t.lock"), "other", "text") is None
    assert replay([str(listing)], str(pinned / "t.lock"), None, "json") is None
    assert replay(["-"], str(pinned / "t.lock"), None, "text") is None
    assert replay([str(pinned)], str(pinned / "t.lock"), None, "text") is None
    directory = toolpin_home / "cache" / "check"
    os.chmod(directory, 0o770)
    assert replay([str(listing)], str(pinned / "t.lock"), None, "text") is None
    os.chmod(directory, 0o700)
    (verdict,) = directory.glob("*.json")
    good = verdict.read_bytes()
    verdict.write_bytes(good.replace(b"}", b" }", 1))  # another verdict record: no replay
    assert replay([str(listing)], str(pinned / "t.lock"), None, "text") is None
    verdict.write_bytes(good)
    assert replay([str(listing)], str(pinned / "t.lock"), None, "text") == 0
    (output,) = directory.glob("*.out")
    output.write_bytes(b"junk")
    assert replay([str(listing)], str(pinned / "t.lock"), None, "text") is None
    assert run_inprocess(argv, pinned).exit == 0  # the full path, and a good record again
    assert replay([str(listing)], str(pinned / "t.lock"), None, "text") == 0


def _imported_by(argv: list[str], cwd: Path, home: Path) -> set[str]:
    """The modules a successful ``toolpin ARGV`` process imported (``-X importtime``)."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "TOOLPIN_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "toolpin", *argv],
        cwd=cwd, env=env, capture_output=True, timeout=60, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines()}


def test_a_replayed_check_imports_only_the_replayer(pinned: Path, toolpin_home: Path) -> None:
    argv = ["check", "--listing", "tools-list.json", "--lock", "t.lock"]
    assert run_inprocess(argv, pinned).exit == 0
    imported = _imported_by(argv, pinned, toolpin_home)
    assert "toolpin.offline.remembered" in imported
    for heavy in ("toolpin.offline.check", "dataclasses", "typing", "pathlib", "json"):
        assert heavy not in imported, heavy
    assert "_hashlib" not in imported  # small files: the interpreter's own SHA-256
    env = {**os.environ, "PYTHONPATH": str(SRC), "TOOLPIN_HOME": str(toolpin_home)}
    assert json.loads(
        subprocess.run(
            [sys.executable, "-m", "toolpin", *argv, "--json"],
            cwd=pinned, env=env, capture_output=True, timeout=60, text=True,
        ).stdout
    )["ok"] is True  # fmt: skip


@pytest.mark.parametrize("size", [0, 1, 63, 64, 1000, 256 * 1024 - 1, 256 * 1024, 700_000])
def test_each_sha256_source_is_the_same_function(size: int) -> None:
    import hashlib

    from toolpin.offline.remembered import sha256_function

    data = os.urandom(size)
    assert sha256_function(size)(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert sha256_function()(data).digest() == hashlib.sha256(data).digest()


def test_a_large_check_is_replayed_with_openssl(tmp_path: Path, toolpin_home: Path) -> None:
    tools = [
        {"name": f"tool_{i}", "description": "x" * 600, "inputSchema": {"type": "object"}}
        for i in range(600)
    ]
    listing = tmp_path / "big.json"
    listing.write_text(json.dumps({"tools": tools}))
    assert listing.stat().st_size > 256 * 1024
    assert run_inprocess(["pin", "--listing", "big.json", "--lock", "b.lock"], tmp_path).exit == 0
    argv = ["check", "--listing", "big.json", "--lock", "b.lock"]
    assert run_inprocess(argv, tmp_path).exit == 0
    imported = _imported_by(argv, tmp_path, toolpin_home)
    assert "toolpin.offline.remembered" in imported and "_hashlib" in imported
    assert "toolpin.offline.check" not in imported
