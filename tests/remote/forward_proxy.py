"""A loopback HTTP proxy for the proxy-environment tests (a fake peer: the machine's
proxy). It speaks ``CONNECT host:port`` (then relays bytes both ways, as for an https
target) and forwards absolute-form requests (``POST http://host:port/path``) with
``Connection: close``; it records every request it was asked for, and maps host names to
loopback (``hosts``), as a proxy on another network resolves names this machine cannot."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

MAX_HEAD = 64 << 10


class LoopbackProxy:
    def __init__(self, hosts: dict[str, str] | None = None) -> None:
        self.hosts = dict(hosts or {})
        self.requests: list[tuple[str, str]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(32)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _upstream(self, host: str, port: int) -> socket.socket:
        return socket.create_connection((self.hosts.get(host, host), port), timeout=10)

    def _handle(self, conn: socket.socket) -> None:
        with contextlib.ExitStack() as stack:
            stack.callback(conn.close)
            head, rest = _read_head(conn)
            if head is None:
                return
            line, *fields = head.split(b"\r\n")
            method, target, _ = line.decode("latin-1").split(" ", 2)
            headers = {}
            for field in fields:
                name, _, value = field.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            with self._lock:
                self.requests.append((method, target))
                self.headers.append(headers)
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                upstream = self._upstream(host.strip("[]"), int(port))
                stack.callback(upstream.close)
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                _pipe_both(conn, upstream, rest)
                return
            parts = urlsplit(target)
            upstream = self._upstream(parts.hostname or "", parts.port or 80)
            stack.callback(upstream.close)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            kept = [
                f
                for f in fields
                if not f.lower().startswith((b"proxy-", b"connection:", b"keep-alive:"))
            ]
            upstream.sendall(
                f"{method} {path} HTTP/1.1\r\n".encode()
                + b"".join(f + b"\r\n" for f in kept)
                + b"Connection: close\r\n\r\n"
                + rest
            )
            threading.Thread(target=_copy, args=(conn, upstream), daemon=True).start()
            answer, body = _read_head(upstream)
            if answer is None:
                return
            status, *answer_fields = answer.split(b"\r\n")
            answer_fields = [f for f in answer_fields if not f.lower().startswith(b"connection:")]
            conn.sendall(
                status + b"\r\n" + b"".join(f + b"\r\n" for f in answer_fields)
                + b"Connection: close\r\n\r\n" + body
            )  # fmt: skip
            _copy(upstream, conn)


def _read_head(sock: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = sock.recv(65536)
        except OSError:
            return None, b""
        if not chunk or len(data) > MAX_HEAD:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _copy(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _pipe_both(client: socket.socket, upstream: socket.socket, first: bytes) -> None:
    if first:
        upstream.sendall(first)
    other = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
    other.start()
    _copy(client, upstream)
    other.join(30)


@contextlib.contextmanager
def loopback_proxy(hosts: dict[str, str] | None = None) -> Iterator[LoopbackProxy]:
    proxy = LoopbackProxy(hosts)
    try:
        yield proxy
    finally:
        proxy.close()
