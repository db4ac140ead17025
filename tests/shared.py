"""What the suite builds once and every test process shares, under a file lock.

``pytest -n N`` runs N worker processes, each with its own session fixtures: without a
lock, N workers would build the same wheel, venv or Go binary N times, and N npm installs
into one ``node_modules`` would tear it. :func:`build_once` builds a folder once per run
(in the run's temporary folder, which every worker shares); :func:`npm_install` installs
one pinned npm package into a folder under ``<repo>/.cache`` that is kept between runs.
Both work the same without xdist (one process takes the lock and builds).
:func:`serve_asgi` serves an ASGI app (an SDK server's Streamable HTTP app) on loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".cache"
"""Kept between runs (gitignored): npm servers, the npm, uv, pip, virtualenv and Go build caches."""


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's temporary folder, the same for every worker (each worker's own base
    folder is ``<run>/popen-gwN``)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """The folder ``name`` of this run, filled by ``build(folder)`` by whichever process
    comes first; the others wait for it. A build that raised is tried again by the next
    process that asks (its exception fails the tests that asked)."""
    root = run_folder(tmp_path_factory)
    out = root / f"shared-{name}"
    with FileLock(str(root / f"shared-{name}.lock"), timeout=1200):
        if not (out / ".built").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            build(out)
            (out / ".built").touch()
    return out


def npm_install(prefix: Path, package: str, version: str) -> str | None:
    """Install ``package@version`` into ``prefix`` once (kept between runs); ``None`` when
    it is there, else why it is not (npm missing or failed)."""
    manifest = prefix / "node_modules" / package / "package.json"
    prefix.mkdir(parents=True, exist_ok=True)
    with FileLock(str(prefix / ".install.lock"), timeout=1200):
        if manifest.exists() and _version(manifest) == version:
            return None
        npm = shutil.which("npm")
        if npm is None:
            return "npm is not on PATH; Node and npm are needed for these tests"
        done = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
             f"{package}@{version}"],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "npm_config_update_notifier": "false"},
        )  # fmt: skip
        if done.returncode != 0:
            return f"npm install of {package} failed:\n{done.stdout}\n{done.stderr}"
        if not manifest.exists() or _version(manifest) != version:
            return f"npm install of {package}@{version} left no {manifest}"
    return None


def _version(manifest: Path) -> object:
    return json.loads(manifest.read_text(encoding="utf-8")).get("version")


@contextmanager
def serve_asgi(app: Any, host: str = "127.0.0.1") -> Iterator[int]:
    """Serve ``app`` with uvicorn on a free port of ``host`` (IPv4 or IPv6; the port is
    yielded) until the block ends."""
    import socket
    import threading
    import time

    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    http = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="on"))
    thread = threading.Thread(target=http.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not http.started:
        assert time.monotonic() < deadline, "the HTTP server did not start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        http.should_exit = True
        thread.join(timeout=10)


GOPATH = Path("/usr/share/gocode")
"""Debian's Go packages (golang-golang-x-mod-dev puts golang.org/x/mod/sumdb here)."""


def build_go(tmp_path_factory: pytest.TempPathFactory, source: Path, *needs: str) -> Path:
    """The Go program in ``source`` built once per run (GOPATH mode, Debian's packages),
    its binary named after the folder; skips when ``go`` or a package of ``needs``
    (import paths under GOPATH) is not installed."""
    go = shutil.which("go")
    missing = [n for n in needs if not (GOPATH / "src" / n).is_dir()]
    if go is None or missing:
        pytest.skip("go or golang.org/x/mod is not installed (Debian golang-golang-x-mod-dev)")

    def build(out: Path) -> None:
        env = {**os.environ, "GO111MODULE": "off", "GOPATH": str(GOPATH), "GOFLAGS": ""}
        env.setdefault("GOCACHE", str(out / "gocache"))
        done = subprocess.run(
            [go, "build", "-o", str(out / source.name), "."],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr

    return build_once(tmp_path_factory, f"go-{source.name}", build) / source.name
