"""Shared fixtures: a private ``TOOLPIN_HOME`` per test and the npm reference servers."""

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
# The reference servers and the TypeScript SDK client, at the versions the tests expect.
NPM_PACKAGES = {
    EVERYTHING: EVERYTHING_VERSION,
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@modelcontextprotocol/server-sequential-thinking": "2026.8.31",
    "@modelcontextprotocol/sdk": "1.32.2",
}


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
    why = npm_install({EVERYTHING: EVERYTHING_VERSION})
    if why is not None:
        pytest.fail(why)
    package = NPM_PREFIX / "node_modules" / EVERYTHING
    entry = package / "dist" / "index.js"
    if not entry.exists():
        pytest.fail(f"{entry} is missing after npm install")
    return entry


def npm_install(packages: dict[str, str]) -> str | None:
    """Install ``packages`` (name: version) into ``<repo>/.cache/npm-servers`` unless they
    are there at those versions, under the lock the team-lock tests take too; ``None``
    when done, otherwise why not."""
    from filelock import FileLock

    def missing() -> list[str]:
        out = []
        for name, version in packages.items():
            manifest = NPM_PREFIX / "node_modules" / name / "package.json"
            if (
                not manifest.exists()
                or json.loads(manifest.read_text("utf-8")).get("version") != version
            ):
                out.append(f"{name}@{version}")
        return out

    if not missing():
        return None
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not on PATH; Node 20 and npm are needed for these tests"
    NPM_PREFIX.mkdir(parents=True, exist_ok=True)
    with FileLock(str(NPM_PREFIX / ".install.lock"), timeout=600):
        specs = missing()
        if not specs:
            return None
        done = subprocess.run(
            [npm, "install", "--prefix", str(NPM_PREFIX), "--no-audit", "--no-fund", *specs],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "npm_config_update_notifier": "false"},
        )
        if done.returncode != 0 or missing():
            return f"npm install of {' '.join(specs)} failed:\n{done.stdout}\n{done.stderr}"
    return None


@pytest.fixture(scope="session")
def npm_packages() -> Path:
    """``<repo>/.cache/npm-servers`` with every package of ``NPM_PACKAGES`` installed.

    Where npm cannot install them the tests that need them are skipped, except under
    ``TOOLPIN_REQUIRE_NPM=1`` (``.ci/run`` sets it), where they fail.
    """
    why = npm_install(NPM_PACKAGES)
    if why is not None:
        if os.environ.get("TOOLPIN_REQUIRE_NPM"):
            pytest.fail(why)
        pytest.skip(why)
    return NPM_PREFIX
