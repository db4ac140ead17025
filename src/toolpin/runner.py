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
    from toolpin.proxy import ProxyOptions, run
    from toolpin.store import PinStore, StorePinSource

    sid = server_id(argv)
    label = name if name else default_label(argv)
    try:
        source = StorePinSource(PinStore(), sid, label)
    except ToolpinError as exc:
        quoted = json.dumps(visible(label), ensure_ascii=False)
        return refuse(
            label,
            exc.diagnostics(),
            f"toolpin could not read its pin store, so {quoted} was not started. "
            "See the message in the server log.",
            server=sid,
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


def refuse(
    label: str,
    why: str,
    client_message: str,
    *,
    server: str | None = None,
    review: str | None = None,
) -> int:
    """Do not start the server: say why on stderr, answer every request with -31043.

    Returns 2 (could not verify) once the client hangs up. ``why`` goes to stderr only;
    the client gets ``client_message`` and ``data`` = ``{reason: "refused", server,
    review, changes: []}``.
    """
    sys.stderr.write(f"toolpin: not starting {visible(label)}: {why}\n")
    sys.stderr.flush()
    data: dict[str, object] = {
        "reason": "refused",
        "server": server,
        "review": review if review is not None else "toolpin list",
        "changes": [],
    }
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            try:
                msg = json.loads(line.decode("utf-8", "replace"))
            except (ValueError, RecursionError):
                continue
        if isinstance(msg, dict) and "id" in msg and isinstance(msg.get("method"), str):
            reply = error_response(msg["id"], UNVERIFIED_ERROR, client_message, data)
            try:
                out.write(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
                out.flush()
            except OSError:
                break
    return 2
