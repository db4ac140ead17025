"""The commands that end with a server command (``run``, ``snapshot``, ``install-links``,
declared with ``cli/server_options.py``): a mistyped option before the command is refused
as a usage error (exit 2) naming it, never taken for the server command. And the
``--concurrency`` the commands that talk to many servers share (``lock``, ``log crawl``)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from toolpin.cli import _register_commands, cli


def _context(path: list[str], args: list[str]) -> click.Context:
    """The context of ``toolpin PATH ARGS`` as the command line makes it: under the root
    group's (a command's help option is cached at its first context, so a context made
    without the group's settings would leave it ``--help`` alone for every later test in
    the process, docs/cli.md's rendering included)."""
    _register_commands()
    parent = click.Context(cli, info_name="toolpin", **cli.context_settings)
    command: click.Command = cli
    for name in path[:-1]:
        assert isinstance(command, click.Group)
        command = command.commands[name]
        parent = click.Context(command, info_name=name, parent=parent)
    assert isinstance(command, click.Group)
    return command.commands[path[-1]].make_context(path[-1], list(args), parent=parent)


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
    context = _context([command], words)
    assert context.params["command"] == ("npx", "-y", "srv", "--name", "x")
    assert context.params["name"] is None


@pytest.mark.parametrize(("path", "most"), [(["lock"], 32), (["log", "crawl"], 256)])
def test_concurrency_is_4_unless_given_from_1_to_the_commands_cap(
    path: list[str], most: int
) -> None:
    assert _context(path, []).params["concurrency"] == 4
    for given in (1, most):
        assert _context(path, ["--concurrency", str(given)]).params["concurrency"] == given
    for refused in (0, most + 1):
        result = CliRunner().invoke(cli, [*path, "--concurrency", str(refused)])
        assert result.exit_code == 2, result.output
        assert f"{refused} is not in the range 1<=x<={most}" in result.output


def test_making_a_context_leaves_the_help_option_as_the_command_line_has_it() -> None:
    _context(["lock"], [])
    _context(["run"], ["--", "srv"])
    for name in ("lock", "run"):
        ctx = click.Context(cli, info_name="toolpin", **cli.context_settings)
        assert "-h" in cli.commands[name].get_help(click.Context(cli.commands[name], parent=ctx))
