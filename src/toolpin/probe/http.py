"""Probe a server over Streamable HTTP, in both protocol eras, through the SSRF guard.

The conversation is :func:`toolpin.probe.conversation.converse` (the same as over stdio);
this module is its HTTP transport. Every request is a POST of one JSON-RPC message with
``Accept: application/json, text/event-stream``, sent from its own thread so that two
connections can be awaited at once; the answer is a JSON body or an SSE stream (every
message of the stream goes to the conversation, which answers the server's requests). A
connection sent ``server/discover`` speaks the 2026-07-28 era (the request ``_meta`` and
the ``MCP-Protocol-Version`` and ``Mcp-Method`` headers); one sent ``initialize`` starts a
new handshake-era session (the ``Mcp-Session-Id`` it returns, the negotiated
``MCP-Protocol-Version``; the session is deleted at the end). An HTTP 4xx other than
401/403, or an answer that is not JSON-RPC, counts as "not this era". Bodies are capped
(:data:`MAX_RESPONSE_BYTES` per answer, :data:`MAX_SESSION_BYTES` per probe) and the
whole probe has one deadline. Server text never reaches an error message.

For a server the user chose (``toolpin lock``), the probe sends the entry's static
``headers`` and an ``Authorization`` from an :class:`Authorizer` (the tokens ``toolpin run
--url`` stored), never follows a redirect to another origin with them, and may go through
the environment's proxies (``trust_env``). A 401/403 raises
:class:`AuthorizationRequired`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, Protocol

import httpx2

from toolpin import __version__
from toolpin.core.canonical import parse_json
from toolpin.core.wire import LATEST_HANDSHAKE, MODERN_VERSION
from toolpin.errors import JSONError, ProbeError
from toolpin.probe.conversation import (
    FALLBACK_AFTER,
    Era,
    Failed,
    Inbox,
    ProbeResult,
    Received,
    Refused,
    converse,
)
from toolpin.probe.ssrf import AddressPolicy, GuardedClient, GuardError

DEFAULT_TIMEOUT: Final = 20.0
MAX_RESPONSE_BYTES: Final = 8 << 20
MAX_SESSION_BYTES: Final = 32 << 20
CLIENT_INFO: Final = {"name": "toolpin-crawler", "version": __version__}
USER_AGENT: Final = f"toolpin-crawler/{__version__}"
"""User-Agent of every HTTP request toolpin's probe and crawler send."""
ACCEPT: Final = "application/json, text/event-stream"
_FALLBACK_STATUSES: Final = frozenset({400, 404, 405, 406, 409, 415, 422, 501})


class _Refused(Exception):
    """The server refused a request in a way that means "try the other era"."""


class _Final(ProbeError):
    """No other connection would do better (authorization, a size cap)."""


class AuthorizationRequired(_Final):
    """The server answered 401 or 403: it wants (other) credentials."""

    def __init__(self, status: int) -> None:
        super().__init__(f"the server requires authorization (HTTP {status})")
        self.status = status


class Authorizer(Protocol):
    """Where an ``Authorization`` header comes from (stored OAuth tokens)."""

    def authorization(self) -> str | None:
        """The header value to send now, or ``None``."""
        ...


class HttpTransport:
    """Connections to one Streamable HTTP endpoint, through one guarded client."""

    def __init__(
        self,
        url: str,
        *,
        policy: AddressPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        verify: bool = True,
        headers: Sequence[tuple[str, str]] = (),
        auth: Authorizer | None = None,
        trust_env: bool = False,
    ) -> None:
        self.url = url
        self.client = GuardedClient(
            policy or AddressPolicy(),
            timeout=timeout,
            user_agent=USER_AGENT,
            verify=verify,
            trust_env=trust_env,
        )
        self.static_headers = tuple(headers)
        self.auth = auth
        self.credentials = bool(self.static_headers) or auth is not None
        self._lock = threading.Lock()
        self._received = 0

    def count(self, size: int, so_far: int) -> None:
        """Account ``size`` more bytes (``so_far`` in the current answer)."""
        if so_far > MAX_RESPONSE_BYTES:
            raise _Final(f"an answer is larger than {MAX_RESPONSE_BYTES >> 20} MiB")
        with self._lock:
            self._received += size
            total = self._received
        if total > MAX_SESSION_BYTES:
            raise _Final(f"the server sent more than {MAX_SESSION_BYTES >> 20} MiB")

    def connect(self, inbox: Inbox, *, id_prefix: str, deadline: float) -> HttpChannel:
        return HttpChannel(self, inbox, deadline)

    def close(self) -> None:
        self.client.close()


class HttpChannel:
    """One connection: a 2026-07-28 exchange, or one handshake-era session."""

    def __init__(self, transport: HttpTransport, inbox: Inbox, deadline: float) -> None:
        self.transport = transport
        self.client = transport.client
        self.inbox = inbox
        self.url = transport.url
        self.deadline = deadline
        self.session_id: str | None = None
        self.protocol: str | None = None
        self.modern = False
        self._closed = False
        self._state = threading.Lock()

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left

    def headers(self, method: str | None) -> dict[str, str]:
        out = {"Accept": ACCEPT, "Content-Type": "application/json"}
        out.update(self.transport.static_headers)
        if self.transport.auth is not None:
            authorization = self.transport.auth.authorization()
            if authorization is not None:
                out["Authorization"] = authorization
        with self._state:
            if self.protocol is not None:
                out["MCP-Protocol-Version"] = self.protocol
            if self.session_id is not None:
                out["Mcp-Session-Id"] = self.session_id
            if self.modern and method is not None:
                out["Mcp-Method"] = method
        return out

    def send(self, message: Mapping[str, Any]) -> None:
        if self._closed:
            return
        method = message.get("method")
        if method == "server/discover":
            with self._state:
                self.modern, self.protocol, self.session_id = True, MODERN_VERSION, None
        elif method == "initialize":
            with self._state:
                self.modern, self.protocol, self.session_id = False, None, None
        if isinstance(method, str) and "id" in message:
            # A request: answered from its own thread, so that a slow answer never holds
            # up another connection.
            headers = self.headers(method)
            thread = threading.Thread(
                target=self._exchange, args=(dict(message), headers), daemon=True
            )
            thread.start()
            return
        # A notification or a response to the server: sent before anything that follows.
        self._exchange(dict(message), self.headers(method if isinstance(method, str) else None))

    def _exchange(self, message: dict[str, Any], headers: dict[str, str]) -> None:
        expect = message.get("id") if "method" in message else None
        try:
            self._post(message, headers, expect)
        except _Refused:
            if expect is not None:
                self.inbox.put(Refused(self, expect))
        except TimeoutError:
            pass  # the conversation's deadline passed: it reports that itself
        except httpx2.TimeoutException:
            pass
        except GuardError as exc:
            self.inbox.put(Failed(self, exc, final=True))
        except ProbeError as exc:
            self.inbox.put(Failed(self, exc, final=isinstance(exc, _Final)))
        except httpx2.ConnectError:
            self.inbox.put(Failed(self, ProbeError("cannot connect to the server"), final=True))
        except httpx2.HTTPError as exc:
            error = ProbeError(f"the HTTP exchange failed ({type(exc).__name__})")
            self.inbox.put(Failed(self, error))
        except RuntimeError:  # the client was closed under a late answer
            pass

    def _post(self, message: dict[str, Any], headers: dict[str, str], expect: Any) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        with self.client.stream(
            "POST",
            self.url,
            headers=headers,
            content=body,
            timeout=self.remaining(),
            same_origin=self.transport.credentials,
        ) as response:
            self.url = str(response.url)
            status = response.status_code
            if status in (401, 403):
                raise AuthorizationRequired(status)
            if expect is None:
                if status in (200, 202, 204):
                    return
                raise ProbeError(f"the server answered HTTP {status} to a notification")
            if status in _FALLBACK_STATUSES:
                raise _Refused
            if status != 200:
                raise ProbeError(f"the server answered HTTP {status}")
            session = response.headers.get("mcp-session-id")
            if session is not None:
                if not (0 < len(session) <= 256 and all(0x21 <= ord(c) <= 0x7E for c in session)):
                    raise ProbeError("the server sent an unusable Mcp-Session-Id")
                with self._state:
                    if self.session_id is None:
                        self.session_id = session
            kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind == "application/json":
                answer = self._from_json(self._read_all(response), expect)
            elif kind == "text/event-stream":
                answer = self._from_events(response, expect)
            else:
                raise _Refused
            if message.get("method") == "initialize":
                result = answer.get("result")
                version = result.get("protocolVersion") if isinstance(result, dict) else None
                with self._state:
                    self.protocol = (
                        version
                        if isinstance(version, str) and len(version) <= 32
                        else LATEST_HANDSHAKE
                    )
            self.inbox.put(Received(self, answer))

    def _chunks(self, response: httpx2.Response) -> Iterator[bytes]:
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            self.transport.count(len(chunk), size)
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
        answer: dict[str, Any] | None = None
        for msg in messages:
            if not isinstance(msg, dict):
                continue
            if msg.get("id") == expect and "method" not in msg:
                answer = msg
            elif "method" in msg:
                self.inbox.put(Received(self, msg))
        if answer is None:
            raise _Refused
        return answer

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
                if not isinstance(msg, dict):
                    continue
                if msg.get("id") == expect and "method" not in msg:
                    return msg
                if "method" in msg:  # a request or notification of the server's, on the way
                    self.inbox.put(Received(self, msg))
        raise ProbeError("the server's event stream ended without an answer")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.session_id is None:
            return
        try:
            with self.client.stream(
                "DELETE",
                self.url,
                headers=self.headers(None),
                timeout=2.0,
                same_origin=self.transport.credentials,
            ):
                pass
        except (httpx2.HTTPError, ProbeError, RuntimeError):
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
    era: Era = "auto",
    verify: bool = True,
    fallback_after: float = FALLBACK_AFTER,
    headers: Sequence[tuple[str, str]] = (),
    auth: Authorizer | None = None,
    trust_env: bool = False,
) -> ProbeResult:
    """List everything a Streamable HTTP server offers, within ``timeout`` seconds.
    Raises :class:`ProbeError` (:class:`~toolpin.probe.ssrf.GuardError` when the guard
    refuses, :class:`AuthorizationRequired` for a 401/403).

    ``headers`` and ``auth`` are sent with every request (and never to another origin);
    ``trust_env`` uses the environment's proxies. Neither is for a URL from a public
    listing."""
    transport = HttpTransport(
        url,
        policy=policy,
        timeout=timeout,
        verify=verify,
        headers=headers,
        auth=auth,
        trust_env=trust_env,
    )
    try:
        return converse(
            transport,
            timeout=timeout,
            era=era,
            client_info=CLIENT_INFO,
            id_prefix="toolpin-crawl",
            fallback_after=fallback_after,
        )
    finally:
        transport.close()


__all__ = ["AuthorizationRequired", "Authorizer", "GuardError", "HttpTransport", "probe_http"]
