"""Helpers of the skill tests: a machine with skills in every known place, and the CLI
run as a user runs it (a subprocess, a private HOME and TOOLPIN_HOME)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"

DEPLOY = """---
name: deploy
description: Deploy the site to staging.
---
# Deploy

Run `scripts/deploy.sh` and report the URL.
"""


def write_skill(folder: Path, text: str = DEPLOY, **files: str | bytes) -> Path:
    """A skill folder: ``SKILL.md`` and ``files`` (relative path -> text or bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    for rel, body in files.items():
        path = folder / rel.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body, encoding="utf-8")
    return folder


class Machine:
    """A HOME, a project and a TOOLPIN_HOME in a temporary folder."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.project = root / "work" / "repo"
        self.toolpin_home = root / "toolpin-home"
        self.home.mkdir(parents=True)
        self.project.mkdir(parents=True)

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.home),
            "TOOLPIN_HOME": str(self.toolpin_home),
            "PYTHONPATH": str(SRC),
            "NO_COLOR": "1",
        }

    def toolpin(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "toolpin", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
            cwd=self.project,
        )

    def pins(self) -> list[Path]:
        folder = self.toolpin_home / "skills"
        return sorted(folder.glob("*.json")) if folder.is_dir() else []


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The refusal of a command that must exit 2 with one line (plus optional advice)."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("toolpin: "), done.stderr
    return lines[0]
