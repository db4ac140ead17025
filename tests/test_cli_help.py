"""Every command's help: renders, keeps each example on one unbroken line at any width
(click reflows a paragraph unless it is a ``\\b`` block), points at what is really there,
and states defaults that are true. A bare group prints its help and exits 0."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from toolpin.cli import _register_commands, cli

WIDTHS = (60, 80, 100)


def _commands() -> Iterator[tuple[list[str], click.Command]]:
    _register_commands()

    def walk(command: click.Command, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            for name in sorted(command.commands):
                yield from walk(command.commands[name], [*path, name])

    yield from walk(cli, [])


COMMANDS = list(_commands())
IDS = [" ".join(path) or "toolpin" for path, _ in COMMANDS]


def _help(path: list[str], width: int) -> str:
    result = CliRunner().invoke(cli, [*path, "--help"], terminal_width=width)
    assert result.exit_code == 0, result.output
    return result.output


def _examples(command: click.Command) -> list[str]:
    """The lines of a command's help text that are commands to type (``toolpin ...``)."""
    text = command.help or ""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("toolpin ")]


def test_the_examples_are_found() -> None:
    # The checks below look at these; finding none would make them pass vacuously.
    found = {" ".join(path): _examples(command) for path, command in COMMANDS}
    assert sum(len(e) for e in found.values()) >= 6
    for name in ("run", "install-links", "gateway", "login", "log report"):
        assert found[name], name


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_examples_stay_whole_at_every_width(path: list[str], command: click.Command) -> None:
    for width in WIDTHS:
        lines = [line.strip() for line in _help(path, width).splitlines()]
        for example in _examples(command):
            assert example in lines, f"`{example}` is reflowed at width {width}"


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_option_help_points_only_up(path: list[str], command: click.Command) -> None:
    # Options come last in a help page: nothing they say can be "below".
    for param in command.params:
        text = getattr(param, "help", None) or ""
        assert "below" not in text, (param.name, text)


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_a_stated_literal_default_is_the_real_one(path: list[str], command: click.Command) -> None:
    for param in command.params:
        if not isinstance(param, click.Option) or param.is_flag or param.multiple:
            continue
        text = param.help or ""
        stated = re.search(r"\(default: ([^)]*)\)", text)
        if stated is None or param.default is None:
            continue
        assert str(param.default) in stated.group(1), (param.name, text, param.default)


def _option(path: list[str], name: str) -> click.Option:
    command = {" ".join(p): c for p, c in COMMANDS}[" ".join(path)]
    for param in command.params:
        if isinstance(param, click.Option) and name in param.opts:
            return param
    raise AssertionError(f"{' '.join(path)} has no {name}")


def test_log_site_reads_the_state_log_crawl_writes(tmp_path: Path) -> None:
    from toolpin.crawl.runner import STATE_SUFFIX, default_state_path, existing_state_path
    from toolpin.crawl.state import CrawlState

    for path in (["log", "site"], ["log", "crawl"]):
        assert f"<log name>{STATE_SUFFIX}" in (_option(path, "--state").help or "")
    log = tmp_path / "public-log"
    log.mkdir()
    assert existing_state_path(log, "example.com/log") is None
    with CrawlState.open(default_state_path(log)):
        pass
    assert existing_state_path(log, "example.com/log") == tmp_path / f"public-log{STATE_SUFFIX}"


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG layout")
def test_log_crawl_cache_dir_default_is_what_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolpin.crawl.caches import default_cache_dir

    for name in ("TOOLPIN_HOME", "TOOLPIN_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert "~/.cache/toolpin" in (_option(["log", "crawl"], "--cache-dir").help or "")
    assert default_cache_dir() == tmp_path / ".cache" / "toolpin" / "crawl"


@pytest.mark.parametrize("args", [[], ["log"]], ids=["toolpin", "toolpin log"])
def test_a_bare_group_prints_its_help_and_exits_0(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolpin", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stderr == ""
    assert done.stdout.startswith(f"Usage: {' '.join(['toolpin', *args])} [OPTIONS] COMMAND")
    assert "Commands:" in done.stdout


def _cli_modules_after(args: list[str]) -> set[str]:
    """The ``toolpin.cli`` modules a ``toolpin ARGS`` process has imported when it exits."""
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.__stderr__.write('MODULES ' + ' '.join(sorted("
        "m for m in sys.modules if m.startswith('toolpin.cli.'))) + '\\n'))\n"
        "from toolpin.__main__ import main\n"
        f"main({args!r})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("MODULES")]
    assert line, done.stderr
    return set(line[-1].split()[1:])


def test_a_command_line_imports_only_the_command_it_runs() -> None:
    in_pin = _cli_modules_after(["pin", "--help"])
    assert "toolpin.cli.offline" in in_pin
    assert not {"toolpin.cli.lock", "toolpin.cli.crawl", "toolpin.cli.witness"} & in_pin
    assert "toolpin.cli.log" not in in_pin
    in_log = _cli_modules_after(["log", "verify", "--help"])
    assert "toolpin.cli.log" in in_log
    assert not {"toolpin.cli.crawl", "toolpin.cli.witness", "toolpin.cli.offline"} & in_log
    # The help lists every command, so it imports them all.
    in_help = _cli_modules_after(["--help"]) | _cli_modules_after(["log", "--help"])
    assert {"toolpin.cli.lock", "toolpin.cli.crawl", "toolpin.cli.witness"} <= in_help


def test_every_named_command_is_the_command_of_that_name() -> None:
    from toolpin.cli import _COMMANDS
    from toolpin.cli.log import _LOG_COMMANDS

    _register_commands()
    assert sorted(cli.commands) == sorted(_COMMANDS)
    log = cli.commands["log"]
    assert isinstance(log, click.Group)
    assert set(_LOG_COMMANDS) <= set(log.commands)
    for table, group in ((_COMMANDS, cli), (_LOG_COMMANDS, log)):
        for name in table:
            assert group.commands[name].name == name
