"""Shared helpers for the install generator tests: run the browser generator under node."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SCRIPT = HERE.parents[1] / "src" / "toolpin" / "site" / "static" / "install.js"


def run_js(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case ``{"op", "input"}`` through install.js; ``{"ok": ...}`` or ``{"error": ...}``."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is required for the install generator tests (node 20 is standard here)")
    done = subprocess.run(
        [node, str(HERE / "harness.js"), str(SCRIPT)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result
