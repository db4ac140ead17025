"""Start ``toolpin run --url``: check the target, choose the pin source, run the relay.

The same fail-closed paths as a local server (:mod:`toolpin.proxy.start`): a target that
cannot be used (a bad URL, a header naming an unset ``${env:VAR}``), an unreadable pin
store or a lock that does not approve the server is explained on stderr, and every
request the client sends is answered with -31043 until it hangs up (exit 2).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolpin.errors import ToolpinError
from toolpin.proxy.start import (
    _home,
    _log_refusal,
    lock_unusable,
    not_in_lock,
    only_locked_without_lock,
    precheck_pin,
    public_check,
    refuse,
    session_options,
)

if TYPE_CHECKING:
    from toolpin.pins.source import PinSource
    from toolpin.proxy.session import ProxyOptions
    from toolpin.remote.target import RemoteTarget


def run_remote_proxy(
    url: str,
    *,
    name: str | None = None,
    headers: Sequence[str] = (),
    transport: str = "auto",
    timeout: float = 30.0,
    quiet: bool = False,
    lock: str | None = None,
    only_locked: bool = False,
    log: str | None = None,
    vkey: str | None = None,
    require_public: bool = False,
    accept_after: int | None = None,
) -> int:
    """Run ``toolpin run --url URL``; returns the exit code. ``log``, ``vkey`` and
    ``require_public``, ``accept_after`` as for :func:`toolpin.proxy.start.run_proxy`."""
    from toolpin.core.render import visible
    from toolpin.pins.serverid import remote_server_id
    from toolpin.remote.target import make_target

    label = name or "remote server"
    try:
        target = make_target(url, name=name, headers=headers, transport=transport)
    except ToolpinError as exc:
        quoted = json.dumps(visible(label), ensure_ascii=False)
        return refuse(
            label,
            exc.diagnostics(),
            f"toolpin did not connect to {quoted}: its settings cannot be used. "
            "See the server log.",
            server=remote_server_id(url, name) if "://" in url else None,
        )
    label = target.label
    sid = remote_server_id(target.url, target.name)

    source: PinSource | None = None
    if lock is not None or only_locked:
        locked = _locked_source(
            target, sid, lock, only_locked=only_locked, log=(log, vkey), quiet=quiet
        )
        if isinstance(locked, int):
            return locked
        source = locked
    if source is None:
        home = _home()
        problem = precheck_pin(os.path.join(home, "pins", f"{sid}.json"), sid)
        if problem is not None:
            from toolpin.proxy.start import _store_refusal

            return _store_refusal(label, sid, problem)
        from pathlib import Path

        from toolpin.pins.store import PinStore, StorePinSource

        try:
            source = StorePinSource(PinStore(Path(home)), sid, label)
        except ToolpinError as exc:
            from toolpin.proxy.start import _store_refusal

            return _store_refusal(label, sid, exc.diagnostics())
    public = public_check(_home(), (log, vkey, require_public, accept_after))
    if isinstance(public, str):
        return _log_refusal(label, sid, public)
    options = session_options(label, sid, source, timeout=timeout, quiet=quiet, public=public)
    from toolpin.remote.channel import run_remote

    return run_remote(target, options)


def _locked_source(
    target: RemoteTarget,
    sid: str,
    lock: str | None,
    *,
    only_locked: bool,
    log: tuple[str | None, str | None] = (None, None),
    quiet: bool = False,
) -> PinSource | int | None:
    """The team lock's pin source for this remote server, ``None`` when the lock does not
    list it (and --only-locked is not given), or the exit code of a refusal."""

    label = target.label
    if lock is None:
        return only_locked_without_lock(label, server=sid)
    from toolpin.team.run import prepare_locked_remote

    notes: list[str] = []
    try:
        source = prepare_locked_remote(
            lock, target.url, name=target.name, label=label, log=log, notes=notes
        )
    except ToolpinError as exc:
        return lock_unusable(label, exc, server=sid)
    if source is None:
        return not_in_lock(label, lock, server=sid, only_locked=only_locked)
    if not quiet:
        import sys

        for note in notes:
            sys.stderr.write(f"toolpin: {note}\n")
    return source


def gateway_options(
    url: str,
    *,
    name: str | None = None,
    headers: Sequence[str] = (),
    transport: str = "auto",
    timeout: float = 30.0,
    quiet: bool = False,
    lock: str | None = None,
    only_locked: bool = False,
    log: str | None = None,
    vkey: str | None = None,
    require_public: bool = False,
    accept_after: int | None = None,
) -> tuple[RemoteTarget, ProxyOptions]:
    """The target and session options of ``toolpin gateway`` (the same pin source as
    ``toolpin run --url``: the team lock's entry, else the local store; the same public
    log, from ``log``/``vkey``, the environment or ``TOOLPIN_HOME/config.json``, with
    ``require_public`` and ``accept_after``). Raises :class:`ToolpinError` (the gateway
    refuses to start; exit 2), for a log setting that cannot be used too."""
    from pathlib import Path

    from toolpin.errors import InputError
    from toolpin.pins.serverid import remote_server_id
    from toolpin.pins.store import PinStore, StorePinSource
    from toolpin.remote.target import make_target

    target = make_target(url, name=name, headers=headers, transport=transport)
    sid = remote_server_id(target.url, target.name)
    source: PinSource | None = None
    if only_locked and lock is None:
        raise InputError("--only-locked needs --lock FILE")
    if lock is not None:
        from toolpin.team.run import prepare_locked_remote

        notes: list[str] = []
        source = prepare_locked_remote(
            lock, target.url, name=target.name, label=target.label, log=(log, vkey), notes=notes
        )
        if not quiet:
            import sys

            for note in notes:
                sys.stderr.write(f"toolpin: {note}\n")
        if source is None and only_locked:
            raise InputError(
                f"{lock} does not list this server and --only-locked is given",
                advice="Add it to the config and run `toolpin lock`, or drop --only-locked.",
            )
    if source is None:
        source = StorePinSource(PinStore(Path(_home())), sid, target.label)
    from toolpin.pins.publiclog import PublicCheck, settings

    home = Path(_home())
    found = settings(
        home, url=log, vkey=vkey, require_public=require_public, accept_after=accept_after
    )
    public = None if found is None else PublicCheck(found, home)  # a bad key file stops here
    options = session_options(
        target.label, sid, source, timeout=timeout, quiet=quiet, public=public
    )
    return target, options
