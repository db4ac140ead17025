"""The commands that end with a server command (``run``, ``snapshot``, ``install-links``,
declared with ``cli/server_options.py``): a mistyped option before the command is refused
as a usage error (exit 2) naming it, never taken for the server command."""

from __future__ import annotations

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
