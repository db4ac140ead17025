"""The ``toolpin`` command line: parse arguments, call the library, format output.

This package is the only place that imports ``click`` and ``rich``. Each command module
defines its commands; :func:`_register_commands` adds them to :data:`cli`. Errors derived from
:class:`toolpin.errors.ToolpinError` are caught once, in :func:`main`.
"""

from __future__ import annotations

import os
import sys

import click

from toolpin import __version__
from toolpin.errors import ToolpinError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", prog_name="toolpin")
def cli() -> None:
    """Make MCP tool definitions tamper-evident.

    Exit codes: 0 clean, 1 drift, 2 unusable input or usage.
    """


def _register_commands() -> None:
    """Add every command to :data:`cli` (idempotent).

    The command modules never import this package's group: this function imports them and
    adds what they define, so no command module and ``toolpin.cli`` import each other.
    """
    if cli.commands:
        return
    from toolpin.cli import crawl, demo, lock, log, offline, pins, policy, run, site, wrap

    log.log_group.add_command(crawl.crawl_cmd)
    log.log_group.add_command(site.site_cmd)
    for command in (
        offline.pin,
        offline.check,
        offline.hash_command,
        run.run_command,
        pins.list_command,
        pins.show_command,
        pins.review_command,
        pins.approve_command,
        pins.forget_command,
        pins.verify_command,
        demo.demo_command,
        lock.lock_command,
        wrap.wrap_command,
        wrap.unwrap_command,
        policy.policy_command,
        log.log_group,
    ):
        cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Console entry point. Never lets a traceback reach the user."""
    _register_commands()
    try:
        code = cli.main(args=argv, prog_name="toolpin", standalone_mode=False)
    except ToolpinError as exc:
        _fail(exc.diagnostics(), exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "toolpin"
        _fail(f"{exc.format_message()}\nTry '{where} --help' for help.", 2)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code if exc.exit_code else 2)
    except click.exceptions.Abort:
        _fail("aborted", 2)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except BrokenPipeError:
        # The reader went away (``toolpin list | head``): nothing left to say.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        finally:
            sys.exit(1)
    except Exception as exc:  # pragma: no cover - a bug; still no traceback for users
        if os.environ.get("TOOLPIN_DEBUG"):
            raise
        _fail(
            f"internal error ({type(exc).__name__}); please report it. "
            "Set TOOLPIN_DEBUG=1 to see the traceback.",
            2,
        )
    # Commands return their exit code (0 clean, 1 drift); None means 0.
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> None:
    first, _, rest = message.partition("\n")
    click.echo(f"toolpin: {first}", err=True)
    if rest:
        click.echo(rest, err=True)
    sys.exit(code)
