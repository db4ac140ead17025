"""``toolpin log serve`` as a subprocess, raw HTTP requests to it, and what the page tests
and the storage tests share about it (imported as ``tests.site.serve_helpers``)."""

from __future__ import annotations

import http.client
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.proxy.harness import Proxy, Scripted, proxy_env
from tests.proxy.test_proxy_public_log import V1, proxy_snapshot, record
from tests.site.site_helpers import NOW, ORIGIN, LogWriter, tool

SRC = Path(__file__).resolve().parents[2] / "src"
LOOPBACK = {"TOOLPIN_LOG_ALLOW_PRIVATE": "1"}
"""What lets a reader reach a log on 127.0.0.1 (the SSRF guard refuses it otherwise)."""
URL_LINE = re.compile(r"serving \S+ at (http://127\.0\.0\.1:\d+/)\n")


def env_with_src(env: dict[str, str] | None = None) -> dict[str, str]:
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = str(SRC)
    return out


@dataclass
class Served:
    """A running ``toolpin log serve``: its URL and process."""

    url: str
    proc: subprocess.Popen[bytes]

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].rstrip("/"))

    def request(
        self, method: str, target: str, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        """One raw request (the target sent as it is: no normalisation)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        try:
            conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            sent = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
            if body:
                sent["Content-Length"] = str(len(body))
            for name, value in sent.items():
                conn.putheader(name, value)
            conn.endheaders(body or None)
            response = conn.getresponse()
            data = response.read()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, data
        finally:
            conn.close()

    def get(self, target: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
        return self.request("GET", target, {k.replace("_", "-"): v for k, v in headers.items()})


def _first_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    lines: queue.Queue[bytes] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout).decode("utf-8", "replace")
    except queue.Empty:
        return ""


@contextmanager
def log_serve(
    where: str | Path, *options: str, env: dict[str, str] | None = None
) -> Iterator[Served]:
    """``python -m toolpin log serve --dir WHERE`` on a free loopback port, stopped on exit."""
    argv = [sys.executable, "-m", "toolpin", "log", "serve", "--dir", str(where), *options]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env_with_src(env),
    )
    try:
        line = _first_line(proc, 60.0)
        match = URL_LINE.fullmatch(line)
        if match is None:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise AssertionError(f"log serve did not start: {line!r} {err!r}")
        yield Served(match[1], proc)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def proxy_log(root: Path) -> tuple[LogWriter, Path]:
    """A log that recorded V1 of ``calc`` (as the proxy's public-log tests do) and an
    unrelated server, and its site built in ``root/out``; returns the writer and the site."""
    from toolpin.publog.note import Verifier
    from toolpin.site.build import build_site, parse_now

    writer = LogWriter(root / "log")
    record(writer, "calc", V1, "2026-11-20T03:00:00Z")
    record(writer, "other", [tool("ping")], "2026-11-20T04:00:00Z")
    writer.commit()
    build_site(root / "log", Verifier.from_text(writer.vkey), root / "out", now=parse_now(NOW))
    return writer, root / "out"


def first_pin_against(home: Path, tmp_path: Path, url: str, vkey: str) -> str:
    """``toolpin run --log URL`` in front of a server offering V1: its stderr."""
    server = Scripted(tmp_path / "srv", tools=V1)
    proxy = Proxy(home, server.argv, "--log", url, "--vkey", vkey, env=proxy_env(home, **LOOPBACK))
    assert "result" in proxy.initialize()
    assert proxy.close() == 0
    return proxy.stderr


def surface_v1() -> str:
    return proxy_snapshot(V1).surface_hash()


WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI);
});
"""


def browser_verdict(browser: Any, url: str) -> tuple[str, str, list[str], list[str]]:
    """Open ``url`` in Chromium and wait for the in-browser verification: its verdict, its
    class, the console problems and the CSP violations."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    try:
        page = context.new_page()
        problems: list[str] = []
        page.add_init_script(WATCH_CSP)
        page.on(
            "console",
            lambda m: problems.append(m.text) if m.type in ("error", "warning") else None,
        )
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        response = page.goto(url, wait_until="load", timeout=20_000)
        assert response is not None and response.ok, url
        for _ in range(200):
            if page.get_attribute("#verify-status", "class"):
                break
            page.wait_for_timeout(100)
        verdict = page.text_content("#verify-status") or ""
        status = page.get_attribute("#verify-status", "class") or ""
        violations: list[str] = page.evaluate("window.__csp || []")
        return verdict, status, problems, violations
    finally:
        context.close()


__all__: Sequence[str] = [
    "LOOPBACK",
    "ORIGIN",
    "Served",
    "browser_verdict",
    "first_pin_against",
    "log_serve",
    "proxy_log",
    "surface_v1",
]
