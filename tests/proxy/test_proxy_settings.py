"""The verification settings of ``toolpin run`` and ``toolpin gateway``: one frozen value,
built the same by click and by the click-free start path, passed down whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import toolpin.proxy.start
import toolpin.remote.start
from toolpin.__main__ import main
from toolpin.cli.gateway import gateway_command
from toolpin.cli.run import run_command
from toolpin.proxy.settings import RunSettings

SRC = Path(__file__).resolve().parents[2] / "src"
ARGS = [
    "--name",
    "files",
    "--timeout",
    "5",
    "--quiet",
    "--lock",
    "team.lock",
    "--only-locked",
    "--log",
    "https://log.example",
    "--vkey",
    "key.vkey",
    "--require-public",
    "--accept-public-after",
    "14",
]
WANTED = RunSettings(
    name="files",
    timeout=5.0,
    quiet=True,
    lock="team.lock",
    only_locked=True,
    log="https://log.example",
    vkey="key.vkey",
    require_public=True,
    accept_after=14,
)


def test_the_settings_are_frozen() -> None:
    settings = RunSettings(name="a")
    with pytest.raises(AttributeError):
        settings.name = "b"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del settings.timeout
    assert settings == RunSettings(name="a") and settings != RunSettings(name="b")
    assert hash(settings) == hash(RunSettings(name="a"))
    assert repr(RunSettings()).startswith("RunSettings(name=None, timeout=30.0, quiet=False")
    assert settings.log_key == (None, None)
    assert WANTED.log_key == ("https://log.example", "key.vkey")


def _capture(monkeypatch: pytest.MonkeyPatch, module: Any, attr: str) -> list[tuple[Any, ...]]:
    seen: list[tuple[Any, ...]] = []

    def fake(*args: Any, **kwargs: Any) -> Any:
        seen.append((*args, kwargs))
        return 0

    monkeypatch.setattr(module, attr, fake)
    return seen


def test_click_and_the_fast_path_build_the_same_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _capture(monkeypatch, toolpin.proxy.start, "run_proxy")
    result = CliRunner().invoke(run_command, [*ARGS, "--", "node", "x.js"])
    assert result.exit_code == 0, result.output
    with pytest.raises(SystemExit) as done:
        main(["run", *ARGS, "--", "node", "x.js"])
    assert done.value.code == 0
    assert seen == [(["node", "x.js"], WANTED, {})] * 2


def test_run_url_and_the_gateway_get_the_same_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    remote = _capture(monkeypatch, toolpin.remote.start, "run_remote_proxy")
    url = "https://docs.example/mcp"
    extra = ["--header", "X-A: b", "--transport", "sse"]
    result = CliRunner().invoke(run_command, [*ARGS, "--url", url, *extra])
    assert result.exit_code == 0, result.output
    with pytest.raises(SystemExit):
        main(["run", *ARGS, "--url", url, *extra])
    wanted = (url, WANTED, {"headers": ("X-A: b",), "transport": "sse"})
    assert remote[0] == wanted
    assert remote[1] == (url, WANTED, {"headers": ["X-A: b"], "transport": "sse"})

    gateway: list[tuple[Any, ...]] = []

    def options(*args: Any, **kwargs: Any) -> tuple[None, None]:
        gateway.append((*args, kwargs))
        return None, None

    monkeypatch.setattr(toolpin.remote.start, "gateway_options", options)
    monkeypatch.setattr("toolpin.remote.gateway.run_gateway", lambda *a, **k: 0)
    result = CliRunner().invoke(
        gateway_command, ["--listen", "127.0.0.1:0", "--url", url, *ARGS, *extra]
    )
    assert result.exit_code == 0, result.output
    assert gateway == [wanted]


def test_the_start_path_imports_no_dataclasses() -> None:
    code = (
        "import sys\n"
        "import toolpin.__main__, toolpin.proxy.settings, toolpin.proxy.start\n"
        "print('dataclasses' in sys.modules, 'typing' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["False", "False"]
