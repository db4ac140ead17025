"""The pieces toolpin's small HTTP servers share (the witness, ``toolpin log serve``).

* :func:`is_loopback` and :func:`require_loopback`: a server listens on a loopback address
  unless its operator passed ``--public``;
* :func:`own_hosts`: the ``Host`` values a server answers to (its loopback names and the
  listening address, with its port, plus any the operator allows), so a web page cannot
  reach it through DNS rebinding;
* :func:`listen`: a :class:`~http.server.ThreadingHTTPServer` (IPv4 or IPv6) with a long
  accept queue, daemon threads and at most ``max_clients`` connections served at once (one
  more is closed unanswered; ``None``: no cap, as the witness has), refused with one fixed
  line when the address cannot be used.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from toolpin.errors import InputError

MAX_CLIENTS: Final = 64
"""Connections one server handles at once by default."""
READ_TIMEOUT: Final = 15.0
"""Seconds a silent client is waited for before its connection is dropped."""

__all__ = [
    "MAX_CLIENTS",
    "READ_TIMEOUT",
    "Listening",
    "QuietHandler",
    "is_loopback",
    "listen",
    "own_hosts",
    "require_loopback",
    "shown_host",
]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_loopback(host: str, public: bool) -> None:
    if not public and not is_loopback(host):
        raise InputError(
            f"refusing to listen on {host}, which is not a loopback address",
            advice="Pass --public to serve other machines (behind a TLS front end).",
        )


def shown_host(host: str) -> str:
    """``host`` as it appears in a URL or a ``Host`` header (IPv6 in brackets)."""
    return f"[{host}]" if ":" in host else host


def own_hosts(host: str, port: int, allowed: tuple[str, ...] | list[str] = ()) -> frozenset[str]:
    """The ``Host`` values (lower case, with the port) a server on ``host:port`` answers."""
    names = {"localhost", "127.0.0.1", "[::1]", shown_host(host)}
    hosts = {f"{n}:{port}" for n in names}
    hosts.update(h.lower() for h in allowed)
    return frozenset(hosts)


class _NoCap:
    def acquire(self, blocking: bool = True) -> bool:
        return True

    def release(self) -> None:
        return None


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 resets connections a busy client opens at once
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        max_clients: int | None = MAX_CLIENTS,
    ) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_clients) if max_clients else _NoCap()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # over the cap: closed unanswered
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _V6Server(_Server):
    address_family = socket.AF_INET6


def listen(
    host: str,
    port: int,
    handler: type[BaseHTTPRequestHandler],
    *,
    max_clients: int | None = MAX_CLIENTS,
) -> ThreadingHTTPServer:
    """A threading server bound to ``host:port`` (port 0: any free one); ``max_clients``
    ``None``: no cap on the connections served at once."""
    server_class = _V6Server if ":" in host else _Server
    try:
        return server_class((host, port), handler, max_clients)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port} ({exc.strerror})") from None


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1, no Nagle delay, a read timeout, no Python version in ``Server``, and no
    request line ever printed (it carries what a client sent)."""

    protocol_version = "HTTP/1.1"
    sys_version = ""
    timeout = READ_TIMEOUT
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return


class Listening:
    """A listening server's life: :meth:`serve_forever` blocks, :meth:`start` serves on a
    background thread (tests, embedding), :meth:`close` stops it,
    :meth:`serve_until_interrupted` is what a command does."""

    def __init__(
        self,
        host: str,
        port: int,
        handler: type[BaseHTTPRequestHandler],
        *,
        public: bool,
        allowed_hosts: tuple[str, ...] = (),
        max_clients: int | None = MAX_CLIENTS,
    ) -> None:
        require_loopback(host, public)
        self.host = host
        self.server = listen(host, port, handler, max_clients=max_clients)
        self.port = int(self.server.server_address[1])
        self.hosts = own_hosts(host, self.port, allowed_hosts)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{shown_host(self.host)}:{self.port}"

    def serve_forever(self) -> None:
        self.server.serve_forever(poll_interval=0.2)

    def start(self) -> None:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def serve_until_interrupted(self) -> None:
        """Serve until Ctrl-C (or SIGINT), then close."""
        try:
            self.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.close()
