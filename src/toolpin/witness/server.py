"""``toolpin log witness serve``: the witness's HTTP endpoint, ``POST /add-checkpoint``.

* **loopback by default**: a non-loopback listening address needs ``public=True`` (the
  ``--public`` flag); the operator then names the host names the witness answers to.
* **Host and Origin**: a request whose ``Host`` is not one of the witness's own names
  (``localhost``, ``127.0.0.1``, ``[::1]`` or the listening address, with its port, plus
  any the operator allows) is refused with 403, as is one carrying an ``Origin`` that is
  not ``http://`` one of those: a web page cannot reach the witness through DNS rebinding.
* **bodies**: a ``Content-Length`` is required (411; chunked bodies are refused) and at
  most :data:`~toolpin.witness.cosigner.MAX_REQUEST_BYTES` (413, unread, the connection
  closed). A slow client is dropped after :data:`toolpin.util.httpserve.READ_TIMEOUT` seconds.
* anything else than ``POST /add-checkpoint`` is 404 (405 for another method there).

Nothing a client sent is ever written back or to the console: answers and events are
fixed words (see :mod:`toolpin.witness.cosigner`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from typing import Final

from toolpin.errors import InputError
from toolpin.util.httpserve import Listening, QuietHandler, is_loopback
from toolpin.witness.cosigner import MAX_REQUEST_BYTES, TEXT_TYPE, Answer, Witness

PATH: Final = "/add-checkpoint"

__all__ = ["PATH", "WitnessServer", "is_loopback", "parse_listen"]


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[V6]:PORT`` -> (host, port); port 0 picks a free one."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise InputError("--listen takes HOST:PORT (e.g. 127.0.0.1:7380)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        raise InputError("--listen takes HOST:PORT (e.g. 127.0.0.1:7380)")
    return host, int(port_text)


class WitnessServer(Listening):
    """The listening witness. ``serve_forever`` blocks; ``close`` stops it."""

    def __init__(
        self,
        witness: Witness,
        host: str,
        port: int,
        *,
        public: bool = False,
        allowed_hosts: Iterable[str] = (),
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.witness = witness
        self.log = log
        allowed_hosts = tuple(allowed_hosts)
        super().__init__(
            host, port, _handler(self), public=public, allowed_hosts=allowed_hosts, max_clients=None
        )
        self.origins = frozenset(f"http://{h}" for h in self.hosts) | frozenset(
            f"https://{h}" for h in allowed_hosts
        )

    @property
    def url(self) -> str:
        return self.base_url


def _handler(owner: WitnessServer) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        server_version = "toolpin-witness"

        def _send(self, answer: Answer, *, close: bool = False, **extra: str) -> None:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            self.send_header("X-Content-Type-Options", "nosniff")
            for name, value in extra.items():
                self.send_header(name.replace("_", "-"), value)
            if close:
                self.close_connection = True
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer.body)

        def _refuse(self, status: int, text: str, **extra: str) -> None:
            """A refusal before the body is read: the connection closes."""
            self._send(Answer(status, (text + "\n").encode(), TEXT_TYPE), close=True, **extra)

        def _allowed(self) -> bool:
            host = (self.headers.get("Host") or "").lower()
            origin = self.headers.get("Origin")
            if host not in owner.hosts or (
                origin is not None and origin.lower() not in owner.origins
            ):
                self._refuse(403, "Host or Origin is not this witness")
                return False
            if self.path != PATH:
                self._refuse(404, f"the witness endpoint is POST {PATH}")
                return False
            return True

        def do_POST(self) -> None:
            if not self._allowed():
                return
            if self.headers.get("Transfer-Encoding") is not None:
                self._refuse(411, "a Content-Length is required (no chunked bodies)")
                return
            length = self.headers.get("Content-Length", "")
            if not length.isascii() or not length.isdigit():
                self._refuse(411, "a Content-Length is required")
                return
            if int(length) > MAX_REQUEST_BYTES:
                self._refuse(413, "the request body is too large")
                return
            try:
                data = self.rfile.read(int(length))
            except OSError:
                self.close_connection = True
                return
            if len(data) != int(length):
                self.close_connection = True
                return
            answer = owner.witness.add_checkpoint(data)
            if answer.event and owner.log is not None:
                owner.log(answer.event)
            self._send(answer)

        def _other(self) -> None:
            if not self._allowed():
                return
            self._refuse(405, f"only POST is accepted at {PATH}", Allow="POST")

        do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _other

    return Handler
