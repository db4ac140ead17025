"""The server side of ``toolpin run --url`` over Streamable HTTP (and the HTTP+SSE
fallback): client lines in, server lines out, so the proxy's session checks a remote
server with the same code as a local one.

* Each client line is one POST (``Accept: application/json, text/event-stream``) with
  ``Mcp-Session-Id`` once the server gave one, ``MCP-Protocol-Version`` (the negotiated
  handshake version, or the 2026-07-28 request's own ``_meta`` version, with the request
  metadata headers of MCP 2026-07-28 *Streamable HTTP* § "Request Metadata":
  ``Mcp-Method`` on every request, ``Mcp-Name`` for ``tools/call``, ``prompts/get`` and
  ``resources/read``, and ``Mcp-Param-*`` for the ``x-mcp-header`` arguments of a
  ``tools/call``, from the tool's schema in the listing the server sent; see
  :mod:`toolpin.remote.param_headers`). Requests run concurrently; ``initialize`` and
  notifications are sent in order (the next line waits for their status).
* A JSON body (one message or a batch) and every ``message`` event of a
  ``text/event-stream`` answer become server lines; so do the events of the GET stream,
  opened after ``notifications/initialized`` in the handshake era (where
  ``list_changed`` arrives). In 2026-07-28 ``subscriptions/listen`` is an ordinary
  request whose answer streams.
* **Fail closed.** An answer toolpin cannot classify stops the whole session, like a
  server process that died: a 2xx with another content type, a message over 64 MiB, an
  ``Mcp-Session-Id`` that changes, a redirect to another origin (a token must not follow
  it), an expired session. An HTTP error status answers that one request with a JSON-RPC
  error of toolpin's own words (never the server's text), except for toolpin's own check
  requests: a check that cannot be done stops the session (-31043).
* ``401``: the OAuth flow (:mod:`toolpin.remote.oauth`), once per request, unless the
  user gave an ``Authorization`` header.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from typing import Any, Final

import httpx2

from toolpin.core.wire import HANDSHAKE_VERSIONS, META_PROTOCOL
from toolpin.probe.ssrf import AddressPolicy, GuardError, check_url
from toolpin.proxy.channel import signals_to_main
from toolpin.remote.param_headers import HeaderMap, header_map, param_headers
from toolpin.remote.target import RemoteTarget
from toolpin.remote.wire import (
    ACCEPT,
    MAX_MESSAGE,
    NAME_BEARING,
    SESSION_ID,
    SseDecoder,
    TransportFault,
    header_value,
    json_body_lines,
    message_line,
    new_client,
    parse_message,
    same_origin,
)
from toolpin.util.net import read_capped

MAX_CONCURRENT: Final = 64
"""Requests in flight at once (a client rarely has more than a few)."""
MAX_REDIRECTS: Final = 3
LISTEN_RETRIES: Final = 5
_OWN_PREFIX: Final = "toolpin-"

Deliver = Callable[[bytes], None]
Closed = Callable[[str | None], None]


def endpoint_policy() -> AddressPolicy:
    """Where ``--url`` (a URL the user chose) may lead: loopback and private networks
    are fine (local and company servers are common); link-local and the cloud metadata
    address, multicast and unspecified addresses never are."""
    return AddressPolicy(allow_private=True)


class _Fallback(Exception):
    """The server does not speak Streamable HTTP (404/405 to the first POST)."""


class FaultStop:
    """How an HTTP channel (either transport) stops on a fault: the first reason is kept
    and said once on stderr, the streams are closed and the session is told."""

    target: RemoteTarget
    dead: threading.Event
    fault: str | None
    _log: Callable[[str], None]
    _closed: Closed

    def _close_streams(self) -> None:
        raise NotImplementedError

    def _first_stop(self) -> bool:
        """Mark the channel dead; whether it was alive until now (stop only once)."""
        if self.dead.is_set():
            return False
        self.dead.set()
        return True

    def _fail(self, reason: str) -> None:
        if self.dead.is_set():
            return
        self.fault = reason
        self.dead.set()
        self._log(f"toolpin: {self.target.label}: {reason}; the session is stopped.")
        self._close_streams()
        self._closed(reason)


class StreamableHttpChannel(FaultStop):
    """A remote MCP server reached over Streamable HTTP, seen as a line channel."""

    def __init__(
        self,
        target: RemoteTarget,
        *,
        log: Callable[[str], None],
        auth: Any = None,
        allow_fallback: bool = False,
    ) -> None:
        self.target = target
        self.url = check_url(target.url)
        self._log = log
        self._auth = auth
        self._allow_fallback = allow_fallback
        self._client = new_client(endpoint_policy())
        self._deliver: Deliver = lambda line: None
        self._closed: Closed = lambda reason: None
        self._queue: list[bytes | None] = []
        self._cond = threading.Condition()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT)
        self._lock = threading.Lock()
        self._responses: set[httpx2.Response] = set()
        self._open_requests: dict[str, httpx2.Response] = {}  # JSON of the id -> its answer
        self._cancelled: set[str] = set()
        self._inflight = 0
        self.session_id: str | None = None
        self.protocol: str | None = None
        self._modern: str | None = None
        self._listening = False
        self._sent_any = False
        self._spoke = False  # a 2xx seen: the server speaks Streamable HTTP
        self.dead = threading.Event()
        self.fault: str | None = None
        self._sender: threading.Thread | None = None
        self.fallback_line: bytes | None = None
        self._dropped_note = False
        self._tool_headers: dict[str, HeaderMap | str] = {}
        """Each listed tool's ``Mcp-Param-*`` map (or why its annotation is invalid)."""

    # ------------------------------------------------------------------ channel surface

    def start(self, deliver: Deliver, closed: Closed) -> None:
        """Begin: ``deliver`` gets each server line, ``closed`` once at the end."""
        self._deliver = deliver
        self._closed = closed
        self._sender = threading.Thread(
            target=signals_to_main(self._send_loop), name="toolpin-http", daemon=True
        )
        self._sender.start()

    def send(self, data: bytes) -> None:
        """A client line (never blocks: the session calls it with its lock held)."""
        with self._cond:
            self._queue.append(data)
            self._cond.notify()

    def close_input(self, wait: float = 10.0) -> None:
        """The client hung up: send what is queued, let answers in flight finish (up to
        ``wait`` seconds), then end the server's session."""
        with self._cond:
            self._queue.append(None)
            self._cond.notify()
        if self._sender is not None:
            self._sender.join(wait)
        with self._cond:
            self._cond.wait_for(lambda: self._inflight == 0 or self.dead.is_set(), wait)
        self._end_session()
        self.dead.set()
        self._close_streams()

    def terminate(self) -> None:
        """Stop now (a block): never waits; ``closed`` is called from another thread."""
        if not self._first_stop():
            return
        threading.Thread(
            target=signals_to_main(self._stop_now), name="toolpin-http-stop", daemon=True
        ).start()

    def _stop_now(self) -> None:
        self._close_streams()
        self._end_session()
        self._closed(None)

    # ------------------------------------------------------------------------ sending

    def _send_loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue))
                line = self._queue.pop(0)
            if line is None or self.dead.is_set():
                return
            msg = parse_message(line)
            try:
                if msg is not None and "id" in msg and isinstance(msg.get("method"), str):
                    if msg["method"] == "initialize" or not self._sent_any:
                        self._sent_any = True
                        self._exchange(line, msg)  # in order: the session id comes from it
                    else:
                        self._slots.acquire()
                        with self._cond:
                            self._inflight += 1
                        threading.Thread(
                            target=signals_to_main(self._exchange_in_thread),
                            args=(line, msg),
                            name="toolpin-http-request",
                            daemon=True,
                        ).start()
                else:
                    self._sent_any = True
                    self._one_way(line, msg)
            except _Fallback:
                self.fallback_line = line
                self._closed("fallback")
                return
            except TransportFault as exc:
                self._fail(str(exc))
                return

    def _exchange_in_thread(self, line: bytes, msg: dict[str, Any]) -> None:
        try:
            self._exchange(line, msg)
        except TransportFault as exc:
            self._fail(str(exc))
        except _Fallback:  # pragma: no cover - only the first exchange falls back
            self._fail("the server stopped speaking Streamable HTTP")
        finally:
            self._slots.release()
            with self._cond:
                self._inflight -= 1
                self._cond.notify_all()

    def _headers(self, msg: dict[str, Any] | None, *, accept: str = ACCEPT) -> dict[str, str]:
        headers = {"Accept": accept, "Content-Type": "application/json"}
        headers.update(self.target.headers)
        version: str | None = None
        method = msg.get("method") if msg is not None else None
        params = msg.get("params") if msg is not None else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get(META_PROTOCOL), str):
            version = meta[META_PROTOCOL]
            if version not in HANDSHAKE_VERSIONS:
                self._modern = version
        if version is None:
            version = self.protocol or (self._modern if self.session_id is None else None)
        if version is not None and header_value(version) == version:
            headers["MCP-Protocol-Version"] = version
            if version not in HANDSHAKE_VERSIONS and isinstance(method, str):
                headers["Mcp-Method"] = header_value(method)
                key = NAME_BEARING.get(method)
                value = params.get(key) if key and isinstance(params, dict) else None
                if isinstance(value, str):
                    headers["Mcp-Name"] = header_value(value)
                if method == "tools/call" and isinstance(params, dict):
                    mirrored = self._param_headers(params)
                    if isinstance(mirrored, dict):
                        headers.update(mirrored)
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self._auth is not None:
            authorization = self._auth.authorization()
            if authorization is not None:
                headers["Authorization"] = authorization
        return headers

    def _param_headers(self, params: dict[str, Any]) -> dict[str, str] | str | None:
        """The ``Mcp-Param-*`` headers of a 2026-07-28 ``tools/call``, why the call cannot
        be made (a string), or ``None`` for a tool no listing showed."""
        name = params.get("name")
        mapping = self._tool_headers.get(name) if isinstance(name, str) else None
        if mapping is None or isinstance(mapping, str):
            return mapping
        return param_headers(mapping, params.get("arguments"))

    def _learn_tools(self, msg: dict[str, Any]) -> None:
        """Record the ``x-mcp-header`` maps of a ``tools/list`` answer."""
        result = msg.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self._tool_headers[tool["name"]] = header_map(tool.get("inputSchema"))

    def _refused_call(self, msg: dict[str, Any]) -> bool:
        """Answer a 2026-07-28 ``tools/call`` that cannot carry its ``Mcp-Param-*``
        headers with toolpin's own error (never sent to the server)."""
        params = msg.get("params")
        if msg.get("method") != "tools/call" or not isinstance(params, dict):
            return False
        meta = params.get("_meta")
        version = meta.get(META_PROTOCOL) if isinstance(meta, dict) else None
        if not isinstance(version, str) or version in HANDSHAKE_VERSIONS:
            return False
        problem = self._param_headers(params)
        if not isinstance(problem, str):
            return False
        text = f"toolpin: this call cannot be sent over HTTP: the tool has {problem}"
        error = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": text}}
        self._deliver(json.dumps(error).encode() + b"\n")
        return True

    def _open(
        self, method: str, body: bytes | None, msg: dict[str, Any] | None, accept: str = ACCEPT
    ) -> httpx2.Response:
        """Send one request (same-origin redirects followed, one OAuth retry); the
        response is streaming and registered for :meth:`_close_streams`."""
        url = self.url
        authorized = False
        hops = 0
        while True:
            if self.dead.is_set():
                raise TransportFault("the session has ended")
            request = self._client.build_request(
                method, url, headers=self._headers(msg, accept=accept), content=body
            )
            try:
                response = self._client.send(request, stream=True)
            except GuardError as exc:
                raise TransportFault(exc.message) from None
            except httpx2.TimeoutException:
                raise TransportFault("the server did not answer in time") from None
            except httpx2.HTTPError as exc:
                raise TransportFault(f"cannot reach the server ({type(exc).__name__})") from None
            status = response.status_code
            if status in (301, 302, 303, 307, 308):
                response.close()
                location = response.headers.get("location")
                hops += 1
                if not location or hops > MAX_REDIRECTS or status in (301, 302, 303):
                    raise TransportFault(f"the server redirected (HTTP {status}); not followed")
                try:
                    target = check_url(url.join(location))
                except (GuardError, httpx2.InvalidURL, ValueError):
                    raise TransportFault("the server redirected to an unusable URL") from None
                if not same_origin(target, self.url):
                    raise TransportFault(
                        "the server redirected to another origin; refused (headers and "
                        "tokens are sent only to the --url's origin)"
                    )
                url = target
                continue
            if status in (401, 403) and not authorized and self._may_authorize(response):
                authorized = True
                response.read()
                response.close()
                self._authorize(response)
                continue
            with self._lock:
                self._responses.add(response)
            return response

    def _may_authorize(self, response: httpx2.Response) -> bool:
        if self.target.static_authorization:
            return False
        if response.status_code == 403:
            challenge = response.headers.get("www-authenticate", "")
            return "insufficient_scope" in challenge
        return True

    def _authorize(self, response: httpx2.Response) -> None:
        if self._auth is None:
            from toolpin.remote.oauth import OAuthSession

            self._auth = OAuthSession(self.target, log=self._log)
        self._auth.authorize(response)

    def _release(self, response: httpx2.Response) -> None:
        with self._lock:
            self._responses.discard(response)
        response.close()

    def _exchange(self, line: bytes, msg: dict[str, Any]) -> None:
        id_ = msg["id"]
        method = msg["method"]
        if method == "initialize":
            self.session_id = None  # a new handshake starts a new session
            self.protocol = None
        if self._refused_call(msg):
            return
        response = self._open("POST", line.rstrip(b"\r\n"), msg)
        key = json.dumps(id_)
        with self._lock:
            self._open_requests[key] = response
        try:
            answered = self._read_answer(response, id_, method)
        finally:
            with self._lock:
                self._open_requests.pop(key, None)
                cancelled = key in self._cancelled
                self._cancelled.discard(key)
            self._release(response)
        if cancelled:
            return  # the client gave up on it: no answer is expected
        if not answered:
            self._no_answer(id_, response.status_code)

    def _read_answer(self, response: httpx2.Response, id_: Any, method: str) -> bool:
        status = response.status_code
        self._check_session(response, opening=method == "initialize")
        if status >= 400:
            if status == 404 and self.session_id is not None:
                raise TransportFault("the server ended the session (HTTP 404)")
            if status in (404, 405) and self._allow_fallback and not self._spoke:
                raise _Fallback
            # A JSON-RPC error for this request in the body is the server's own answer.
            if _content_type(response) == "application/json":
                body = _read_capped(response)
                lines = json_body_lines(body) or []
                found = False
                for out in lines:
                    answer = parse_message(out)
                    if answer is not None and answer.get("id") == id_ and "error" in answer:
                        self._deliver(out)
                        found = True
                return found
            return False
        self._spoke = True
        if status in (202, 204):
            return False
        if status != 200:
            raise TransportFault(f"the server answered a request with HTTP {status}")
        kind = _content_type(response)
        if kind == "application/json":
            parsed = json_body_lines(_read_capped(response))
            if parsed is None:
                raise TransportFault("the server's JSON answer is not a JSON-RPC message")
            return self._deliver_all(parsed, id_, method)
        if kind == "text/event-stream":
            return self._read_events(response, id_, method)
        raise TransportFault("the server answered with a content type that is not JSON-RPC")

    def _deliver_all(self, lines: list[bytes], id_: Any, method: str) -> bool:
        answered = False
        for out in lines:
            if self._is_answer(out, id_, method):
                answered = True
            self._deliver(out)
        return answered

    def _read_events(self, response: httpx2.Response, id_: Any, method: str | None) -> bool:
        decoder = SseDecoder()
        answered = False
        try:
            for chunk in response.iter_bytes():
                if self.dead.is_set():
                    return True
                for event, data in decoder.feed(chunk):
                    if event != "message":
                        continue  # only message events carry JSON-RPC
                    out = message_line(data)
                    if out is None:
                        if data.strip():  # an empty one primes resumption: not a message
                            self._note_dropped()
                        continue
                    if id_ is not None and self._is_answer(out, id_, method):
                        answered = True
                    self._deliver(out)
                    if answered and id_ is not None:
                        return True  # the stream's work is done
        except httpx2.HTTPError:
            if self.dead.is_set() or json.dumps(id_) in self._cancelled:
                return True
            if not answered:
                raise TransportFault("the server's event stream broke off") from None
        return answered

    def _is_answer(self, line: bytes, id_: Any, method: str | None) -> bool:
        msg = parse_message(line)
        if msg is None or "method" in msg or msg.get("id") != id_:
            return False
        if method == "tools/list":
            self._learn_tools(msg)
        if method == "initialize":
            result = msg.get("result")
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            if isinstance(version, str) and header_value(version) == version and len(version) < 33:
                self.protocol = version
        return True

    def _check_session(self, response: httpx2.Response, *, opening: bool) -> None:
        session = response.headers.get("mcp-session-id")
        if session is None:
            return
        if not SESSION_ID.match(session):
            raise TransportFault("the server sent an unusable Mcp-Session-Id")
        with self._lock:
            if self.session_id is None and opening:
                self.session_id = session
            elif self.session_id is not None and session != self.session_id:
                raise TransportFault("the server changed its Mcp-Session-Id mid-session")

    def _no_answer(self, id_: Any, status: int) -> None:
        if isinstance(id_, str) and id_.startswith(_OWN_PREFIX):
            raise TransportFault(f"the server did not answer toolpin's check (HTTP {status})")
        if status in (401, 403):
            text = (
                f"toolpin: the remote server refused the credentials (HTTP {status}); "
                "check the --header values"
            )
        elif status != 200:
            text = f"toolpin: the remote server answered HTTP {status} without a JSON-RPC answer"
        else:
            text = "toolpin: the remote server's answer stream ended without an answer"
        error = {"jsonrpc": "2.0", "id": id_, "error": {"code": -32603, "message": text}}
        self._deliver(json.dumps(error).encode() + b"\n")

    def _cancel(self, msg: dict[str, Any] | None) -> None:
        """``notifications/cancelled``: close that request's answer stream (how the
        2026-07-28 revision cancels; the notification is sent on as well)."""
        if msg is None or msg.get("method") != "notifications/cancelled":
            return
        params = msg.get("params")
        if not isinstance(params, dict) or "requestId" not in params:
            return
        key = json.dumps(params["requestId"])
        with self._lock:
            response = self._open_requests.get(key)
            if response is None:
                return
            self._cancelled.add(key)
        with contextlib.suppress(Exception):
            response.close()

    def _one_way(self, line: bytes, msg: dict[str, Any] | None) -> None:
        self._cancel(msg)
        response = self._open("POST", line.rstrip(b"\r\n"), msg)
        try:
            self._check_session(response, opening=False)
            status = response.status_code
            if status == 404 and self.session_id is not None:
                raise TransportFault("the server ended the session (HTTP 404)")
            if status == 200 and _content_type(response) == "text/event-stream":
                self._read_events(response, None, None)
        finally:
            self._release(response)
        if (
            msg is not None
            and msg.get("method") == "notifications/initialized"
            and self.session_id is not None
            and not self._listening
        ):
            self._listening = True
            threading.Thread(
                target=signals_to_main(self._listen), name="toolpin-http-get", daemon=True
            ).start()

    # ------------------------------------------------------------------ the GET stream

    def _listen(self) -> None:
        failures = 0
        while not self.dead.is_set() and failures < LISTEN_RETRIES:
            try:
                response = self._open("GET", None, None, accept="text/event-stream")
            except TransportFault as exc:
                if not self.dead.is_set():
                    self._fail(str(exc))
                return
            try:
                if response.status_code in (404, 405) or response.status_code >= 400:
                    return  # no GET stream on this server
                self._check_session(response, opening=False)
                if _content_type(response) != "text/event-stream":
                    raise TransportFault("the server's GET stream is not an event stream")
                self._read_events(response, None, None)
            except TransportFault as exc:
                self._fail(str(exc))
                return
            finally:
                self._release(response)
            failures += 1
            self.dead.wait(min(2.0, 0.2 * failures))

    # ------------------------------------------------------------------------ ending

    def _note_dropped(self) -> None:
        if not self._dropped_note:
            self._dropped_note = True
            self._log("toolpin: skipped a server event that is not a JSON-RPC message")

    def _close_streams(self) -> None:
        with self._lock:
            responses = list(self._responses)
            self._responses.clear()
        for response in responses:
            with contextlib.suppress(Exception):
                response.close()

    def _end_session(self) -> None:
        session = self.session_id
        if session is None:
            return
        self.session_id = None
        headers = {"Mcp-Session-Id": session, **dict(self.target.headers)}
        if self.protocol:
            headers["MCP-Protocol-Version"] = self.protocol
        if self._auth is not None:
            authorization = self._auth.authorization()
            if authorization is not None:
                headers["Authorization"] = authorization
        with contextlib.suppress(Exception):
            self._client.request("DELETE", self.url, headers=headers, timeout=2.0)


def _content_type(response: httpx2.Response) -> str:
    return response.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _read_capped(response: httpx2.Response) -> bytes:
    return read_capped(response.iter_bytes(), MAX_MESSAGE, _too_large)


def _too_large() -> TransportFault:
    return TransportFault(f"an answer larger than {MAX_MESSAGE >> 20} MiB")
