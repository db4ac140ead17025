"""Shared fixtures: a private ``TOOLPIN_HOME`` per test and the npm reference server."""

from __future__ import annotations

import compileall
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NPM_PREFIX = REPO / ".cache" / "npm-servers"
EVERYTHING = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"


@pytest.fixture(scope="session", autouse=True)
def _bytecode() -> None:
    """Compile ``src`` once, as an installed package is: the tests start the proxy as a
    subprocess many times, and ``PYTHONDONTWRITEBYTECODE`` would make each start compile
    every module again."""
    compileall.compile_dir(str(REPO / "src"), quiet=1)


@pytest.fixture
def toolpin_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh, empty pin store for one test (``TOOLPIN_HOME`` points at it)."""
    home = tmp_path / "toolpin-home"
    monkeypatch.setenv("TOOLPIN_HOME", str(home))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TOOLPIN_COLOR", raising=False)
    yield home


@pytest.fixture(scope="session")
def server_everything() -> Path:
    """The entry script of the real ``@modelcontextprotocol/server-everything`` from npm.

    Installed once into ``<repo>/.cache/npm-servers`` (gitignored) and reused. A failed
    install fails the tests that need it: nothing is skipped.
    """
    package = NPM_PREFIX / "node_modules" / "@modelcontextprotocol" / "server-everything"
    manifest = package / "package.json"
    installed = None
    if manifest.exists():
        installed = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    if installed != EVERYTHING_VERSION:
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is not on PATH; Node 20 and npm are needed for these tests")
        NPM_PREFIX.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(NPM_PREFIX),
                "--no-audit",
                "--no-fund",
                f"{EVERYTHING}@{EVERYTHING_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "npm_config_update_notifier": "false"},
        )
        if done.returncode != 0:
            pytest.fail(f"npm install of {EVERYTHING} failed:\n{done.stdout}\n{done.stderr}")
    entry = package / "dist" / "index.js"
    if not entry.exists():
        pytest.fail(f"{entry} is missing after npm install")
    return entry
