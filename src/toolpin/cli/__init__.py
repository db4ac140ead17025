"""The ``toolpin`` command line: parse arguments, call the library, format output.

This package is the only place that imports ``click``. Each command module
defines its commands; :func:`_register_commands` adds them to :data:`cli`. Errors derived from
:class:`toolpin.errors.ToolpinError` are caught once, in :func:`main`.
"""

from __future__ import annotations

import os
import sys

from toolpin import __version__

TYPE_CHECKING = False  # typing is not imported on the start path (a cached `check`)
if TYPE_CHECKING:
    from typing import Any

    import click

_GROUP: list[click.Group] = []


def _group() -> click.Group:
    """The ``toolpin`` click group, built on first use (click is not imported before)."""
    if not _GROUP:
        import click

        @click.group(
            context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
        )
        @click.version_option(__version__, "-V", "--version", prog_name="toolpin")
        def cli() -> None:
            """Make MCP tool definitions tamper-evident.

            Exit codes: 0 clean, 1 drift, 2 unusable input or usage.
            """

        _GROUP.append(cli)
    return _GROUP[0]


def __getattr__(name: str) -> Any:
    if name == "cli":  # ``toolpin.cli.cli``: the group, for CliRunner and tests
        return _group()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register_commands() -> None:
    """Add every command to :data:`cli` (idempotent).

    The command modules never import this package's group: this function imports them and
    adds what they define, so no command module and ``toolpin.cli`` import each other.
    """
    cli = _group()
    if cli.commands:
        return
    from toolpin.cli import (
        crawl,
        demo,
        evidence,
        gateway,
        install,
        lock,
        log,
        login,
        lookup,
        monitor,
        offline,
        pins,
        policy,
        report,
        run,
        site,
        skills,
        snapshot,
        storage,
        witness,
        wrap,
    )

    log.log_group.add_command(crawl.crawl_cmd)
    log.log_group.add_command(evidence.lookup_cmd)
    log.log_group.add_command(evidence.trust_cmd)
    log.log_group.add_command(monitor.monitor_cmd)
    log.log_group.add_command(report.report_command)
    log.log_group.add_command(site.site_cmd)
    log.log_group.add_command(witness.witness_group)
    log.log_group.add_command(crawl.append_cmd)
    log.log_group.add_command(storage.publish_cmd)
    log.log_group.add_command(storage.serve_cmd)
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
        demo.demo_server_command,
        lock.lock_command,
        snapshot.snapshot_command,
        login.login_command,
        gateway.gateway_command,
        wrap.wrap_command,
        wrap.unwrap_command,
        policy.policy_command,
        lookup.lookup_command,
        install.install_links_command,
        skills.skills_group,
        log.log_group,
    ):
        cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Console entry point. Never lets a traceback reach the user."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["check"]:
        from toolpin.cli.fast import check_fast  # a plain `check`: no click at all

        fast = check_fast(args[1:])
        if fast is not None:
            sys.exit(fast)
    import click

    from toolpin.errors import ToolpinError  # not on the replayed check's path

    _register_commands()
    try:
        code = _group().main(args=args, prog_name="toolpin", standalone_mode=False)
    except ToolpinError as exc:
        _fail(exc.diagnostics(), exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        if _is_help_request(exc):
            # A bare `toolpin` or `toolpin log`: the help on stdout, exit 0 (as git and uv).
            click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
            sys.exit(0)
        where = exc.ctx.command_path if exc.ctx is not None else "toolpin"
        _fail(f"{exc.format_message()}\nTry '{where} --help' for help.", 2)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code if exc.exit_code else 2)
    except click.exceptions.Abort:
        _fail("aborted", 2)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except BrokenPipeError:
        _broken_pipe()
    except Exception as exc:  # pragma: no cover - a bug; still no traceback for users
        if os.environ.get("TOOLPIN_DEBUG"):
            raise
        _fail(internal_error(exc), 2)
    # Commands return their exit code (0 clean, 1 drift); None means 0.
    sys.exit(code if isinstance(code, int) else 0)


def _is_help_request(exc: BaseException) -> bool:
    """True for click's "no arguments, so show the help" (click 8.2+ raises it as a usage
    error; click 8.1 printed the help and exited 0 itself)."""
    import click

    help_error = getattr(click.exceptions, "NoArgsIsHelpError", None)
    return help_error is not None and isinstance(exc, help_error)


def internal_error(exc: BaseException) -> str:
    """The one line printed for a bug (never a traceback unless ``TOOLPIN_DEBUG``)."""
    return (
        f"internal error ({type(exc).__name__}); please report it. "
        "Set TOOLPIN_DEBUG=1 to see the traceback."
    )


def _broken_pipe() -> None:
    # The reader went away (``toolpin list | head``): nothing left to say.
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    finally:
        sys.exit(1)


def _fail(message: str, code: int) -> None:
    first, _, rest = message.partition("\n")
    sys.stderr.write(f"toolpin: {first}\n")
    if rest:
        sys.stderr.write(f"{rest}\n")
    sys.stderr.flush()
    sys.exit(code)
