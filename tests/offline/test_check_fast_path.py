"""A plain ``toolpin check`` runs without click (start-up is most of a cached check) and
says byte for byte what the click command says, exit code and errors included."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from offline_support import MTPC, SRC, run_inprocess

from toolpin.cli.fast import parse_check

EXAMPLES = MTPC / "examples"


def _click(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """The same command line through the click command only."""
    from toolpin.cli import _group, _register_commands
    from toolpin.errors import ToolpinError

    _register_commands()
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = _group().main(args=argv, prog_name="toolpin", standalone_mode=False)
            except ToolpinError as exc:
                first, _, rest = exc.diagnostics().partition("\n")
                err.write(f"toolpin: {first}\n" + (f"{rest}\n" if rest else ""))
                code = exc.exit_code
    finally:
        os.chdir(old)
    return int(code or 0), out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "extra",
    [
        ["--listing", "tools-list.json"],
        ["--listing", "tools-list.changed.json"],
        ["--listing=tools-list.changed.json", "--json"],
        ["--listing", "tools-list.output-enum-widened.json", "--no-cache", "--json"],
        ["--listing", "missing.json"],
        ["--listing", "tools-list.json", "--server", "nope"],
    ],
)
def test_fast_path_says_what_click_says(
    extra: list[str], tmp_path: Path, toolpin_home: Path
) -> None:
    for name in (
        "tools-list.json",
        "tools-list.changed.json",
        "tools-list.output-enum-widened.json",
    ):
        (tmp_path / name).write_bytes((EXAMPLES / name).read_bytes())
    assert (
        run_inprocess(["pin", "--listing", "tools-list.json", "--lock", "t.lock"], tmp_path).exit
        == 0
    )
    argv = ["check", *extra, "--lock", "t.lock"]
    assert parse_check(argv[1:]) is not None
    fast = run_inprocess(argv, tmp_path)
    assert (fast.exit, fast.stdout, fast.stderr) == _click(argv, tmp_path)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["--listing", "a"],
        ["--lock", "b"],
        ["--listing", "a", "--lock", "b", "--sarif", "c"],
        ["--listing", "a", "--lock", "b", "--lock", "c"],
        ["--listing", "--lock", "b"],
        ["--bogus"],
    ],
)
def test_anything_else_is_left_to_click(args: list[str]) -> None:
    assert parse_check(args) is None


def test_a_plain_check_never_imports_click(tmp_path: Path) -> None:
    listing = tmp_path / "tools-list.json"
    listing.write_bytes((EXAMPLES / "tools-list.json").read_bytes())
    env = {**os.environ, "PYTHONPATH": str(SRC), "TOOLPIN_HOME": str(tmp_path / "home")}
    argv = [sys.executable, "-X", "importtime", "-m", "toolpin"]
    pinned = subprocess.run(
        [*argv[:1], "-m", "toolpin", "pin", "--listing", str(listing), "--lock", "t.lock"],
        cwd=tmp_path, env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    assert pinned.returncode == 0
    for extra in ([], ["--json"]):
        done = subprocess.run(
            [*argv, "check", "--listing", str(listing), "--lock", "t.lock", *extra],
            cwd=tmp_path, env=env, capture_output=True, timeout=60, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
        assert "click" not in imported and "toolpin.cli.offline" not in imported
    version = subprocess.run(
        [*argv, "--version"], cwd=tmp_path, env=env, capture_output=True, timeout=60, text=True
    )
    assert version.stdout == "toolpin, version " + __import__("toolpin").__version__ + "\n"
    assert "click" not in {line.split("|")[-1].strip() for line in version.stderr.splitlines()}
