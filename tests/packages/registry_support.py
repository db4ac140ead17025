"""A fake package registry on loopback: a real ``http.server`` in a thread.

Shared by the package tests (through ``conftest.py``) and the team lock tests (loaded by
path from ``tests/teamlock/teamlock_support.py``).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Route = tuple[int, bytes] | tuple[int, bytes, str]


class FakeRegistry:
    """Serves ``routes`` (raw request path -> (status, body bytes[, content type]; JSON
    by default)); records every path and the headers of every request."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes
        self.requests: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.delay: dict[str, float] = {}
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.requests.append(self.path)
                registry.headers.append({k.lower(): v for k, v in self.headers.items()})
                pause = registry.delay.get(self.path)
                if pause:
                    time.sleep(pause)
                route = registry.routes.get(self.path, (404, b'{"error":"Not found"}'))
                status, body = route[0], route[1]
                kind = route[2] if len(route) == 3 else "application/json"
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.scheme = "http"
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


def simple_page(name: str, files: dict[str, str], *, yanked: frozenset[str] = frozenset()) -> bytes:
    """A PEP 691 project page listing ``files`` (filename -> sha256)."""
    return json.dumps(
        {
            "meta": {"api-version": "1.1"},
            "name": name,
            "files": [
                {
                    "filename": f,
                    "url": f"../../files/{f}",
                    "hashes": {"sha256": h},
                    "yanked": f in yanked,
                }
                for f, h in files.items()
            ],
        }
    ).encode()


def simple_html(files: dict[str, str], *, yanked: frozenset[str] = frozenset()) -> bytes:
    """A PEP 503 project page listing ``files`` (filename -> sha256)."""
    links = "".join(
        f'<a href="../../files/{f}#sha256={h}"{" data-yanked" if f in yanked else ""}>{f}</a><br/>'
        for f, h in files.items()
    )
    return f"<!DOCTYPE html><html><body><h1>Links</h1>{links}</body></html>".encode()
