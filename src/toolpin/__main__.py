"""Entry point of the ``toolpin`` command (and ``python -m toolpin``).

``toolpin run`` is started by every MCP client for every wrapped server, so its start-up
time matters: a plain ``run`` command line is parsed here without importing click and
goes straight to the proxy. Everything else (including ``run --help`` and any usage
error) goes through the click CLI in :mod:`toolpin.cli`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported on the start path
if TYPE_CHECKING:
    from typing import Any

_VALUE_OPTIONS = {
    "--name": "name",
    "--timeout": "timeout",
    "--lock": "lock",
    "--url": "url",
    "--transport": "transport",
    "--log": "log",
    "--vkey": "vkey",
    "--accept-public-after": "accept_after",
}
_REPEATED = {"--header": "headers"}
_FLAGS = {"--quiet": "quiet", "--only-locked": "only_locked", "--require-public": "require_public"}


def _parse_run(args: list[str]) -> dict[str, Any] | None:
    """Options and command of ``toolpin run``; None when click should handle it."""
    options: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-"):
            break
        name, eq, value = arg.partition("=")
        if name in _VALUE_OPTIONS or name in _REPEATED:
            if not eq:
                if i + 1 >= len(args):
                    return None
                value = args[i + 1]
                i += 1
            if name in _REPEATED:
                options.setdefault(_REPEATED[name], []).append(value)
            else:
                options[_VALUE_OPTIONS[name]] = value
        elif arg in _FLAGS:
            options[_FLAGS[arg]] = True
        else:
            return None  # --help, a typo, ...: let click explain
        i += 1
    command = args[i:]
    if "timeout" in options:
        try:
            options["timeout"] = float(options["timeout"])
        except ValueError:
            return None
    if "accept_after" in options:
        days = options["accept_after"]
        if not (days.isascii() and days.isdigit() and 1 <= int(days) <= 3650):
            return None  # click says what is wrong with it
        options["accept_after"] = int(days)
    if "url" in options:
        # ``run --url URL``: a remote server, no command (click explains a mix-up).
        return None if command else options
    if not command or "headers" in options or "transport" in options:
        return None
    options["argv"] = command
    return options


def main(argv: list[str] | None = None) -> None:
    """Console entry point."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] == "run":
        parsed = _parse_run(args[1:])
        if parsed is not None:
            from toolpin.errors import ToolpinError

            try:
                from toolpin.proxy.settings import RunSettings

                url, argv = parsed.pop("url", None), parsed.pop("argv", None)
                if url is not None:
                    from toolpin.remote.start import run_remote_proxy

                    headers, transport = parsed.pop("headers", ()), parsed.pop("transport", "auto")
                    code = run_remote_proxy(
                        url, RunSettings(**parsed), headers=headers, transport=transport
                    )
                else:
                    from toolpin.proxy.start import run_proxy

                    code = run_proxy(argv, RunSettings(**parsed))
            except ToolpinError as exc:
                sys.stderr.write(f"toolpin: {exc.diagnostics()}\n")
                code = exc.exit_code
            except KeyboardInterrupt:
                code = 130
            sys.exit(code)
    if args in (["--version"], ["-V"]):  # click's own wording, without importing click
        from toolpin import __version__

        sys.stdout.write(f"toolpin, version {__version__}\n")
        sys.exit(0)
    from toolpin.cli import main as cli_main

    cli_main(args)


if __name__ == "__main__":
    main()
