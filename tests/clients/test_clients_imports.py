"""The command modules and the package API stay light at import (the proxy path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parents[2] / "src"


def test_light_imports() -> None:
    code = (
        "import json, sys\n"
        "import toolpin.cli, toolpin.packages\n"
        "toolpin.cli._register_commands()\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        check=True,
    )
    loaded = set(json.loads(proc.stdout))
    for heavy in (
        "tomlkit",
        "httpx2",
        "rich",
        "mcp",
        "toolpin.clients.wrap",
        "toolpin.clients.policy",
    ):
        assert heavy not in loaded, heavy
