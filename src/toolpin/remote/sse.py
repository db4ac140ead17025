"""The server side of ``toolpin run --url`` over the legacy HTTP+SSE transport (2024-11-05).

A GET on the URL opens an event stream whose first ``endpoint`` event names where to POST
(it must be on the URL's origin: headers and tokens go nowhere else). Each client line is
POSTed there (the server answers 202); every ``message`` event of the stream becomes a
server line. The stream ending is the server going away. Same fail-closed rules as
:mod:`toolpin.remote.streamable`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, Final

import httpx2

from toolpin.probe.ssrf import GuardError, check_url
from toolpin.remote.streamable import Closed, Deliver, FaultStop, endpoint_policy
from toolpin.remote.target import RemoteTarget
from toolpin.remote.wire import (
    SseDecoder,
    TransportFault,
    message_line,
    new_client,
    same_origin,
)

ENDPOINT_TIMEOUT: Final = 30.0


class SseChannel(FaultStop):
    """A remote MCP server reached over HTTP+SSE, seen as a line channel."""

    def __init__(self, target: RemoteTarget, *, log: Callable[[str], None], auth: Any = None):
        self.target = target
        self.url = check_url(target.url)
        self._log = log
        self._auth = auth
        self._client = new_client(endpoint_policy())
        self._deliver: Deliver = lambda line: None
        self._closed: Closed = lambda reason: None
        self._endpoint: httpx2.URL | None = None
        self._ready = threading.Event()
        self._queue: list[bytes | None] = []
        self._cond = threading.Condition()
        self._stream: httpx2.Response | None = None
        self.dead = threading.Event()
        self.fault: str | None = None
        self._dropped_note = False
        self._started = False

    def start(self, deliver: Deliver, closed: Closed) -> None:
        """Get ready; the server is contacted when the client sends its first line (as
        over Streamable HTTP), so a fault is always answered to a waiting request."""
        self._deliver = deliver
        self._closed = closed

    def _connect(self) -> None:
        self._started = True
        threading.Thread(target=self._read_stream, name="toolpin-sse", daemon=True).start()
        threading.Thread(target=self._send_loop, name="toolpin-sse-post", daemon=True).start()

    def send(self, data: bytes) -> None:
        with self._cond:
            self._queue.append(data)
            self._cond.notify()
            if not self._started:
                self._connect()

    def close_input(self, wait: float = 10.0) -> None:
        if not self._started:
            self.dead.set()
            return
        with self._cond:
            self._queue.append(None)
            self._cond.notify()
            self._cond.wait_for(lambda: not self._queue or self.dead.is_set(), wait)
        self.dead.set()
        self._close_streams()

    def terminate(self) -> None:
        if not self._first_stop():
            return

        def stop() -> None:
            self._close_streams()
            self._closed(None)

        threading.Thread(target=stop, name="toolpin-sse-stop", daemon=True).start()

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Accept": accept}
        headers.update(self.target.headers)
        if self._auth is not None:
            authorization = self._auth.authorization()
            if authorization is not None:
                headers["Authorization"] = authorization
        return headers

    def _read_stream(self) -> None:
        try:
            self._stream_events()
        except TransportFault as exc:
            self._fail(str(exc))
            return
        except GuardError as exc:
            self._fail(exc.message)
            return
        except httpx2.HTTPError as exc:
            if not self.dead.is_set():
                self._fail(f"the event stream broke off ({type(exc).__name__})")
            return
        if not self.dead.is_set():
            self._fail("the server closed its event stream")

    def _stream_events(self) -> None:
        authorized = False
        while True:
            request = self._client.build_request(
                "GET", self.url, headers=self._headers("text/event-stream")
            )
            response = self._client.send(request, stream=True)
            if (
                response.status_code == 401
                and not authorized
                and not self.target.static_authorization
            ):
                authorized = True
                response.read()
                response.close()
                if self._auth is None:
                    from toolpin.remote.oauth import OAuthSession

                    self._auth = OAuthSession(self.target, log=self._log)
                self._auth.authorize(response)
                continue
            break
        self._stream = response
        try:
            if response.status_code != 200:
                raise TransportFault(f"the server answered the event stream with HTTP "
                                     f"{response.status_code}")  # fmt: skip
            kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind != "text/event-stream":
                raise TransportFault("the server's event stream is not text/event-stream")
            decoder = SseDecoder()
            for chunk in response.iter_bytes():
                if self.dead.is_set():
                    return
                for event, data in decoder.feed(chunk):
                    if event == "endpoint" and self._endpoint is None:
                        self._set_endpoint(data)
                    elif event == "message":
                        if self._endpoint is None:
                            raise TransportFault("the server sent a message before its endpoint")
                        out = message_line(data)
                        if out is None:
                            if data.strip() and not self._dropped_note:  # empty: a keep-alive
                                self._dropped_note = True
                                self._log("toolpin: skipped a server event that is not JSON-RPC")
                            continue
                        self._deliver(out)
        finally:
            response.close()

    def _set_endpoint(self, data: bytes) -> None:
        try:
            endpoint = check_url(self.url.join(data.decode("utf-8").strip()))
        except (GuardError, UnicodeDecodeError, httpx2.InvalidURL, ValueError):
            raise TransportFault("the server's endpoint event is not a usable URL") from None
        if not same_origin(endpoint, self.url):
            raise TransportFault("the server's endpoint is on another origin; refused")
        self._endpoint = endpoint
        self._ready.set()

    def _send_loop(self) -> None:
        if not self._ready.wait(ENDPOINT_TIMEOUT) and not self.dead.is_set():
            self._fail("the server sent no endpoint event")
            return
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue))
                line = self._queue[0]
            if line is None or self.dead.is_set():
                with self._cond:
                    self._queue.clear()
                    self._cond.notify_all()
                return
            try:
                self._post(line)
            except TransportFault as exc:
                self._fail(str(exc))
                return
            with self._cond:
                self._queue.pop(0)
                self._cond.notify_all()

    def _post(self, line: bytes) -> None:
        assert self._endpoint is not None
        headers = self._headers("application/json, text/event-stream")
        headers["Content-Type"] = "application/json"
        try:
            response = self._client.request(
                "POST", self._endpoint, headers=headers, content=line.rstrip(b"\r\n")
            )
        except GuardError as exc:
            raise TransportFault(exc.message) from None
        except httpx2.HTTPError as exc:
            raise TransportFault(f"cannot reach the server ({type(exc).__name__})") from None
        if response.status_code in (301, 302, 303, 307, 308):
            raise TransportFault("the server redirected a message; not followed")
        if not 200 <= response.status_code < 300:
            raise TransportFault(f"the server refused a message (HTTP {response.status_code})")

    def _close_streams(self) -> None:
        stream = self._stream
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()
