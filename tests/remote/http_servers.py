"""Loopback HTTP servers for the remote proxy tests: ASGI apps (SDK servers) run by
uvicorn in a thread of the test process, so a test can change them mid-session, on a
socket bound before the app is built (its URL is known up front; no port race)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


def bound_socket() -> tuple[socket.socket, str]:
    """A listening socket on 127.0.0.1 and its base URL ``http://127.0.0.1:PORT``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def serve_asgi(
    app: Any, sock: socket.socket | None = None, *, tls: tuple[str, str] | None = None
) -> Iterator[str]:
    """Run an ASGI app on 127.0.0.1 (over TLS with ``tls``: certificate and key files);
    yields the base URL."""
    if sock is None:
        sock, _ = bound_socket()
    scheme = "https" if tls else "http"
    base = f"{scheme}://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=1,
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()
