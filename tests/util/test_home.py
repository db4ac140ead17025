"""The replayed check finds toolpin's directory without platformdirs, and finds the same one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolpin.util.fs import toolpin_home
from toolpin.util.home import known_home

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="only platformdirs knows there")
@pytest.mark.parametrize(
    "env",
    [
        {},
        {"HOME": "/home/someone else"},
        {"HOME": "/home/trailing/"},
        {"TOOLPIN_HOME": "~/toolpin-state"},
        {"TOOLPIN_HOME": "/var/lib/tp", "XDG_DATA_HOME": "/srv/data"},
    ],
)
def test_the_same_directory_as_platformdirs(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("TOOLPIN_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert known_home() == str(toolpin_home())


@pytest.mark.parametrize(
    "env",
    [
        {"XDG_DATA_HOME": "/srv/data"},
        {"XDG_DATA_HOME": "relative/data"},
        {"XDG_DATA_HOME": "   "},
        {"HOME": "relative"},
        {"HOME": ""},
        {"ANDROID_DATA": "/data"},
    ],
)
def test_no_answer_where_platformdirs_has_rules_of_its_own(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLPIN_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert known_home() is None
    monkeypatch.setenv("TOOLPIN_HOME", "/x")
    assert known_home() == "/x"  # toolpin's own variable is an answer everywhere


def test_no_answer_on_another_system(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLPIN_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", "/home/a")
    assert known_home() == "/home/a/.local/share/toolpin"
    for system in ("darwin", "win32"):
        monkeypatch.setattr(sys, "platform", system)
        assert known_home() is None


def test_a_replayed_check_in_the_default_home_imports_no_platformdirs(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[1] / "data" / "mtpc" / "examples"
    (tmp_path / "tools.json").write_bytes((examples / "tools-list.json").read_bytes())
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLPIN_HOME", "XDG_DATA_HOME")}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(SRC))
    run = [sys.executable, "-m", "toolpin"]
    subprocess.run(
        [*run, "pin", "--listing", "tools.json", "--lock", "t.lock"],
        cwd=tmp_path, env=env, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    argv = [*run, "check", "--listing", "tools.json", "--lock", "t.lock"]
    first = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "home" / ".local" / "share" / "toolpin" / "cache" / "check").is_dir()
    again = subprocess.run(
        [sys.executable, "-X", "importtime", *argv[1:]],
        cwd=tmp_path, env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    assert (again.returncode, again.stdout) == (0, first.stdout)
    imported = {line.split(b"|")[-1].strip() for line in again.stderr.splitlines()}
    assert b"toolpin.offline.remembered" in imported
    assert b"platformdirs" not in imported and b"toolpin.offline.check" not in imported
