"""Start a local MCP server, read everything the model would read, stop it.

Used by ``toolpin lock`` (and the public log's crawler). It speaks the same wire as the
proxy and drains listings with the proxy's :class:`~toolpin.core.wire.ListingCollector`,
so a lock records exactly the hashes the proxy will compute at connect. It never calls a
tool. Both protocol eras: ``server/discover`` first (2026-07-28); when the server refuses
or ignores it, the ``initialize`` handshake.

Why not the MCP SDK's client here: its wire models drop members they do not know and its
JSON reader resolves repeated member names silently, so hashes computed from SDK objects
would differ from what the proxy hashes on the raw wire.

The server runs in its own process group and the whole group is killed at the end
(``npx`` and ``uvx`` start children that would otherwise outlive it).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from toolpin import __version__
from toolpin.core.canonical import parse_json
from toolpin.core.snapshot import Identity, Snapshot
from toolpin.core.wire import (
    LATEST_HANDSHAKE,
    META_CLIENT_CAPS,
    META_CLIENT_INFO,
    META_PROTOCOL,
    MODERN_VERSION,
    CollectError,
    ListingCollector,
    identity_from_discover,
    identity_from_initialize,
    kinds_offered,
    request,
)
from toolpin.errors import JSONError, ProbeError

DEFAULT_TIMEOUT: Final = 60.0
DISCOVER_TIMEOUT: Final = 10.0
"""How long ``era="auto"`` waits for a ``server/discover`` answer before the handshake."""
MAX_OUTPUT: Final = 64 << 20
"""Most bytes a server may write to stdout during one probe."""
_CHUNK: Final = 1 << 20
CLIENT_INFO: Final = {"name": "toolpin-probe", "version": __version__}


@dataclass(frozen=True)
class ProbeResult:
    """What a server told the probe."""

    snapshot: Snapshot
    era: str
    """``"modern"`` (2026-07-28, server/discover) or ``"handshake"`` (initialize)."""
    protocol_version: str | None
    identity: Identity | None


class _Conversation:
    def __init__(
        self, proc: subprocess.Popen[bytes], max_output: int, capabilities: Mapping[str, Any]
    ) -> None:
        self.proc = proc
        self.capabilities = capabilities
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.max_output = max_output
        self.overflow = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        # One queue item per complete line, however long (up to ``max_output`` in total).
        stdout = self.proc.stdout
        assert stdout is not None
        total = 0
        parts: list[bytes] = []
        try:
            while True:
                chunk = stdout.readline(_CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > self.max_output:
                    self.overflow = True
                    parts = []
                    break
                parts.append(chunk)
                if chunk.endswith(b"\n"):
                    self.lines.put(b"".join(parts))
                    parts = []
        except (OSError, ValueError):
            pass
        if parts:
            self.lines.put(b"".join(parts))
        self.lines.put(None)

    def send(self, message: Mapping[str, Any]) -> None:
        import json

        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ProbeError(self._exit_reason("before it could be listed")) from None

    def _exit_reason(self, when: str) -> str:
        try:  # its output just ended: give it a moment to finish exiting
            code: int | None = self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            return f"the server closed its output {when}"
        return f"the server exited (code {code}) {when}"

    def wait_for(self, wanted: set[str], deadline: float) -> dict[str, Any]:
        """The next response whose id is in ``wanted`` (other messages are handled)."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                raise TimeoutError from None
            if line is None:
                if self.overflow:
                    raise ProbeError("the server wrote more output than the probe accepts")
                raise ProbeError(self._exit_reason("before it listed its definitions"))
            if not line.strip():
                continue
            try:
                msg = parse_json(line)
            except JSONError as exc:
                if b'"id"' in line and any(w.encode() in line for w in wanted):
                    raise ProbeError(
                        f"the server's answer is not strict JSON ({exc.message})"
                    ) from None
                continue  # a log line on stdout; ignore it
            if not isinstance(msg, dict):
                continue
            if "method" in msg:
                if "id" in msg:
                    self._answer_server_request(msg)
                continue  # a notification (log message, list_changed): nothing to do
            id_ = msg.get("id")
            if isinstance(id_, str) and id_ in wanted:
                return msg

    def _answer_server_request(self, msg: dict[str, Any]) -> None:
        # ``ping`` is answered; ``roots/list`` gets an empty list when the probe declared
        # roots (the same on every machine); anything else (sampling, elicitation, or roots
        # that were not declared) gets "method not found", so the server can go on listing
        # without waiting for a person.
        method = msg.get("method")
        result: dict[str, Any] | None = None
        if method == "ping":
            result = {}
        elif method == "roots/list" and "roots" in self.capabilities:
            result = {"roots": []}
        if result is not None:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            return
        self.send(
            {
                "jsonrpc": "2.0",
                "id": msg["id"],
                "error": {"code": -32601, "message": "Method not found"},
            }
        )


class StderrTail:
    """Keeps the last ``limit`` bytes a server writes to stderr (for a caller's own rules,
    such as the crawler's placeholder-credential retry; never put into a message)."""

    def __init__(self, limit: int = 16 * 1024) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def _drain(self, stream: Any) -> None:
        try:
            for chunk in iter(lambda: stream.read1(65536), b""):
                with self._lock:
                    self._buffer += chunk
                    if len(self._buffer) > self.limit:
                        del self._buffer[: len(self._buffer) - self.limit]
        except (OSError, ValueError):
            pass

    def attach(self, stream: Any) -> None:
        """Start draining ``stream`` (the server's stderr pipe)."""
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def finish(self) -> None:
        """Wait briefly for the last bytes after the server stopped."""
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def text(self) -> str:
        """The tail as text (undecodable bytes replaced)."""
        with self._lock:
            return bytes(self._buffer).decode("utf-8", "replace")


def _spawn(
    argv: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | None,
    stderr_tail: StderrTail | None = None,
) -> subprocess.Popen[bytes]:
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    else:  # pragma: no cover - Windows
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if stderr_tail is not None else subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            **kwargs,
        )
    except OSError as exc:
        raise ProbeError(f"cannot start the server: {exc.strerror or exc}") from None
    if stderr_tail is not None and proc.stderr is not None:
        stderr_tail.attach(proc.stderr)
    return proc


def _stop(talk: _Conversation) -> None:
    """Close the server's input, then end its whole process group (TERM, then KILL)."""
    proc = talk.proc
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1.0)
    for sig in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
        if os.name == "posix":
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, sig)
        elif proc.poll() is None:  # pragma: no cover - Windows
            proc.kill()
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            continue
        if os.name == "posix":
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)  # children left in the group
        break
    # Closing stdout while the reader thread is inside a read would wait for that read;
    # a process outside the group may still hold the pipe, so only close a drained pipe.
    talk.reader.join(timeout=1.0)
    if not talk.reader.is_alive():
        with contextlib.suppress(OSError):
            if proc.stdout is not None:
                proc.stdout.close()


def probe_stdio(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    era: str = "auto",
    max_output: int = MAX_OUTPUT,
    discover_timeout: float = DISCOVER_TIMEOUT,
    capabilities: Mapping[str, Any] | None = None,
    stderr_tail: StderrTail | None = None,
) -> ProbeResult:
    """Start ``argv``, list everything, stop it. Raises :class:`ProbeError`.

    ``era`` is ``"auto"`` (discover, then initialize), ``"modern"`` or ``"handshake"``.
    ``timeout`` bounds the whole conversation; with ``era="auto"`` a server that does not
    answer ``server/discover`` within ``discover_timeout`` seconds is asked for the
    ``initialize`` handshake instead. ``max_output`` caps the bytes read from its stdout.
    ``capabilities`` are the client capabilities the probe declares (none by default);
    some servers offer more tools to a client that declares, say, ``roots``. The server
    and every process it started in its process group are stopped at the end.
    ``stderr_tail``, when given, keeps the end of the server's stderr (otherwise discarded).
    """
    if not argv:
        raise ProbeError("empty server command")
    if era not in ("auto", "modern", "handshake"):
        raise ProbeError(f"unknown protocol era {era!r} (auto, modern or handshake)")
    deadline = time.monotonic() + timeout
    proc = _spawn(argv, env, cwd, stderr_tail)
    caps = dict(capabilities) if capabilities is not None else {}
    talk = _Conversation(proc, max_output, caps)
    try:
        return _converse(talk, era=era, deadline=deadline, discover_timeout=discover_timeout)
    except TimeoutError:
        raise ProbeError(f"the server did not answer within {timeout:g}s") from None
    finally:
        _stop(talk)
        if stderr_tail is not None:
            stderr_tail.finish()


def _converse(
    talk: _Conversation, *, era: str, deadline: float, discover_timeout: float
) -> ProbeResult:
    prefix = f"toolpin-probe-{os.getpid()}-{os.urandom(3).hex()}"
    meta = {
        META_PROTOCOL: MODERN_VERSION,
        META_CLIENT_INFO: CLIENT_INFO,
        META_CLIENT_CAPS: dict(talk.capabilities),
    }
    if era in ("auto", "modern"):
        talk.send(request(f"{prefix}-discover", "server/discover", {"_meta": meta}))
        limit = deadline if era == "modern" else min(deadline, time.monotonic() + discover_timeout)
        try:
            answer = talk.wait_for({f"{prefix}-discover"}, limit)
        except TimeoutError:
            if era == "modern":
                raise
            answer = None
        result = answer.get("result") if answer is not None else None
        if isinstance(result, dict):
            identity = identity_from_discover(result)
            return _collect(
                talk, result, meta, identity, MODERN_VERSION, "modern", prefix, deadline
            )
        if era == "modern":
            raise ProbeError("the server refused server/discover")
    talk.send(
        request(
            f"{prefix}-init",
            "initialize",
            {
                "protocolVersion": LATEST_HANDSHAKE,
                "capabilities": dict(talk.capabilities),
                "clientInfo": CLIENT_INFO,
            },
        )
    )
    answer = talk.wait_for({f"{prefix}-init"}, deadline)
    result = answer.get("result")
    if not isinstance(result, dict):
        raise ProbeError("the server refused the initialize handshake")
    talk.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    identity = identity_from_initialize(result)
    protocol = result.get("protocolVersion")
    return _collect(
        talk,
        result,
        None,
        identity,
        protocol if isinstance(protocol, str) else None,
        "handshake",
        prefix,
        deadline,
    )


def _collect(
    talk: _Conversation,
    opening: dict[str, Any],
    meta: dict[str, Any] | None,
    identity: Identity | None,
    protocol: str | None,
    era: str,
    prefix: str,
    deadline: float,
) -> ProbeResult:
    instructions = opening.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ProbeError("the server's instructions are not a string")
    collector = ListingCollector(
        kinds_offered(opening.get("capabilities")), meta=meta, id_prefix=prefix
    )
    try:
        for req in collector.start():
            talk.send(req)
        while not collector.done:
            answer = talk.wait_for(set(collector.pending_ids()), deadline)
            for req in collector.on_response(answer):
                talk.send(req)
        snapshot = collector.snapshot(instructions=instructions, identity=identity)
    except CollectError as exc:
        raise ProbeError(exc.reason) from None
    return ProbeResult(snapshot=snapshot, era=era, protocol_version=protocol, identity=identity)


def main() -> None:  # pragma: no cover - debugging aid: python -m toolpin.probe.session CMD...
    import json

    result = probe_stdio(sys.argv[1:])
    print(
        json.dumps(
            {
                "era": result.era,
                "counts": result.snapshot.counts(),
                "surface": result.snapshot.surface_hash(),
            }
        )
    )


if __name__ == "__main__":  # pragma: no cover
    main()
