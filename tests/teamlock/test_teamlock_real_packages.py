"""Real packages from the real registries: ``@modelcontextprotocol/server-memory`` through
``npx -y`` and ``mcp-server-time`` through ``uvx`` (``uv`` comes from the test extra).

One run, as a team would: ``toolpin lock`` on cold caches (empty npm and uv caches: both
runners download), ``lock --check`` and a second ``lock`` on the now warm caches,
``toolpin run --lock`` in front of each server, and ``lock --check`` under another
timezone (``mcp-server-time`` writes the local one into its tool descriptions). The
recorded versions and digests are compared with what the registries serve, asked
independently (npm's package document, PyPI's JSON API; toolpin itself reads the simple
index). Behind a TLS-intercepting proxy the CA comes from ``SSL_CERT_FILE`` /
``NODE_EXTRA_CA_CERTS`` / npm's ``cafile``, as the machine configures it.

Marked ``registries`` (and ``slow``): it needs the network. ``.ci/run`` sets
``TOOLPIN_REQUIRE_REGISTRIES=1`` so that there it fails instead of skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from teamlock_support import SRC, Client

pytestmark = [pytest.mark.registries, pytest.mark.slow]

MEMORY = "@modelcontextprotocol/server-memory"
TIME = "mcp-server-time"
BIN = Path(sys.executable).parent
TIMEOUT = "180"


def _unavailable(why: str) -> None:
    if os.environ.get("TOOLPIN_REQUIRE_REGISTRIES"):
        pytest.fail(why)
    pytest.skip(why)


def registry_json(url: str) -> dict[str, Any]:
    import httpx2

    try:
        response = httpx2.get(url, headers={"Accept": "application/json"}, timeout=30)
    except httpx2.HTTPError as exc:
        _unavailable(f"the registry cannot be reached here ({type(exc).__name__})")
    assert response.status_code == 200, url
    data: dict[str, Any] = response.json()
    return data


class Team:
    """A project folder, its own toolpin home and empty npm / uv caches."""

    def __init__(self, root: Path) -> None:
        self.root = root / "project"
        self.root.mkdir()
        self.home = root / "toolpin-home"
        self.caches = root / "caches"
        self.env = dict(os.environ)
        self.env.update(
            {
                "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                "PYTHONPATH": str(SRC),
                "TOOLPIN_HOME": str(self.home),
                "npm_config_cache": str(self.caches / "npm"),
                "UV_CACHE_DIR": str(self.caches / "uv"),
                "UV_TOOL_DIR": str(self.caches / "uv-tools"),
                # uvx runs the server on this interpreter; never downloads one.
                "UV_PYTHON": sys.executable,
                "UV_PYTHON_DOWNLOADS": "never",
                "TZ": "UTC",
            }
        )
        for name in ("TOOLPIN_NPM_REGISTRY", "TOOLPIN_PYPI_URL", "TOOLPIN_PYPI_INDEX"):
            self.env.pop(name, None)
        config = {
            "mcpServers": {
                "memory": {
                    "command": "npx",
                    "args": ["-y", MEMORY],
                    "env": {"MEMORY_FILE_PATH": str(root / "memory.jsonl")},
                },
                "time": {"command": "uvx", "args": [TIME]},
            }
        }
        (self.root / ".mcp.json").write_text(json.dumps(config, indent=2), encoding="utf-8")

    def toolpin(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "toolpin", *args],
            cwd=self.root,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

    def lock(self, name: str = "toolpin.lock") -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((self.root / name).read_text(encoding="utf-8"))
        return doc["servers"]  # type: ignore[no-any-return]

    def proxy(self, *argv: str) -> Client:
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolpin", "run", "--lock", "toolpin.lock", "--", *argv],
            cwd=self.root,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        return Client(proc)


def tool_names(entry: dict[str, Any]) -> list[str]:
    return sorted(item["name"] for item in entry["tools"]["items"])


def test_real_packages_cold_and_warm(tmp_path: Path) -> None:
    if shutil.which("npx") is None:
        _unavailable("npx is not installed")
    if not (BIN / "uvx").exists():
        pytest.fail("uvx is missing from the virtual environment (uv is in the test extra)")
    npm = registry_json("https://registry.npmjs.org/@modelcontextprotocol%2Fserver-memory/latest")
    pypi = registry_json(f"https://pypi.org/pypi/{TIME}/json")
    team = Team(tmp_path)

    # Cold caches: both runners download while the probe waits (one timeout each).
    cold = team.toolpin("lock", "--timeout", TIMEOUT)
    assert cold.returncode == 0, cold.stdout + cold.stderr
    assert (team.caches / "npm").is_dir() and (team.caches / "uv").is_dir()
    locked = team.lock()
    memory, time_ = locked["memory"]["package"], locked["time"]["package"]
    assert memory == {
        "ecosystem": "npm",
        "name": MEMORY,
        "requested": "",
        "version": npm["version"],
        "integrity": npm["dist"]["integrity"],
    }
    assert time_["version"] == pypi["info"]["version"]
    assert time_["files"] == sorted(
        ({"filename": u["filename"], "sha256": u["digests"]["sha256"]} for u in pypi["urls"]),
        key=lambda f: f["filename"],
    )
    assert f"memory: locked (9 tools, {MEMORY} {npm['version']})" in cold.stdout
    assert f"time: locked (2 tools, {TIME} {pypi['info']['version']})" in cold.stdout
    assert "create_entities" in tool_names(locked["memory"])
    assert tool_names(locked["time"]) == ["convert_time", "get_current_time"]

    # Warm caches: the check matches, and locking again records exactly the same.
    check = team.toolpin("lock", "--check", "--timeout", TIMEOUT)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "All 2 servers match toolpin.lock." in check.stdout
    warm = team.toolpin("lock", "--out", "warm.lock", "--timeout", TIMEOUT)
    assert warm.returncode == 0, warm.stdout + warm.stderr
    for name, entry in team.lock("warm.lock").items():
        assert entry["package"] == locked[name]["package"]
        assert entry["surfaceHash"] == locked[name]["surfaceHash"]

    # The proxy in front of each server, pinned to the lock (it runs the locked version).
    for argv, count in (
        (["npx", "-y", MEMORY], 9),
        (["uvx", TIME], 2),
    ):
        client = team.proxy(*argv)
        answer = client.initialize()
        assert "result" in answer, (answer, client.stderr)
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        client.request(2, "tools/list")
        listed = client.receive(2, timeout=60)
        assert len(listed["result"]["tools"]) == count
        assert client.close() == 0
        assert b"match toolpin.lock" in client.stderr

    # Another machine, another timezone: a change, explained, never accepted.
    paris = team.toolpin("lock", "--check", "--timeout", TIMEOUT, TZ="Europe/Paris")
    assert paris.returncode == 1, paris.stdout + paris.stderr
    assert "time: changed since it was locked" in paris.stdout
    assert (
        "hint: tool get_current_time differs from the lock only where it holds $TZ "
        "(here 'Europe/Paris', locked with 'UTC')"
    ) in paris.stdout
    assert '"env": {"TZ": "UTC"}' in paris.stdout
    assert "memory: matches the lock" in paris.stdout
