"""``toolpin run`` imports every CLI module: ``toolpin.cli.lock`` must stay light."""

from __future__ import annotations

import subprocess
import sys

from teamlock_support import SRC

HEAVY = ("rich", "httpx2", "mcp", "tomlkit", "toolpin.team.lock", "toolpin.probe.stdio")


def test_the_lock_command_module_is_light_at_import() -> None:
    code = (
        f"import sys, toolpin.cli.lock\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == ""


def test_run_without_lock_does_not_import_the_team_lock() -> None:
    code = (
        "import sys\n"
        "from toolpin.__main__ import _parse_run\n"
        "import toolpin.proxy.start\n"
        "print('toolpin.team.lock' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"
