"""The per-test CPU profile (``tests/_cpu_profile.py``): one line per test, in every
worker, with setup, teardown and children counted, and nothing written without the
variable. (``tests/conftest.py`` registers the same module when the variable is set.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests._cpu_profile import ENV, report

REPO = Path(__file__).resolve().parents[1]

SAMPLE = """
import subprocess
import sys
import time

import pytest


@pytest.fixture
def slow_setup():
    time.sleep(0.3)
    yield
    time.sleep(0.3)


def test_waits(slow_setup):
    pass


def test_a_child_computes():
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n
"""


def _pytest(tmp_path: Path, *args: str, profile: Path | None) -> None:
    """Run the sample in a pytest of its own (rooted in ``tmp_path``) with the plugin."""
    env = {k: v for k, v in os.environ.items() if k != ENV and not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "src")])
    if profile is not None:
        env[ENV] = str(profile)
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests._cpu_profile", "-p", "no:cacheprovider",
         *args, "test_sample.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_one_line_per_test_with_setup_teardown_and_children(tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    _pytest(tmp_path, "-n", "2", profile=profile)
    files = sorted(p.name for p in profile.iterdir())
    assert files and all(f in ("cpu-gw0.jsonl", "cpu-gw1.jsonl") for f in files), files
    lines = [json.loads(x) for f in profile.iterdir() for x in f.read_text().splitlines()]
    by_name = {line["test"].split("::", 1)[1]: line for line in lines}
    assert sorted(by_name) == [
        "test_a_child_computes",
        "test_param[1]",
        "test_param[2]",
        "test_waits",
    ]
    assert by_name["test_waits"]["wall"] >= 0.6  # the fixture's setup and teardown
    child = by_name["test_a_child_computes"]
    assert child["child_user"] + child["child_sys"] > 0.05, child
    text = report(profile, top=2)
    assert text.startswith("4 tests, ")
    assert text.splitlines()[3].endswith("test_a_child_computes")


def test_nothing_is_written_without_the_variable(tmp_path: Path) -> None:
    _pytest(tmp_path, profile=None)
    assert not list(tmp_path.glob("**/cpu-*.jsonl"))
