"""Fixtures of the team-lock tests: servers, a project, fake registries, a fake npx.

* ``servers``: raw stdio servers (``servers/raw_server.py``) driven by spec files.
* ``project``: a folder with a ``.mcp.json`` written by the test and helpers to run
  ``toolpin`` in it (in-process for ``lock``; a real subprocess for ``run``).
* ``registry``: the loopback fake npm registry and fake PyPI of ``tests/packages``
  (its ``FakeRegistry`` class, loaded from ``registry_support.py``), serving this area's packages.
* ``fake_runners``: ``npx`` and ``uvx`` scripts first on PATH that record the package spec
  they were asked to run and then run the local raw server configured for that package.
* ``everything_server``: the real ``@modelcontextprotocol/server-everything``, installed
  once with npm into ``<repo>/.cache/npm-servers`` (shared with other test areas).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from teamlock_support import (
    INTEGRITY_120,
    INTEGRITY_130,
    RAW,
    RUNNER_SCRIPT,
    SDIST_SHA,
    WHEEL_SHA,
    FakeRegistry,
    FakeRunners,
    Project,
    Registries,
    Servers,
    install_everything,
)


@pytest.fixture
def servers(tmp_path: Path) -> Servers:
    return Servers(tmp_path / "servers")


@pytest.fixture
def project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Project:
    root = tmp_path / "project"
    root.mkdir()
    home = tmp_path / "toolpin-home"
    monkeypatch.setenv("TOOLPIN_HOME", str(home))
    monkeypatch.delenv("TOOLPIN_DEBUG", raising=False)
    from toolpin.cli import _register_commands

    _register_commands()
    return Project(root=root, home=home, capsys=capsys)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[Registries]:
    """notes-mcp on npm (1.2.0, 1.3.0 = latest) and notes-server on PyPI (0.9.0 = latest)."""
    npm, pypi = FakeRegistry({}), FakeRegistry({})
    monkeypatch.setenv("TOOLPIN_NPM_REGISTRY", npm.url)
    monkeypatch.setenv("TOOLPIN_PYPI_URL", pypi.url)
    regs = Registries(npm, pypi)
    regs.serve_npm("notes-mcp", "1.2.0", INTEGRITY_120, latest=False)
    regs.serve_npm("notes-mcp", "1.3.0", INTEGRITY_130, latest=True)
    regs.serve_npm("other-mcp", "1.0.0", INTEGRITY_120, latest=True)
    regs.serve_pypi(
        "notes-server",
        "0.9.0",
        {"notes_server-0.9.0-py3-none-any.whl": WHEEL_SHA, "notes_server-0.9.0.tar.gz": SDIST_SHA},
    )
    yield regs
    npm.close()
    pypi.close()


@pytest.fixture
def fake_runners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeRunners:
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    record = tmp_path / "runner-starts.jsonl"
    conf = bin_dir / "runners.json"
    conf.write_text(json.dumps({"record": str(record), "servers": {}}), encoding="utf-8")
    for runner in ("npx", "uvx"):
        script = bin_dir / runner
        script.write_text(
            RUNNER_SCRIPT.format(python=sys.executable, raw=str(RAW)), encoding="utf-8"
        )
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return FakeRunners(bin_dir, record, conf)


@pytest.fixture(scope="session")
def everything_server() -> Path:
    """The installed ``mcp-server-everything`` (skipped where npm cannot install it)."""
    binary = install_everything()
    if binary is None:
        if os.environ.get("TOOLPIN_REQUIRE_NPM"):
            pytest.fail("could not install @modelcontextprotocol/server-everything with npm")
        pytest.skip("npm could not install @modelcontextprotocol/server-everything here")
    return binary
