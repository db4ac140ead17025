"""The lookup server is imported by ``toolpin lookup`` only: never by the proxy's start path,
nor by the CLI when it registers its commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = ("mcp", "pydantic", "anyio", "uvicorn", "starlette", "toolpin.lookup")


def _loaded(code: str) -> str:
    probe = f"{code}\nimport sys\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def test_registering_the_commands_loads_no_lookup_code() -> None:
    assert _loaded("import toolpin.cli as c\nc._register_commands()") == ""


def test_the_proxy_start_path_loads_no_lookup_code() -> None:
    assert _loaded("import toolpin.__main__\nimport toolpin.proxy.start") == ""
