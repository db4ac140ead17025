"""``toolpin check`` without click: the CI gate's start-up is most of a cached check.

A plain command line (``--listing FILE`` repeated, ``--lock FILE``, ``--server NAME``,
``--json``, ``--no-cache``, each also as ``--opt=value``) is parsed here and run with the
same library calls, output and exit codes as the click command in
:mod:`toolpin.cli.offline`; anything else (``--help``, ``--sarif``, a typo, a missing
option) returns ``None`` and click handles it, usage errors included.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported on the start path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

_VALUES = {"--listing": "listings", "--lock": "lock", "--server": "entry"}
_FLAGS = {"--json": "as_json", "--no-cache": "no_cache"}


def parse_check(args: list[str]) -> dict[str, Any] | None:
    """The options of a plain ``check`` command line, or None (click should parse it)."""
    options: dict[str, Any] = {"listings": [], "as_json": False, "no_cache": False}
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name in _VALUES:
            if not eq:
                if i + 1 >= len(args) or args[i + 1].startswith("--"):
                    return None
                value = args[i + 1]
                i += 1
            key = _VALUES[name]
            if key == "listings":
                options[key].append(value)
            elif key in options:
                return None  # given twice: click decides
            else:
                options[key] = value
        elif args[i] in _FLAGS:
            options[_FLAGS[args[i]]] = True
        else:
            return None
        i += 1
    if not options["listings"] or "lock" not in options:
        return None
    return options


def check_fast(args: list[str]) -> int | None:
    """Run a plain ``check``; its exit code, or None when click must handle the line."""
    options = parse_check(args)
    if options is None:
        return None
    if not options["no_cache"]:
        # Exactly these bytes were checked and found unchanged before: print that again.
        from toolpin.offline.remembered import replay

        replayed = replay(
            options["listings"], options["lock"], options.get("entry"), _form(options["as_json"])
        )
        if replayed is not None:
            return replayed
    from toolpin.errors import ToolpinError

    try:
        return _run(options)
    except ToolpinError as exc:
        _fail(exc.diagnostics())
        return exc.exit_code
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        finally:
            return 1  # noqa: B012
    except Exception as exc:  # pragma: no cover - a bug; still no traceback for users
        if os.environ.get("TOOLPIN_DEBUG"):
            raise
        from toolpin.cli import internal_error

        _fail(internal_error(exc))
        return 2


def _run(options: dict[str, Any]) -> int:
    return run_check(
        options["listings"],
        options["lock"],
        entry=options.get("entry"),
        as_json=options["as_json"],
        no_cache=options["no_cache"],
    )


def run_check(
    listings: Sequence[str],
    lock: str,
    *,
    entry: str | None,
    as_json: bool,
    no_cache: bool,
    sarif: str | None = None,
) -> int:
    """``toolpin check`` itself, for this fast path and the click command alike."""
    from pathlib import Path

    from toolpin.offline.check import check
    from toolpin.report.offline import PARTIAL_WARNING

    result = check(
        [Path(v) for v in listings], Path(lock), entry_name=entry, use_cache=not no_cache
    )
    if sarif is not None:
        _write_sarif(result, Path(sarif), listings[0], lock)
    form = _form(as_json)
    if as_json:
        from toolpin.core.render import safe_json
        from toolpin.report.offline import check_json

        out = safe_json(check_json(result), sort_keys=True, ensure_ascii=True) + "\n"
    else:
        from toolpin.core.render import to_text
        from toolpin.report.offline import check_text

        out = to_text(check_text(result), color=form == "color") + "\n"
    err = PARTIAL_WARNING + "\n" if result.partial else ""
    sys.stdout.write(out)
    sys.stdout.flush()
    if err:
        sys.stderr.write(err)
    if result.record_key is not None and result.ok:
        from toolpin.offline.remembered import remember_output

        remember_output(result.record_key, form, out, err)
    return 0 if result.ok else 1


def _form(as_json: bool) -> str:
    """The output form a replayed check must match: JSON, coloured text or plain text."""
    if as_json:
        return "json"
    from toolpin.util.console import wants_color

    return "color" if wants_color(sys.stdout) else "text"


def _write_sarif(result: Any, out: Any, artifact: str, lock: str) -> None:
    import json

    from toolpin.errors import InputError
    from toolpin.report.sarif import sarif_log
    from toolpin.util.fs import atomic_write

    doc = sarif_log(result.drift, artifact=artifact, lock=lock)
    try:
        atomic_write(out, (json.dumps(doc, indent=2) + "\n").encode())
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror or exc}") from None


def _fail(message: str) -> None:
    first, _, rest = message.partition("\n")
    sys.stderr.write(f"toolpin: {first}\n")
    if rest:
        sys.stderr.write(f"{rest}\n")
    sys.stderr.flush()
