"""A fake package registry on loopback: a real ``http.server`` in a thread.

Shared by the package tests (through ``conftest.py``) and the team lock tests (loaded by
path from ``tests/teamlock/teamlock_support.py``).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

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


def make_ca(folder: Path, dns_names: tuple[str, ...] = ()) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for 127.0.0.1 (and ``dns_names``) signed
    by it: ``(ca.pem, server.pem, server.key)`` in ``folder`` (a TLS-intercepting proxy's
    set-up)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "toolpin test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    *(x509.DNSName(name) for name in dns_names),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = (folder / "ca.pem", folder / "server.pem", folder / "server.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def serve_tls(registry: FakeRegistry, cert: Path, key: Path) -> None:
    """Make ``registry`` answer over HTTPS with ``cert`` (its URL changes to https)."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    registry.server.socket = context.wrap_socket(registry.server.socket, server_side=True)
    registry.scheme = "https"
    registry.url = registry.url.replace("http://", "https://", 1)
