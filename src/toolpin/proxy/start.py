"""Start the proxy for a command line: identity, pin source, and the fail-closed paths.

Start-up order matters, because every MCP client pays it for every wrapped server:

1. the server id and label (standard library only);
2. a light look at this server's pin file: one that is unreadable or not a toolpin pin
   stops here, before the server is started;
3. the server is spawned, so that it boots while the proxy imports the rest (and, at a
   first pin with a public log, fetches and verifies the log's checkpoint in a thread);
4. the pin is decoded and verified in full. A fault found only now (a well-formed file
   whose hashes do not match) kills the server before a single byte reaches it.

When the pin source cannot be used (a corrupt store, an unusable lock, a server the lock
does not approve) the proxy explains why on stderr and answers every request the client
sends with JSON-RPC error -31043 until the client hangs up (exit 2), so the client shows
an error instead of a silent crash.
"""

from __future__ import annotations

import os
import sys

from toolpin.errors import ToolpinError
from toolpin.pins.serverid import default_label, server_id
from toolpin.proxy.spawn import kill_unused, spawn_server

TYPE_CHECKING = False  # typing is not imported on the start path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from toolpin.core.argvdiff import ArgvDiff
    from toolpin.pins.publiclog import PublicCheck
    from toolpin.pins.source import PinSource
    from toolpin.proxy.session import ProxyOptions
    from toolpin.proxy.settings import RunSettings


def run_proxy(argv: Sequence[str], settings: RunSettings) -> int:
    """Run ``toolpin run`` for ``argv``; returns the exit code.

    ``settings.lock`` makes the team lock entry of this server the pin
    (:mod:`toolpin.team.lock`); ``settings.only_locked`` refuses a server the lock does not
    list. Otherwise the local pin store is used (trust on first use). The public log
    settings are consulted at a first pin and at a block (:mod:`toolpin.pins.publiclog`);
    :class:`toolpin.proxy.settings.RunSettings` says what each one does.
    """
    name, timeout, quiet, lock = settings.name, settings.timeout, settings.quiet, settings.lock
    command_id = server_id(argv)
    label = name if name else default_label(argv)
    if lock is not None or settings.only_locked:
        locked = _locked_run(
            argv,
            lock,
            only_locked=settings.only_locked,
            name=name,
            label=label,
            sid=command_id,
            log=settings.log_key,
        )
        if isinstance(locked, int):
            return locked  # refused
        if locked is not None:
            return _run_locked(locked, label=label, settings=settings)
        # Not in the lock (and --only-locked not given): this machine's pin, as without it.
    home = _home()
    sid, named = pin_id(home, argv, name, command_id)
    problem = precheck_pin(os.path.join(home, "pins", f"{sid}.json"), sid)
    if problem is not None:
        return _store_refusal(label, sid, problem)
    proc = spawn_server(argv, label)
    # Everything below runs while the server boots.
    public = public_check(home, settings)
    if isinstance(public, str):
        kill_unused(proc)
        return _log_refusal(label, sid, public)
    if public is not None and not os.path.exists(os.path.join(home, "pins", f"{sid}.json")):
        public.start()  # a first pin: its lookup's checkpoint is fetched while the server boots
    from pathlib import Path

    from toolpin.pins.store import Command, PinStore, StorePinSource
    from toolpin.proxy.channel import SubprocessChannel
    from toolpin.proxy.relay import run

    try:
        command = Command.for_argv(command_id, argv) if named else None
        source = StorePinSource(PinStore(Path(home)), sid, label, command)
        change = source.command_change
    except ToolpinError as exc:
        kill_unused(proc)
        return _store_refusal(label, sid, exc.diagnostics())
    except Exception as exc:  # any store fault: refuse cleanly, never a traceback
        kill_unused(proc)
        if isinstance(exc, OSError):
            from toolpin.pins.store import unusable

            why = unusable(Path(exc.filename or home), exc).diagnostics()
        else:
            why = (
                f"the pin store could not be read ({type(exc).__name__})\n"
                "Check the store directory; the pins were not changed."
            )
        return _store_refusal(label, sid, why)
    options = session_options(
        label,
        sid,
        source,
        timeout=timeout,
        quiet=quiet,
        command_change=(
            None
            if change is None
            else f"{change[0].label} ({change[0].id[:8]}) -> {change[1].label} ({change[1].id[:8]})"
        ),
        command_diff=source.command_diff,
        public=public,
    )
    return run(options, SubprocessChannel(proc))


def public_check(home: str, given: RunSettings) -> PublicCheck | str | None:
    """The public log to consult, ``None`` for none, or why the setting cannot be used."""
    try:
        return public_log(home, given)
    except ToolpinError as exc:
        return exc.diagnostics()


def public_log(home: str, given: RunSettings) -> PublicCheck | None:
    """The public log to consult, ``None`` for none; raises :class:`ToolpinError` for a
    setting that cannot be used (a half setting, an unreadable key or config file).

    Nothing is imported unless a flag, the environment or a config file may name a log.
    """
    log, vkey, require, days = given.log, given.vkey, given.require_public, given.accept_after
    if not (
        log is not None
        or vkey is not None
        or require
        or days is not None
        or any(os.environ.get(name) for name in _LOG_ENV)
        or os.path.exists(os.path.join(home, "config.json"))
    ):
        return None
    from pathlib import Path

    from toolpin.pins.publiclog import PublicCheck, settings

    found = settings(Path(home), url=log, vkey=vkey, require_public=require, accept_after=days)
    return None if found is None else PublicCheck(found, Path(home))


_LOG_ENV = ("TOOLPIN_LOG", "TOOLPIN_LOG_VKEY", "TOOLPIN_REQUIRE_PUBLIC")


def _log_refusal(label: str, sid: str, why: str) -> int:
    """Refuse a server whose public-log setting cannot be used (a half setting, an
    unreadable key or config file): fail closed rather than run without the check."""
    return refuse(
        label,
        why,
        f"toolpin did not start {_quoted(label)}: its public-log setting could not be used. "
        "See the server log.",
        server=sid,
    )


def pin_id(home: str, argv: Sequence[str], name: str | None, command_id: str) -> tuple[str, bool]:
    """The id the pin is kept under, and whether it follows the name.

    With ``--name`` the pin is found by the name. A store written before names were ids
    keeps working: when the name has no pin yet but the command has one (a pin keyed by
    the argv), that pin is used, as it always was.
    """
    if not name:
        return command_id, False
    from toolpin.pins.serverid import name_id

    by_name = name_id(name)
    pins = os.path.join(home, "pins")
    if not os.path.exists(os.path.join(pins, f"{by_name}.json")) and os.path.exists(
        os.path.join(pins, f"{command_id}.json")
    ):
        return command_id, False
    return by_name, True


def _locked_run(
    argv: Sequence[str],
    lock: str | None,
    *,
    only_locked: bool,
    name: str | None,
    label: str,
    sid: str,
    log: tuple[str | None, str | None] = (None, None),
) -> Any:
    """The lock entry of this server (a ``LockedRun``), ``None`` when the lock does not
    list it, or the exit code of a refusal (a lock whose entry or public-log proof does
    not verify against ``log``, ``--log`` and ``--vkey`` as given, is unusable)."""

    from toolpin.errors import PackageError

    if lock is None:
        return only_locked_without_lock(label, server=sid)
    from toolpin.team.run import prepare_locked_run

    try:
        locked = prepare_locked_run(lock, argv, name=name, label=label, log=log, defer_proofs=True)
    except PackageError as exc:
        return refuse(
            label,
            exc.diagnostics(),
            f"toolpin did not start {_quoted(label)}: it does not run the package version the "
            "lock approved. See the server log.",
            server=sid,
            review="toolpin lock --check",
        )
    except ToolpinError as exc:
        return lock_unusable(label, exc, server=sid)
    if locked is None:
        return not_in_lock(label, lock, server=sid, only_locked=only_locked)
    return locked


def _quoted(label: str) -> str:
    """The label as a JSON string, unsafe characters made visible (for client errors)."""
    import json

    from toolpin.core.render import visible

    return json.dumps(visible(label), ensure_ascii=False)


def only_locked_without_lock(label: str, *, server: str) -> int:
    """Refuse ``--only-locked`` given without ``--lock``."""
    return refuse(
        label,
        "--only-locked needs --lock FILE",
        f"toolpin did not start {_quoted(label)}: --only-locked needs --lock. See the server log.",
        server=server,
    )


def lock_unusable(label: str, exc: ToolpinError, *, server: str) -> int:
    """Refuse to start a server whose lock cannot be used (missing, tampered, ...)."""
    import json

    from toolpin.core.render import visible

    quoted = json.dumps(visible(label), ensure_ascii=False)
    return refuse(
        label,
        exc.diagnostics(),
        f"toolpin did not start {quoted}: its lock could not be used. See the server log.",
        server=server,
        review="toolpin lock --check",
    )


def not_in_lock(label: str, lock: str, *, server: str, only_locked: bool) -> int | None:
    """A server the lock does not list: refused under ``--only-locked`` (the exit code),
    else ``None`` after a note that this machine's pin is used instead."""
    import json

    from toolpin.core.render import visible

    if only_locked:
        quoted = json.dumps(visible(label), ensure_ascii=False)
        return refuse(
            label,
            f"it is not in {visible(lock)}, and --only-locked runs only servers the lock approved",
            f"toolpin did not start {quoted}: the lock does not approve it.",
            server=server,
            review="toolpin lock --check",
        )
    sys.stderr.write(
        f"toolpin: {visible(label)} is not in {visible(lock)}; using this machine's pin\n"
    )
    return None


def _run_locked(locked: Any, *, label: str, settings: RunSettings) -> int:
    """Run the proxy with a team lock entry as the pin (no trust on first use)."""
    from toolpin.core.render import visible
    from toolpin.proxy.channel import SubprocessChannel
    from toolpin.proxy.relay import run

    quiet = settings.quiet
    if not quiet:
        for note in locked.notes:
            sys.stderr.write(f"toolpin: {visible(note)}\n")
    proc = spawn_server(locked.argv, label)
    sid = locked.source.entry.server_id or server_id(locked.argv)
    proofs = _ProofCheck(locked.proofs) if locked.proofs is not None else None
    public = public_check(_home(), settings)
    if isinstance(public, str):
        kill_unused(proc)
        return _log_refusal(label, sid, public)
    options = session_options(
        label, sid, locked.source, timeout=settings.timeout, quiet=quiet, public=public
    )
    if proofs is not None:
        # The relay has not started: the server has had no byte from the client.
        try:
            said = proofs.result()
        except ToolpinError as exc:
            kill_unused(proc)
            return lock_unusable(label, exc, server=sid)
        if not quiet:
            for note in said:
                sys.stderr.write(f"toolpin: {visible(note)}\n")
    return run(options, SubprocessChannel(proc))


class _ProofCheck:
    """The lock entry's public-log proof, checked in a thread while the server boots
    (offline, then the log's consistency when it is reachable: ``team/run.py``)."""

    def __init__(self, check: Any) -> None:
        import threading

        self._check = check
        self._notes: list[str] | None = None
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="toolpin-lock-log", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._notes = self._check()
        except BaseException as exc:  # the caller refuses the server with it
            self._failed = exc

    def result(self) -> list[str]:
        """The proof's notes; raises :class:`ToolpinError` when the lock is unusable (any
        fault, a check that never ends included: fail closed)."""
        from toolpin.errors import LockfileError
        from toolpin.pins.publiclog import longest_wait

        self._thread.join(longest_wait())
        if self._thread.is_alive():
            raise LockfileError("the lock's public-log proof could not be checked in time")
        if isinstance(self._failed, ToolpinError):
            raise self._failed
        if self._failed is not None or self._notes is None:
            kind = type(self._failed).__name__
            raise LockfileError(f"the lock's public-log proof could not be checked ({kind})")
        return self._notes


def session_options(
    label: str,
    sid: str,
    source: PinSource,
    *,
    timeout: float,
    quiet: bool,
    command_change: str | None = None,
    command_diff: ArgvDiff | None = None,
    public: PublicCheck | None = None,
) -> ProxyOptions:
    """A proxy session's options, with colour when stderr (where it speaks) is a terminal."""
    from toolpin.proxy.session import ProxyOptions
    from toolpin.util.console import wants_color

    return ProxyOptions(
        label=label,
        server_id=sid,
        source=source,
        timeout=timeout,
        color=wants_color(sys.stderr),
        quiet=quiet,
        command_change=command_change,
        command_diff=command_diff,
        public=public,
    )


def _home() -> str:
    """The store directory, as :func:`toolpin.util.fs.toolpin_home` says, cheaply."""
    override = os.environ.get("TOOLPIN_HOME")
    if override:
        return os.path.expanduser(override)
    from toolpin.util.fs import toolpin_home

    return str(toolpin_home())


def precheck_pin(path: str, server: str) -> str | None:
    """A light look at a pin file before the server starts: ``None`` when usable or absent.

    It reads the bytes and checks their outline (one JSON object naming toolpin's pin
    format and this server's id) without importing a JSON parser. Full verification
    (strict JSON, every hash) happens right after the spawn; this catches what a crash,
    a full disk or an editor leaves behind (unreadable, truncated, not a pin).
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        from pathlib import Path

        from toolpin.pins.store import unusable

        return unusable(Path(path), exc).diagnostics()
    body = data.strip()
    if not (body.startswith(b"{") and body.endswith(b"}")):
        return f"corrupt pin store: {path} (not a complete JSON object)"
    if b'"toolpinPin"' not in body or server.encode() not in body:
        return f"corrupt pin store: {path} (not this server's toolpin pin file)"
    return None


def _store_refusal(label: str, sid: str, why: str) -> int:
    import json

    from toolpin.core.render import visible

    quoted = json.dumps(visible(label), ensure_ascii=False)
    if "\n" not in why:
        why += (
            "\ntoolpin will not start this server until the file is readable. Restore it from "
            f"a backup, or remove it with `toolpin forget {sid}` to pin again from scratch."
        )
    return refuse(
        label,
        why,
        f"toolpin could not read its pin store, so {quoted} was not started. "
        "See the message in the server log.",
        server=sid,
        review=f"toolpin review {sid}",
    )


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
    import json

    from toolpin.core.render import visible
    from toolpin.core.wire import UNVERIFIED_ERROR, error_response

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
