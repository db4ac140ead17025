"""A fake package registry on loopback: a real ``http.server`` in a thread.

Shared by the package tests (through ``conftest.py``) and the team lock tests (loaded by
path from ``tests/teamlock/teamlock_support.py``).
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeRegistry:
    """Serves ``routes`` (raw request path -> (status, body bytes)); records every path."""

    def __init__(self, routes: dict[str, tuple[int, bytes]]) -> None:
        self.routes = routes
        self.requests: list[str] = []
        self.delay: dict[str, float] = {}
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.requests.append(self.path)
                pause = registry.delay.get(self.path)
                if pause:
                    time.sleep(pause)
                status, body = registry.routes.get(self.path, (404, b'{"error":"Not found"}'))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
