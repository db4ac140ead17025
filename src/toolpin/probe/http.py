"""Probe a server over Streamable HTTP, in both protocol eras, through the SSRF guard.

Every request is a POST of one JSON-RPC message with ``Accept: application/json,
text/event-stream``; the answer is a JSON body or an SSE stream (read until the response
with our id arrives). The 2026-07-28 era is tried first: ``server/discover`` with the
request ``_meta`` and the ``MCP-Protocol-Version`` and ``Mcp-Method`` headers. When the
server refuses it (an HTTP 4xx other than 401/403, a JSON-RPC error, an answer that is not
JSON-RPC, or no answer within :data:`DISCOVER_TIMEOUT`), the handshake era: ``initialize``,
the ``Mcp-Session-Id`` it returns, ``notifications/initialized``, then the lists with the
negotiated ``MCP-Protocol-Version``; the session is deleted at the end. Every page of every
offered listing is drained with :class:`toolpin.core.wire.ListingCollector` (the proxy's
and ``toolpin lock``'s code, so hashes agree). No tool is ever called. Bodies are capped
(:data:`MAX_RESPONSE_BYTES` per answer, :data:`MAX_SESSION_BYTES` per probe) and the whole
probe has one deadline. Server text never reaches an error message.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Iterator
from typing import Any, Final

import httpx2

from toolpin import __version__
from toolpin.core.canonical import parse_json
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
from toolpin.probe.session import ProbeResult
from toolpin.probe.ssrf import AddressPolicy, GuardedClient, GuardError

DEFAULT_TIMEOUT: Final = 20.0
DISCOVER_TIMEOUT: Final = 10.0
MAX_RESPONSE_BYTES: Final = 8 << 20
MAX_SESSION_BYTES: Final = 32 << 20
CLIENT_INFO: Final = {"name": "toolpin-crawler", "version": __version__}
USER_AGENT: Final = f"toolpin-crawler/{__version__}"
"""User-Agent of every HTTP request toolpin's probe and crawler send."""
ACCEPT: Final = "application/json, text/event-stream"
_FALLBACK_STATUSES: Final = frozenset({400, 404, 405, 406, 409, 415, 422, 501})


class _Refused(Exception):
    """The server refused a request in a way that means "try the other era"."""


class _Session:
    def __init__(self, client: GuardedClient, url: str, deadline: float) -> None:
        self.client = client
        self.url = url
        self.deadline = deadline
        self.session_id: str | None = None
        self.protocol: str | None = None
        self.modern = False
        self.received = 0

    def remaining(self, cap: float | None = None) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return min(left, cap) if cap is not None else left

    def headers(self, method: str | None) -> dict[str, str]:
        out = {"Accept": ACCEPT, "Content-Type": "application/json"}
        if self.protocol is not None:
            out["MCP-Protocol-Version"] = self.protocol
        if self.session_id is not None:
            out["Mcp-Session-Id"] = self.session_id
        if self.modern and method is not None:
            out["Mcp-Method"] = method
        return out

    def call(self, message: dict[str, Any], *, cap: float | None = None) -> dict[str, Any]:
        """Send a request; return the JSON-RPC response with its id."""
        answer = self._post(message, expect=message["id"], cap=cap)
        assert answer is not None
        return answer

    def notify(self, message: dict[str, Any]) -> None:
        self._post(message, expect=None, cap=None)

    def _post(
        self, message: dict[str, Any], *, expect: Any, cap: float | None
    ) -> dict[str, Any] | None:
        body = json.dumps(message, separators=(",", ":")).encode()
        timeout = self.remaining(cap)
        with self.client.stream(
            "POST",
            self.url,
            headers=self.headers(message.get("method")),
            content=body,
            timeout=timeout,
        ) as response:
            self.url = str(response.url)
            status = response.status_code
            if status in (401, 403):
                raise ProbeError(f"the server requires authorization (HTTP {status})")
            if expect is None:
                if status in (200, 202, 204):
                    return None
                raise ProbeError(f"the server answered HTTP {status} to a notification")
            if status in _FALLBACK_STATUSES:
                raise _Refused
            if status != 200:
                raise ProbeError(f"the server answered HTTP {status}")
            session = response.headers.get("mcp-session-id")
            if session is not None and self.session_id is None:
                if not (0 < len(session) <= 256 and all(0x21 <= ord(c) <= 0x7E for c in session)):
                    raise ProbeError("the server sent an unusable Mcp-Session-Id")
                self.session_id = session
            kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind == "application/json":
                return self._from_json(self._read_all(response), expect)
            if kind == "text/event-stream":
                return self._from_events(response, expect)
            raise _Refused

    def _count(self, size: int, so_far: int) -> None:
        self.received += size
        if so_far > MAX_RESPONSE_BYTES:
            raise ProbeError(f"an answer is larger than {MAX_RESPONSE_BYTES >> 20} MiB")
        if self.received > MAX_SESSION_BYTES:
            raise ProbeError(f"the server sent more than {MAX_SESSION_BYTES >> 20} MiB")

    def _chunks(self, response: httpx2.Response) -> Iterator[bytes]:
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            self._count(len(chunk), size)
            self.remaining()
            yield chunk

    def _read_all(self, response: httpx2.Response) -> bytes:
        return b"".join(self._chunks(response))

    def _from_json(self, data: bytes, expect: Any) -> dict[str, Any]:
        try:
            value = parse_json(data)
        except JSONError:
            raise _Refused from None
        messages = value if isinstance(value, list) else [value]
        for msg in messages:
            if isinstance(msg, dict) and msg.get("id") == expect and "method" not in msg:
                return msg
        raise _Refused

    def _from_events(self, response: httpx2.Response, expect: Any) -> dict[str, Any]:
        pending = b""
        data_lines: list[bytes] = []
        for chunk in self._chunks(response):
            pending += chunk
            while True:
                cut = _line_end(pending)
                if cut is None:
                    break
                line, pending = pending[: cut[0]], pending[cut[1] :]
                if line:
                    if line.startswith(b"data:"):
                        value = line[5:]
                        data_lines.append(value[1:] if value.startswith(b" ") else value)
                    continue
                if not data_lines:
                    continue
                payload, data_lines = b"\n".join(data_lines), []
                try:
                    msg = parse_json(payload)
                except JSONError:
                    continue
                if isinstance(msg, dict) and msg.get("id") == expect and "method" not in msg:
                    return msg
        raise ProbeError("the server's event stream ended without an answer")

    def close(self) -> None:
        if self.session_id is None:
            return
        try:
            with self.client.stream("DELETE", self.url, headers=self.headers(None), timeout=2.0):
                pass
        except (httpx2.HTTPError, ProbeError):
            pass


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first SSE line ends: (end of text, start of the next line)."""
    for i, byte in enumerate(buffer):
        if byte == 0x0A:
            return i, i + 1
        if byte == 0x0D:
            if i + 1 == len(buffer):
                return None  # maybe a CRLF split across chunks
            return i, i + 2 if buffer[i + 1] == 0x0A else i + 1
    return None


def probe_http(
    url: str,
    *,
    policy: AddressPolicy | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    era: str = "auto",
    verify: bool = True,
) -> ProbeResult:
    """List everything a Streamable HTTP server offers. Raises :class:`ProbeError`
    (:class:`~toolpin.probe.ssrf.GuardError` when the guard refuses)."""
    deadline = time.monotonic() + timeout
    client = GuardedClient(
        policy or AddressPolicy(), timeout=timeout, user_agent=USER_AGENT, verify=verify
    )
    session = _Session(client, url, deadline)
    try:
        return _converse(session, era)
    except TimeoutError:
        raise ProbeError(f"the server did not answer within {timeout:g}s") from None
    except httpx2.TimeoutException:
        raise ProbeError(f"the server did not answer within {timeout:g}s") from None
    except httpx2.ConnectError:
        raise ProbeError("cannot connect to the server") from None
    except httpx2.HTTPError as exc:
        raise ProbeError(f"the HTTP exchange failed ({type(exc).__name__})") from None
    finally:
        session.close()
        client.close()


def _converse(session: _Session, era: str) -> ProbeResult:
    prefix = f"toolpin-crawl-{os.getpid()}-{os.urandom(3).hex()}"
    meta = {
        META_PROTOCOL: MODERN_VERSION,
        META_CLIENT_INFO: CLIENT_INFO,
        META_CLIENT_CAPS: {},
    }
    if era in ("auto", "modern"):
        session.modern = True
        session.protocol = MODERN_VERSION
        answer: dict[str, Any] | None
        try:
            answer = session.call(
                request(f"{prefix}-discover", "server/discover", {"_meta": meta}),
                cap=None if era == "modern" else DISCOVER_TIMEOUT,
            )
        except (_Refused, httpx2.TimeoutException) as exc:
            late = isinstance(exc, httpx2.TimeoutException) and session.remaining() < 1
            if era == "modern" or late:
                raise ProbeError("the server refused server/discover") from None
            answer = None
        result = answer.get("result") if answer is not None else None
        if isinstance(result, dict):
            return _collect(
                session,
                result,
                meta,
                identity_from_discover(result),
                MODERN_VERSION,
                "modern",
                prefix,
            )
        if era == "modern":
            raise ProbeError("the server refused server/discover")
    session.modern = False
    session.protocol = None
    session.session_id = None
    try:
        answer = session.call(
            request(
                f"{prefix}-init",
                "initialize",
                {
                    "protocolVersion": LATEST_HANDSHAKE,
                    "capabilities": {},
                    "clientInfo": CLIENT_INFO,
                },
            )
        )
    except _Refused:
        raise ProbeError("the server refused the initialize handshake") from None
    result = answer.get("result")
    if not isinstance(result, dict):
        raise ProbeError("the server refused the initialize handshake")
    protocol = result.get("protocolVersion")
    session.protocol = (
        protocol if isinstance(protocol, str) and len(protocol) <= 32 else LATEST_HANDSHAKE
    )
    session.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return _collect(
        session,
        result,
        None,
        identity_from_initialize(result),
        protocol if isinstance(protocol, str) else None,
        "handshake",
        prefix,
    )


def _collect(
    session: _Session,
    opening: dict[str, Any],
    meta: dict[str, Any] | None,
    identity: Any,
    protocol: str | None,
    era: str,
    prefix: str,
) -> ProbeResult:
    instructions = opening.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ProbeError("the server's instructions are not a string")
    collector = ListingCollector(
        kinds_offered(opening.get("capabilities")), meta=meta, id_prefix=prefix
    )
    try:
        queue = deque(collector.start())
        while queue:
            req = queue.popleft()
            try:
                answer = session.call(req)
            except _Refused:
                raise ProbeError(f"the server refused {req['method']}") from None
            queue.extend(collector.on_response(answer))
        snapshot = collector.snapshot(instructions=instructions, identity=identity)
    except CollectError as exc:
        raise ProbeError(exc.reason) from None
    return ProbeResult(snapshot=snapshot, era=era, protocol_version=protocol, identity=identity)


__all__ = ["GuardError", "probe_http"]
