"""Start the proxy for a command line: identity, pin source, and the fail-closed paths.

When the pin source cannot be used (a corrupt store, an unusable lock, a server the lock
does not approve), the server is **not started**. The proxy explains why on stderr and
answers every request the client sends with JSON-RPC error -31043 until the client hangs
up, so the client shows an error instead of a silent crash.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from toolpin.console import wants_color
from toolpin.core.render import visible
from toolpin.errors import ToolpinError
from toolpin.protocol import UNVERIFIED_ERROR, error_response
from toolpin.serverid import default_label, server_id


def run_proxy(
    argv: Sequence[str],
    *,
    name: str | None = None,
    timeout: float = 30.0,
    quiet: bool = False,
    lock: str | None = None,
    only_locked: bool = False,
) -> int:
    """Run ``toolpin run`` for ``argv``; returns the exit code."""
    from toolpin.proxy import PinSource, ProxyOptions, run
    from toolpin.store import PinStore, StorePinSource

    locked = None
    sid = server_id(argv)
    label = name if name else default_label(argv)
    quoted = json.dumps(visible(label), ensure_ascii=False)
    source: PinSource
    if only_locked and lock is None:
        return refuse(
            label,
            "--only-locked needs --lock FILE",
            f"toolpin did not start {quoted}: --only-locked needs --lock. See the server log.",
        )
    if lock is not None:
        from toolpin.teamlock import prepare_locked_run

        try:
            locked = prepare_locked_run(lock, argv, name=name, label=label)
        except ToolpinError as exc:
            return refuse(
                label,
                exc.diagnostics(),
                f"toolpin did not start {quoted}: its lock could not be used. See the server log.",
            )
        if locked is None and only_locked:
            return refuse(
                label,
                f"it is not in {lock}, and --only-locked runs only servers the lock approved",
                f"toolpin did not start {quoted}: the lock does not approve it.",
            )
        if locked is not None:
            source = locked.source
            sid = locked.source.entry.server_id or sid
            argv = locked.argv
            if not quiet:
                for note in locked.notes:
                    sys.stderr.write(f"toolpin: {visible(note)}\n")
        else:
            sys.stderr.write(f"toolpin: {visible(label)} is not in {lock}; using this machine's pin\n")
    if lock is None or locked is None:
        try:
            source = StorePinSource(PinStore(), sid, label)
        except ToolpinError as exc:
            return refuse(
                label,
                exc.diagnostics(),
                f"toolpin could not read its pin store, so {quoted} was not started. "
                "See the message in the server log.",
            )
    options = ProxyOptions(
        label=label,
        server_id=sid,
        source=source,
        timeout=timeout,
        color=wants_color(sys.stderr),
        quiet=quiet,
    )
    return run(argv, options)


def refuse(label: str, why: str, client_message: str) -> int:
    """Do not start the server: say why on stderr, answer every request with -31043."""
    sys.stderr.write(f"toolpin: not starting {visible(label)}: {why}\n")
    sys.stderr.flush()
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and "id" in msg and "method" in msg:
            reply = error_response(msg["id"], UNVERIFIED_ERROR, client_message, {"reason": "refused"})
            out.write(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
            out.flush()
    return 2
