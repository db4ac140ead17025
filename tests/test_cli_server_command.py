"""The commands that end with a server command (``run``, ``snapshot``, ``install-links``,
declared with ``cli/server_options.py``): a mistyped option before the command is refused
as a usage error (exit 2) naming it, never taken for the server command. And the
``--concurrency`` the commands that talk to many servers share (``lock``, ``log crawl``)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from toolpin.cli import _register_commands, cli


@pytest.mark.parametrize("command", ["run", "snapshot", "install-links"])
def test_a_mistyped_option_is_refused_not_run(command: str) -> None:
    _register_commands()
    result = CliRunner().invoke(cli, [command, "--nmae", "files", "--", "npx", "srv"])
    assert result.exit_code == 2, result.output
    assert "no such option: --nmae (put the server command after --)" in result.output


@pytest.mark.parametrize("command", ["run", "snapshot", "install-links"])
@pytest.mark.parametrize(
    "words",
    [["--", "npx", "-y", "srv", "--name", "x"], ["npx", "-y", "srv", "--name", "x"]],
)
def test_options_after_the_server_command_are_its_own(command: str, words: list[str]) -> None:
    # allow_interspersed_args=False: from the first word of the command on, nothing is
    # taken for toolpin's options (its --name included), with or without the `--`.
    _register_commands()
    context = cli.commands[command].make_context(command, list(words))
    assert context.params["command"] == ("npx", "-y", "srv", "--name", "x")
    assert context.params["name"] is None


@pytest.mark.parametrize(("path", "most"), [(["lock"], 32), (["log", "crawl"], 256)])
def test_concurrency_is_4_unless_given_from_1_to_the_commands_cap(
    path: list[str], most: int
) -> None:
    _register_commands()
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    assert command.make_context(path[-1], []).params["concurrency"] == 4
    for given in (1, most):
        context = command.make_context(path[-1], ["--concurrency", str(given)])
        assert context.params["concurrency"] == given
    for refused in (0, most + 1):
        result = CliRunner().invoke(cli, [*path, "--concurrency", str(refused)])
        assert result.exit_code == 2, result.output
        assert f"{refused} is not in the range 1<=x<={most}" in result.output
