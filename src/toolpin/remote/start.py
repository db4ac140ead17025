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
    public_log,
    refuse,
    session_options,
)

if TYPE_CHECKING:
    from toolpin.pins.source import PinSource
    from toolpin.proxy.session import ProxyOptions
    from toolpin.proxy.settings import RunSettings
    from toolpin.remote.target import RemoteTarget


def run_remote_proxy(
    url: str,
    settings: RunSettings,
    *,
    headers: Sequence[str] = (),
    transport: str = "auto",
) -> int:
    """Run ``toolpin run --url URL``; returns the exit code. ``settings`` as for
    :func:`toolpin.proxy.start.run_proxy`."""
    from toolpin.core.render import visible
    from toolpin.pins.serverid import remote_server_id
    from toolpin.remote.target import make_target

    name = settings.name
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
    if settings.lock is not None or settings.only_locked:
        locked = _locked_source(target, sid, settings)
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
    public = public_check(_home(), settings)
    if isinstance(public, str):
        return _log_refusal(label, sid, public)
    options = session_options(
        label, sid, source, timeout=settings.timeout, quiet=settings.quiet, public=public
    )
    from toolpin.remote.channel import run_remote

    return run_remote(target, options)


def _locked_source(target: RemoteTarget, sid: str, settings: RunSettings) -> PinSource | int | None:
    """The team lock's pin source for this remote server, ``None`` when the lock does not
    list it (and --only-locked is not given), or the exit code of a refusal."""

    label = target.label
    lock = settings.lock
    if lock is None:
        return only_locked_without_lock(label, server=sid)
    try:
        source = _lock_entry(target, lock, settings)
    except ToolpinError as exc:
        return lock_unusable(label, exc, server=sid)
    if source is None:
        return not_in_lock(label, lock, server=sid, only_locked=settings.only_locked)
    return source


def _lock_entry(target: RemoteTarget, lock: str, settings: RunSettings) -> PinSource | None:
    """The pin source of this remote server's entry in the team lock ``lock``, ``None``
    when the lock does not list it; the lock's notes go to stderr unless quiet. Raises
    :class:`ToolpinError` for a lock that cannot be used."""
    from toolpin.team.run import prepare_locked_remote

    notes: list[str] = []
    source = prepare_locked_remote(
        lock, target.url, name=target.name, label=target.label, log=settings.log_key, notes=notes
    )
    if not settings.quiet:
        import sys

        for note in notes:
            sys.stderr.write(f"toolpin: {note}\n")
    return source


def gateway_options(
    url: str,
    settings: RunSettings,
    *,
    headers: Sequence[str] = (),
    transport: str = "auto",
) -> tuple[RemoteTarget, ProxyOptions]:
    """The target and session options of ``toolpin gateway`` (the same pin source as
    ``toolpin run --url``: the team lock's entry, else the local store; the same public
    log, from ``settings``, the environment or ``TOOLPIN_HOME/config.json``). Raises
    :class:`ToolpinError` (the gateway refuses to start; exit 2), for a log setting that
    cannot be used too."""
    from pathlib import Path

    from toolpin.errors import InputError
    from toolpin.pins.serverid import remote_server_id
    from toolpin.pins.store import PinStore, StorePinSource
    from toolpin.remote.target import make_target

    target = make_target(url, name=settings.name, headers=headers, transport=transport)
    sid = remote_server_id(target.url, target.name)
    source: PinSource | None = None
    lock = settings.lock
    if settings.only_locked and lock is None:
        raise InputError("--only-locked needs --lock FILE")
    if lock is not None:
        source = _lock_entry(target, lock, settings)
        if source is None and settings.only_locked:
            raise InputError(
                f"{lock} does not list this server and --only-locked is given",
                advice="Add it to the config and run `toolpin lock`, or drop --only-locked.",
            )
    if source is None:
        source = StorePinSource(PinStore(Path(_home())), sid, target.label)
    public = public_log(_home(), settings)  # a bad key file stops here
    options = session_options(
        target.label, sid, source, timeout=settings.timeout, quiet=settings.quiet, public=public
    )
    return target, options
