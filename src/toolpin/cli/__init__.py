"""The ``toolpin`` command line: parse arguments, call the library, format output.

This package is the only place that imports ``click``. Each command module
defines its commands; :data:`cli` knows them by name (:data:`_COMMANDS`) and imports a
command's module only when that command is looked up, so a command line imports the command
it runs and not the others; :func:`_register_commands` imports them all. Errors derived from
:class:`toolpin.errors.ToolpinError` are caught once, in :func:`main`.
"""

from __future__ import annotations

import os
import sys

from toolpin import __version__

TYPE_CHECKING = False  # typing is not imported on the start path (a cached `check`)
if TYPE_CHECKING:
    from typing import Any

    from toolpin.cli._lazy import LazyGroup

_GROUP: list[LazyGroup] = []


def _group() -> LazyGroup:
    """The ``toolpin`` click group, built on first use (click is not imported before)."""
    if not _GROUP:
        import click

        from toolpin.cli._lazy import LazyGroup

        @click.group(
            cls=LazyGroup,
            lazy=_COMMANDS,
            context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
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


_COMMANDS = {
    "pin": "toolpin.cli.offline:pin",
    "check": "toolpin.cli.offline:check",
    "hash": "toolpin.cli.offline:hash_command",
    "run": "toolpin.cli.run:run_command",
    "list": "toolpin.cli.pins:list_command",
    "show": "toolpin.cli.pins:show_command",
    "review": "toolpin.cli.pins:review_command",
    "approve": "toolpin.cli.pins:approve_command",
    "forget": "toolpin.cli.pins:forget_command",
    "verify": "toolpin.cli.pins:verify_command",
    "demo": "toolpin.cli.demo:demo_command",
    "demo-server": "toolpin.cli.demo:demo_server_command",
    "lock": "toolpin.cli.lock:lock_command",
    "snapshot": "toolpin.cli.snapshot:snapshot_command",
    "login": "toolpin.cli.login:login_command",
    "gateway": "toolpin.cli.gateway:gateway_command",
    "wrap": "toolpin.cli.wrap:wrap_command",
    "unwrap": "toolpin.cli.wrap:unwrap_command",
    "policy": "toolpin.cli.policy:policy_command",
    "lookup": "toolpin.cli.lookup:lookup_command",
    "install-links": "toolpin.cli.install:install_links_command",
    "skills": "toolpin.cli.skills:skills_group",
    "log": "toolpin.cli.log:log_group",
}
"""Every command of :data:`cli`: its name and where it is defined (``module:attribute``).
The ``log`` group names its own commands the same way (``toolpin.cli.log``)."""


def _register_commands() -> None:
    """Add every command to :data:`cli`, and every ``log`` command to its group (idempotent).

    A command line needs none of this: :func:`main` imports only the command it runs (the
    group is a :class:`toolpin.cli._lazy.LazyGroup`). The command modules never import this
    package's group, so no command module and ``toolpin.cli`` import each other.
    """
    _group().load_all()


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
