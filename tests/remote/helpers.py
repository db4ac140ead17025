"""Shared pieces of the remote proxy tests: the SDK ``Client`` on toolpin's stdio side."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters

from tests.proxy.harness import proxy_env

HERE = Path(__file__).resolve().parent
BROWSER = HERE / "browser.py"


def through_toolpin(
    home: Path, url: str, *options: str, stderr: Path | None = None, **env: str
) -> StdioServerParameters:
    """``toolpin run --url URL`` as an MCP client starts it (stderr kept in ``stderr``)."""
    argv = [sys.executable, "-m", "toolpin", "run", *options, "--url", url]
    if stderr is not None:
        command = " ".join(shlex.quote(a) for a in argv) + f" 2>>{shlex.quote(str(stderr))}"
        return StdioServerParameters(
            command="/bin/sh", args=["-c", f"exec {command}"], env=proxy_env(home, **env)
        )
    return StdioServerParameters(command=argv[0], args=argv[1:], env=proxy_env(home, **env))


def browser_env(record: Path) -> dict[str, str]:
    """``TOOLPIN_BROWSER`` set to the scripted browser, recording into ``record``."""
    return {
        "TOOLPIN_BROWSER": f"{shlex.quote(sys.executable)} {BROWSER} {shlex.quote(str(record))}"
    }


def audit_events(home: Path) -> list[str]:
    path = home / "audit.log"
    if not path.exists():
        return []
    return [json.loads(x)["event"] for x in path.read_text().splitlines()]


def pin_files(home: Path) -> list[Path]:
    return sorted((home / "pins").glob("*.json"))


def only_pin(home: Path) -> dict[str, Any]:
    files = pin_files(home)
    assert len(files) == 1, files
    data: dict[str, Any] = json.loads(files[0].read_text())
    return data
