"""Helpers for the crawler tests (imported as ``crawl_helpers``): stub servers, configs,
fake HTTP APIs on loopback, an in-process Streamable HTTP server, and an independent
RFC 6962 / signed-note check of a log directory."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.shared import serve_asgi

from toolpin.publog.note import Signer

HERE = Path(__file__).resolve().parent
STUB = HERE / "stub_server.py"
SDK_SERVER = HERE / "sdk_server.py"
SRC = HERE.parents[1] / "src"
ORIGIN = "log.example/crawl-test"


def tool(name: str, description: str = "does things") -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
    }


def write_spec(path: Path, **spec: Any) -> Path:
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def stub_argv(spec: Path) -> list[str]:
    return [sys.executable, str(STUB), str(spec)]


def write_config(path: Path, servers: dict[str, Any]) -> Path:
    """``servers``: name -> argv list (local), or a dict written as is (remote entries)."""
    entries: dict[str, Any] = {}
    for name, value in servers.items():
        if isinstance(value, list):
            entries[name] = {"command": value[0], "args": value[1:]}
        else:
            entries[name] = value
    path.write_text(json.dumps({"mcpServers": entries}, indent=2), encoding="utf-8")
    return path


# ------------------------------------------------------------------- fake HTTP APIs


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


Reply = tuple[int, dict[str, str], bytes]
Route = Callable[[Seen], Reply]


@dataclass
class FakeAPI:
    """A real ``http.server`` on loopback; routes by path; records every request."""

    routes: dict[str, Route] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 0
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def requests_to(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]

    def start(self) -> FakeAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("content-length") or 0)
                seen = Seen(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
                api.seen.append(seen)
                route = api.routes.get(parts.path)
                status, headers, body = route(seen) if route else (404, {}, b"not found")
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = _handle
            do_POST = _handle
            do_DELETE = _handle

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def json_reply(value: Any, status: int = 200) -> Reply:
    return status, {"Content-Type": "application/json"}, json.dumps(value).encode()


# ------------------------------------------------------------- Streamable HTTP server


@contextlib.contextmanager
def sdk_http_server(host: str = "127.0.0.1", **app_options: Any) -> Iterator[str]:
    """Serve the SDK test server over Streamable HTTP; yields the endpoint URL."""
    from sdk_server import build

    app = build().streamable_http_app(**app_options)
    with serve_asgi(app, host) as port:
        shown = f"[{host}]" if ":" in host else host
        yield f"http://{shown}:{port}/mcp"


# ----------------------------------------------------- independent log verification


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 section 2.1 Merkle Tree Hash, written from the RFC's definition."""
    n = len(leaves)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1
    while k * 2 < n:
        k *= 2
    return hashlib.sha256(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


def _tile_index(n: int) -> str:
    text = f"{n:03d}"
    groups = [text[max(0, i - 3) : i] for i in range(len(text), 0, -3)][::-1]
    groups = [g.rjust(3, "0") for g in groups]
    return "/".join([*("x" + g for g in groups[:-1]), groups[-1]])


def read_entries(log_dir: Path, size: int) -> list[bytes]:
    """Every entry, read from the entry bundles (uint16 big-endian length prefixes)."""
    entries: list[bytes] = []
    bundles = -(-size // 256)
    for n in range(bundles):
        width = 256 if (n + 1) * 256 <= size else size % 256
        rel = f"tile/entries/{_tile_index(n)}" + ("" if width == 256 else f".p/{width}")
        data = (log_dir / rel).read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack(">H", data[offset : offset + 2])
            entries.append(data[offset + 2 : offset + 2 + length])
            offset += 2 + length
    return entries


def independent_check(log_dir: Path, vkey: str) -> list[dict[str, Any]]:
    """Check the checkpoint's Ed25519 signature (C2SP signed note) and recompute the root
    from the entry bundles; returns the decoded entries."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    name, key_hex, key_b64 = vkey.split("+", 2)
    typed = base64.b64decode(key_b64)
    assert typed[0] == 0x01
    public = Ed25519PublicKey.from_public_bytes(typed[1:])
    note = (log_dir / "checkpoint").read_text(encoding="utf-8")
    body, _, signatures = note.partition("\n\n")
    body += "\n"
    verified = False
    for line in signatures.splitlines():
        prefix = f"\u2014 {name} "
        if line.startswith(prefix):
            raw = base64.b64decode(line[len(prefix) :])
            assert raw[:4].hex() == key_hex
            public.verify(raw[4:], body.encode())  # raises if bad
            verified = True
    assert verified, "no signature by the expected key"
    origin, size_text, root_b64 = body.splitlines()[:3]
    assert origin == name
    size = int(size_text)
    entries = read_entries(log_dir, size)
    assert len(entries) == size
    assert _mth(entries) == base64.b64decode(root_b64), "root does not match the entries"
    for entry in entries:
        blob = json.loads(entry).get("blob")
        if blob is None:
            continue
        digest = blob.removeprefix("sha256:")
        data = (log_dir / "blob" / "sha256" / digest).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest
    return [json.loads(e) for e in entries]


@dataclass(frozen=True)
class LogKey:
    path: Path
    vkey: str
    signer: Signer
