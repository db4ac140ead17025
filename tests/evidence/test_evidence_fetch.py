"""How a lookup reaches the log: the plain client (no HTTP library) with the SSRF guard,
redirects checked hop by hop, and the environment's proxy when one is configured."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from evidence_helpers import Served, entries, site_of
from site_helpers import LogWriter, tool

from toolpin.evidence import LogProblem, LogRef, NeverRecorded, Recorded, look_up
from toolpin.evidence.fetch import Fetcher, split_url
from toolpin.probe.addresses import GuardError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.remote.forward_proxy import loopback_proxy  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[LogWriter, Path]:
    root = tmp_path_factory.mktemp("fetch")
    writer = LogWriter(root / "log")
    writer.observe("a", [tool("one")], "2026-09-01T03:00:00Z")
    writer.observe("b", [tool("two")], "2026-09-01T04:00:00Z")
    writer.commit()
    return writer, site_of(writer, root / "site")


class _Redirects(http.server.BaseHTTPRequestHandler):
    """Every GET answers 302 to ``target`` (a class attribute set per test)."""

    target = ""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", type(self).target.replace("{path}", self.path.lstrip("/")))
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def redirector() -> Iterator[tuple[str, type[_Redirects]]]:
    handler = type("R", (_Redirects,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", handler
    server.shutdown()
    server.server_close()


def test_a_redirect_to_the_log_is_followed(
    site: Any, served: Served, redirector: Any, tmp_path: Path
) -> None:
    writer, folder = site
    served.show(folder)
    url, handler = redirector
    handler.target = served.url + "{path}"
    digest = entries(writer.path)[1]["digests"]["surface"]
    found = look_up(LogRef(url, writer.vkey), digest, home=tmp_path, allow_private=True)
    assert isinstance(found, Recorded) and found.entry_index == 1


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/{path}",  # cloud metadata: refused even with allow_private
        "http://0.0.0.0:1/{path}",
        "ftp://example.com/{path}",
        "http://user:secret@127.0.0.1:1/{path}",
    ],
)
def test_a_redirect_to_a_refused_target_is_not_followed(
    site: Any, redirector: Any, tmp_path: Path, target: str
) -> None:
    writer, _ = site
    url, handler = redirector
    handler.target = target
    with pytest.raises(LogProblem) as refused:
        look_up(LogRef(url, writer.vkey), "ab" * 32, home=tmp_path, allow_private=True)
    assert refused.value.kind == "unreachable"
    assert refused.value.message == "the log cannot be reached (the checkpoint)"


def test_a_redirect_loop_stops(site: Any, redirector: Any, tmp_path: Path) -> None:
    writer, _ = site
    url, handler = redirector
    handler.target = url + "{path}"
    with pytest.raises(LogProblem, match="cannot be reached"):
        look_up(LogRef(url, writer.vkey), "ab" * 32, home=tmp_path, allow_private=True)


def test_the_log_on_loopback_is_refused_at_connect_without_allow_private(
    site: Any, served: Served, tmp_path: Path
) -> None:
    writer, folder = site
    served.show(folder)
    before = served.requests
    with pytest.raises(LogProblem, match="cannot be reached"):
        look_up(LogRef(served.url, writer.vkey), "ab" * 32, home=tmp_path, allow_private=False)
    assert served.requests == before  # not a byte reached the server


@pytest.mark.parametrize(
    "url",
    [
        "http://",
        "http://[::1",
        "http://h:99999/",
        "http://a b/",
        "http://h/\r\nX: y",
        "http://x@h/",
        "https://" + "a" * 2100,
    ],
)
def test_a_malformed_url_is_refused_in_fixed_words(url: str) -> None:
    with pytest.raises(GuardError):
        split_url(url)
    with pytest.raises(LogProblem) as refused:
        Fetcher(url, timeout=1.0, allow_private=True)
    assert refused.value.message in (
        "the log URL cannot be used",
        "the log URL must start with https:// or http://",
    )


def test_a_non_ascii_host_is_sent_in_its_idna_form() -> None:
    assert split_url("https://bücher.example/log/a b")[1:] == (
        "xn--bcher-kva.example",
        443,
        "/log/a%20b",
    )


def test_with_a_proxy_in_the_environment_the_log_is_read_through_it(
    site: Any, served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, folder = site
    served.show(folder)
    with loopback_proxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        found = look_up(
            LogRef(served.url, writer.vkey), "cd" * 32, home=tmp_path / "a", allow_private=True
        )
        assert isinstance(found, NeverRecorded)
        assert ("GET", served.url + "checkpoint") in proxy.requests
        # NO_PROXY names the log's host: a direct connection, the proxy is not asked.
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        asked = len(proxy.requests)
        look_up(LogRef(served.url, writer.vkey), "cd" * 32, home=tmp_path / "b", allow_private=True)
        assert len(proxy.requests) == asked


def test_a_proxied_target_still_goes_through_the_guard(
    site: Any, served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, folder = site
    served.show(folder)
    with loopback_proxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        with pytest.raises(LogProblem, match="cannot be reached"):
            look_up(LogRef(served.url, writer.vkey), "cd" * 32, home=tmp_path, allow_private=False)
        assert proxy.requests == []


_IMPORTS = """
import sys
from pathlib import Path
from toolpin.evidence import LogRef, look_up
found = look_up(LogRef(sys.argv[1], sys.argv[2]), "cd" * 32, home=Path(sys.argv[3]),
                allow_private=True)
print(type(found).__name__, "httpx2" in sys.modules, "httpcore2" in sys.modules)
light = ("http.client", "email", "encodings.idna")
print("heavy:", ",".join(m for m in light if m in sys.modules), file=sys.stderr)
"""


def _imports(url: str, vkey: str, home: Path, **env: str) -> str:
    import os

    clean = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    clean["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS, url, vkey, str(home)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def _heavy(url: str, vkey: str, home: Path) -> str:
    import os

    clean = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    clean["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS, url, vkey, str(home)],
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stderr.strip()


def test_a_direct_lookup_imports_no_http_library(site: Any, served: Served, tmp_path: Path) -> None:
    writer, folder = site
    served.show(folder)
    assert _imports(served.url, writer.vkey, tmp_path / "a") == "NeverRecorded False False"
    assert _heavy(served.url, writer.vkey, tmp_path / "a") == "heavy:"  # nor http.client
    with loopback_proxy() as proxy:
        through = _imports(served.url, writer.vkey, tmp_path / "b", HTTP_PROXY=proxy.url)
        assert through == "NeverRecorded True True"
        assert proxy.requests


class _Raw:
    """A loopback server that answers every connection with the next scripted bytes
    (then closes it), to feed the plain client's response reader what it must read or
    refuse."""

    def __init__(self, answers: list[bytes]) -> None:
        import socket

        self.answers = answers
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.answers:
            conn, _ = self.sock.accept()
            with conn:
                self.requests.append(conn.recv(65536))
                conn.sendall(self.answers.pop(0))

    def close(self) -> None:
        self.sock.close()


def _fetch(answer: bytes, cap: int = 1 << 20) -> tuple[bytes, _Raw]:
    raw = _Raw([answer])
    try:
        with Fetcher(raw.url, timeout=5.0, allow_private=True) as fetcher:
            return fetcher.get("checkpoint", cap, what="the checkpoint"), raw
    finally:
        raw.close()


def test_the_plain_client_reads_sized_chunked_and_close_delimited_bodies() -> None:
    sized = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
    data, raw = _fetch(sized)
    assert data == b"hello"
    head = raw.requests[0].decode("ascii")
    assert head.startswith("GET /checkpoint HTTP/1.1\r\nHost: 127.0.0.1:")
    assert "User-Agent: toolpin-evidence\r\n" in head
    chunked = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3;ext=1\r\nhel\r\n2\r\nlo\r\n0\r\nX-Trailer: y\r\n\r\n"
    )
    assert _fetch(chunked)[0] == b"hello"
    assert _fetch(b"HTTP/1.0 200 OK\r\n\r\nuntil the close")[0] == b"until the close"


@pytest.mark.parametrize(
    "answer",
    [
        b"",
        b"SSH-2.0-OpenSSH\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n",
        b"HTTP/1.1 200 OK\r\nX: " + b"y" * 9000 + b"\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    ],
)
def test_an_answer_the_plain_client_cannot_read_is_an_unreachable_log(answer: bytes) -> None:
    with pytest.raises(LogProblem) as caught:
        _fetch(answer)
    assert caught.value.kind == "unreachable"
    assert caught.value.message == "the log cannot be reached (the checkpoint)"


def test_a_body_over_the_cap_is_refused_while_it_streams() -> None:
    with pytest.raises(LogProblem, match="larger than any valid file"):
        _fetch(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 100, cap=10)


def test_a_kept_alive_connection_the_server_closed_is_opened_again() -> None:
    keep = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    raw = _Raw([keep, keep])  # each connection answers once, then closes
    try:
        with Fetcher(raw.url, timeout=5.0, allow_private=True) as fetcher:
            assert fetcher.get("a", 100, what="a") == b"ok"
            assert fetcher.get("b", 100, what="b") == b"ok"
        assert [r.split(b" ")[1] for r in raw.requests] == [b"/a", b"/b"]
    finally:
        raw.close()
