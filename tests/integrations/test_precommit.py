"""The pre-commit hooks against a temporary repository: one through `pre-commit try-repo`
(what docs/guide.md shows for trying them), one through a `.pre-commit-config.yaml` that
names this checkout at ``rev: HEAD`` (what a project adds).

Each test makes its own hook environment (a venv with toolpin built from this checkout and
installed, as pre-commit makes it for a user): ``try-repo`` always works in a temporary
store of its own, whatever ``PRE_COMMIT_HOME`` says. The store given to both keeps
pre-commit out of HOME; the configured test's environment stays in it for the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integrations.conftest import REPO
from tests.shared import run_folder

pytestmark = pytest.mark.slow


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=cwd, check=True, capture_output=True,
    )  # fmt: skip


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pre-commit's store, the same for every worker of the run."""
    return run_folder(tmp_path_factory) / "pre-commit-home"


def _try_repo(
    project: Path, store: Path, hook: str, *args: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PRE_COMMIT_HOME"] = str(store)
    env["TOOLPIN_HOME"] = str(project.parent / "toolpin-home")
    cmd = [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), hook, "--all-files"]
    return subprocess.run(
        [*cmd, *args], cwd=project, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    shutil.copy(REPO / "examples" / "tools-list.json", project / "tools-list.json")
    subprocess.run(
        [sys.executable, "-m", "toolpin", "pin", "--listing", "tools-list.json",
         "--lock", "tools.lock.json"],
        cwd=project, check=True, capture_output=True,
    )  # fmt: skip
    config = json.loads((REPO / "examples" / "mcp.json").read_text())
    (project / ".mcp.json").write_text(json.dumps(config))
    subprocess.run(
        [sys.executable, "-m", "toolpin", "lock", "--definitions-only"],
        cwd=project, check=True, capture_output=True, timeout=300,
        env={
            **os.environ,
            "TOOLPIN_HOME": str(tmp_path / "toolpin-home"),
            # the example config runs `python3 -m toolpin.demo.server`: this interpreter's
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
    )  # fmt: skip
    _git(project, "add", ".")
    _git(project, "commit", "-qm", "init")
    return project


def _run_configured(project: Path, store: Path) -> subprocess.CompletedProcess[str]:
    head = subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=REPO, text=True).strip()
    (project / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {REPO}\n"
        f"    rev: {head}\n"
        "    hooks:\n"
        "      - id: toolpin-check\n"
        "        args: [--listing, tools-list.json, --lock, tools.lock.json]\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PRE_COMMIT_HOME"] = str(store)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "toolpin-check", "--all-files"],
        cwd=project, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def test_the_lock_check_hook_passes_on_an_unchanged_project(
    project: Path, pre_commit_home: Path
) -> None:
    done = _try_repo(project, pre_commit_home, "toolpin-lock-check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout


def test_the_check_hook_passes_then_fails_on_drift(project: Path, pre_commit_home: Path) -> None:
    done = _run_configured(project, pre_commit_home)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.copy(REPO / "examples" / "tools-list.changed.json", project / "tools-list.json")
    done = _run_configured(project, pre_commit_home)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "result: drift" in done.stdout
