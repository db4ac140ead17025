"""Sites to look digests up in, built by ``LogWriter`` (the crawler's record code) and
``build_site``, and a loopback server for a folder that can be replaced between requests."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from site_helpers import NOW, LogWriter, tool

from toolpin.publog.entries import decode_entry
from toolpin.publog.note import Verifier
from toolpin.publog.tiles import TileLog
from toolpin.site.build import build_site, parse_now


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def translate_path(self, path: str) -> str:
        # Resolve against the server's current folder (tests swap it).
        folder = self.server.folder  # type: ignore[attr-defined]
        self.directory = str(folder)
        return super().translate_path(path)

    def send_head(self) -> Any:
        self.server.requests += 1  # type: ignore[attr-defined]
        return super().send_head()

    def copyfile(self, source: Any, outputfile: Any) -> None:
        data = source.read()
        self.server.sent += len(data)  # type: ignore[attr-defined]
        outputfile.write(data)


@dataclass
class Served:
    server: http.server.ThreadingHTTPServer
    url: str

    @property
    def folder(self) -> Path:
        folder: Path = self.server.folder  # type: ignore[attr-defined]
        return folder

    def show(self, site: Path) -> None:
        """Serve ``site`` from now on: a copy of hard links, so a test may tamper with a
        file by replacing it (:func:`replace_file`), never by writing into it."""
        target = self.folder
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(site, target, copy_function=os.link)

    @property
    def requests(self) -> int:
        requests: int = self.server.requests  # type: ignore[attr-defined]
        return requests

    @property
    def sent(self) -> int:
        sent: int = self.server.sent  # type: ignore[attr-defined]
        return sent

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve_folder(folder: Path) -> Served:
    handler = functools.partial(_Handler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.folder = folder  # type: ignore[attr-defined]
    server.sent = 0  # type: ignore[attr-defined]
    server.requests = 0  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return Served(server, f"http://127.0.0.1:{server.server_address[1]}/")


def replace_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` as a new file (the served copy shares inodes)."""
    path.unlink()
    path.write_bytes(data)


def site_of(writer: LogWriter, out: Path) -> Path:
    """Build the site of ``writer``'s log (as published) into ``out``."""
    build_site(writer.path, Verifier.from_text(writer.vkey), out, now=parse_now(NOW))
    return out


def entries(log: Path) -> list[dict[str, Any]]:
    opened = TileLog.open(log)
    return [decode_entry(raw) for raw in opened.iter_entries(0, opened.size)]


def versions_log(path: Path) -> LogWriter:
    """A server released three times (1.0.0, 1.1.0, 1.2.0) and another server."""
    w = LogWriter(path)
    w.observe("weather", [tool("forecast")], "2026-09-01T03:00:00Z", package=("npm", "w", "1.0.0"))
    w.observe("other", [tool("ping")], "2026-09-02T03:00:00Z", package=("npm", "o", "2.0.0"))
    w.commit()
    w.observe(
        "weather",
        [tool("forecast"), tool("alerts")],
        "2026-10-01T03:00:00Z",
        package=("npm", "w", "1.1.0"),
    )
    w.commit()
    w.observe(
        "weather",
        [tool("forecast"), tool("alerts"), tool("radar")],
        "2026-11-20T03:00:00Z",
        package=("npm", "w", "1.2.0"),
    )
    w.commit()
    return w
