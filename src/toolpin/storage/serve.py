"""``toolpin log serve``: a published log and site, read-only over HTTP.

What it serves is a folder (the one ``toolpin log site --out`` writes, or a bare log
folder) or an ``s3://bucket/prefix``. It is a static host, nothing more: every reader
verifies what it fetches (``toolpin run --log URL``, ``log lookup``, ``log monitor``, the
site's in-browser verifier), so the server is trusted for availability only.

* **GET and HEAD only** (405 otherwise); a request carrying a body is refused and its
  connection closed.
* **Names are an allow-list**: the path must be ``/`` and segments of
  ``[A-Za-z0-9._=+-]`` (the names a site and a log use); ``..``, ``.``, empty segments,
  any percent-encoding (so no encoded slash or NUL), a backslash, a control character or
  a segment starting with ``.`` (``.toolpin.lock``) is 404, as is ``_headers``. A path
  ending in ``/`` is that folder's ``index.html``: there are no directory listings.
* **No symbolic links**: a folder is walked one component at a time with ``O_NOFOLLOW``
  from a descriptor of its root, so a link (in or out of the folder) is 404 and no race
  can swap one in; only regular files are served, at most :data:`MAX_FILE_BYTES`.
* **Headers**: a site's ``_headers`` (Netlify/Cloudflare syntax) gives each path its
  headers (CSP, ``no-cache`` for the checkpoint, ``immutable`` with a year's ``max-age``
  for tiles and blobs, CORS); a partial tile always revalidates (an interrupted append may
  leave one no checkpoint covers). From a bucket, ``Cache-Control`` and ``Content-Type``
  are the object's own metadata (what ``log publish`` and ``log site --out s3://`` set).
  Without ``_headers`` (a bare log) the log's defaults apply. Every answer carries
  ``nosniff``.
* **A bucket that cannot be read** (unreachable, refused, an object over its cap) is 503,
  never 404: a reader must not take an outage for an absent file. One that cannot be
  reached at start-up, or holds no ``checkpoint``, is refused (exit 2).
* **ETag / If-None-Match**: the ETag is the content's SHA-256 (a bucket: its ``sha256``
  metadata, else its S3 ETag); a match is 304 without a body.
* **Host**: the ``Host`` header must be one of the server's own names (its loopback names
  and listening address, with the port, plus ``--allow-host`` values): 403 otherwise, so a
  web page cannot reach it through DNS rebinding. Loopback unless ``--public``.
* **Caps**: at most :data:`~toolpin.util.httpserve.MAX_CLIENTS` connections at once, a
  slow client dropped after :data:`toolpin.util.httpserve.READ_TIMEOUT` seconds.

Nothing a client sent is ever written back or printed: errors are fixed words.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Final

from toolpin.errors import InputError
from toolpin.storage.folder import safe_rel
from toolpin.storage.layout import MAX_BLOB_BYTES, is_log_file, log_file_cap
from toolpin.storage.s3 import content_type
from toolpin.storage.sync import NO_CACHE, log_cache_control
from toolpin.storage.url import is_bucket_url, parse_bucket_url
from toolpin.util.httpserve import Listening, QuietHandler

MAX_FILE_BYTES: Final = MAX_BLOB_BYTES
"""The largest file served (a blob's cap; pages, tiles and API files are far smaller)."""
MAX_HEADERS_BYTES: Final = 64 << 10
HEADERS_FILE: Final = "_headers"
HIDDEN: Final = frozenset({HEADERS_FILE})
LOG_CORS: Final = ("checkpoint", "tile/", "blob/", "proof/", "api/", "checkpoints/")
BARE_CSP: Final = "default-src 'none'; frame-ancestors 'none'"
"""The policy of a log folder without ``_headers``: it holds no page."""
_PATH: Final = re.compile(r"/[A-Za-z0-9._=+/-]*")
_HEADER_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,63}")
_SAFE_VALUE: Final = re.compile(r"[\x20-\x7e]{1,1024}")

__all__ = [
    "MAX_FILE_BYTES",
    "BucketSource",
    "FolderSource",
    "Found",
    "HeaderRules",
    "LogServer",
    "open_source",
    "request_rel",
]


@dataclass(frozen=True)
class Found:
    """One file to answer with: its bytes, its ETag (unquoted) and, from a bucket, the
    object's own ``Cache-Control`` and ``Content-Type``."""

    data: bytes
    etag: str
    cache_control: str | None = None
    content_type: str | None = None


def request_rel(target: str) -> str | None:
    """The file a request target names (``None``: refused, 404). The query and fragment are
    ignored; see the module doc for what is refused."""
    path = target.split("?", 1)[0].split("#", 1)[0]
    if not _PATH.fullmatch(path) or "//" in path:
        return None
    rel = path[1:]
    if rel == "" or rel.endswith("/"):
        rel += "index.html"
    if not safe_rel(rel) or rel in HIDDEN:
        return None
    if any(part.startswith(".") for part in rel.split("/")):
        return None
    return rel


class FolderSource:
    """The regular files under one folder, links never followed."""

    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise InputError(f"the folder {root} does not exist")
        self.root = root.resolve()
        self.name = str(root)

    def get(self, rel: str) -> Found | None:
        data = self._read(rel)
        if data is None:
            return None
        return Found(data, hashlib.sha256(data).hexdigest())

    def _read(self, rel: str) -> bytes | None:
        flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        parts = rel.split("/")
        try:
            fd = os.open(self.root, flags | os.O_DIRECTORY)
        except OSError:
            return None
        try:
            for part in parts[:-1]:
                next_fd = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = next_fd
            file_fd = os.open(parts[-1], flags | getattr(os, "O_NONBLOCK", 0), dir_fd=fd)
        except OSError:  # absent, a link (ELOOP), not a folder, unreadable: all 404
            return None
        finally:
            os.close(fd)
        try:
            info = os.fstat(file_fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                return None
            with os.fdopen(file_fd, "rb", closefd=False) as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError:
            return None
        finally:
            os.close(file_fd)
        return data if len(data) <= MAX_FILE_BYTES else None

    def headers_text(self) -> str | None:
        data = self._read(HEADERS_FILE)
        if data is None or len(data) > MAX_HEADERS_BYTES:
            return None
        return data.decode("utf-8", "replace")


class BucketSource:
    """The objects under one ``s3://bucket/prefix``, read per request (bounded)."""

    def __init__(self, url: str) -> None:
        from toolpin.storage.s3 import Bucket

        self.bucket = Bucket(parse_bucket_url(url))
        self.name = self.bucket.url
        # unreachable, no credentials: a StoreError; no such bucket or no log there: refused
        if self.bucket.head("checkpoint") is None:
            raise InputError(f"{self.name} holds no checkpoint: there is no log to serve there")

    def get(self, rel: str) -> Found | None:
        """The object ``rel`` (``None``: absent); a read that fails raises
        :class:`~toolpin.errors.StoreError` (the server answers 503, never 404)."""
        cap = log_file_cap(rel) if is_log_file(rel) else MAX_FILE_BYTES
        found = self.bucket.fetch(rel, cap)
        if found is None:
            return None
        data, info = found
        digest = hashlib.sha256(data).hexdigest()
        return Found(data, digest, info.cache_control, info.content_type)

    def headers_text(self) -> str | None:
        from toolpin.errors import StoreError

        try:
            found = self.get(HEADERS_FILE)
        except StoreError:
            return None
        if found is None or len(found.data) > MAX_HEADERS_BYTES:
            return None
        return found.data.decode("utf-8", "replace")


Source = FolderSource | BucketSource


def open_source(where: str) -> Source:
    """A folder, or ``s3://bucket/prefix``."""
    if is_bucket_url(where):
        return BucketSource(where)
    return FolderSource(Path(where))


class HeaderRules:
    """The headers a ``_headers`` manifest gives each path (every matching rule applies,
    in order, a later value replacing an earlier one of the same name); header names and
    values outside a plain allow-list are left out."""

    def __init__(self, text: str | None) -> None:
        self.present = text is not None
        self.rules: list[tuple[str, list[tuple[str, str]]]] = []
        pattern: str | None = None
        for line in (text or "").splitlines():
            if line.startswith("/"):
                pattern = line.strip()
                self.rules.append((pattern, []))
            elif pattern is not None and ":" in line and not line.lstrip().startswith("#"):
                name, value = (x.strip() for x in line.split(":", 1))
                if _HEADER_NAME.fullmatch(name) and _SAFE_VALUE.fullmatch(value):
                    self.rules[-1][1].append((name, value))

    def for_path(self, rel: str) -> dict[str, str]:
        path = "/" + rel
        out: dict[str, str] = {}
        for pattern, values in self.rules:
            if (pattern.endswith("*") and path.startswith(pattern[:-1])) or path == pattern:
                for name, value in values:
                    out[name.lower()] = value
        return out


_CANONICAL: Final = {
    "content-type": "Content-Type",
    "cache-control": "Cache-Control",
    "content-security-policy": "Content-Security-Policy",
    "access-control-allow-origin": "Access-Control-Allow-Origin",
    "x-content-type-options": "X-Content-Type-Options",
    "referrer-policy": "Referrer-Policy",
    "x-frame-options": "X-Frame-Options",
}


def answer_headers(rel: str, found: Found, rules: HeaderRules) -> dict[str, str]:
    """The headers of the answer for ``rel`` (see the module doc)."""
    if rules.present:
        chosen = rules.for_path(rel)
    else:
        chosen = {"content-security-policy": BARE_CSP, "referrer-policy": "no-referrer"}
        if rel.startswith(LOG_CORS):
            chosen["access-control-allow-origin"] = "*"
    chosen.setdefault("content-type", content_type(rel))
    chosen.setdefault("cache-control", log_cache_control(rel))
    if found.content_type:
        chosen["content-type"] = found.content_type
    if found.cache_control:
        chosen["cache-control"] = found.cache_control
    if rel.startswith("tile/") and ".p/" in rel:
        chosen["cache-control"] = NO_CACHE
    chosen["x-content-type-options"] = "nosniff"
    return {
        _CANONICAL.get(k, "-".join(p.capitalize() for p in k.split("-"))): v
        for k, v in sorted(chosen.items())
    }


def etag_matches(header: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` value names ``etag`` (weak or strong, or ``*``)."""
    if header is None:
        return False
    for item in header.split(","):
        item = item.strip()
        if item == "*":
            return True
        if item.startswith("W/"):
            item = item[2:]
        if item == f'"{etag}"':
            return True
    return False


class LogServer(Listening):
    """The listening server. ``serve_forever`` blocks; ``close`` stops it."""

    def __init__(
        self,
        source: Source,
        host: str,
        port: int,
        *,
        public: bool = False,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        self.source = source
        self._text = source.headers_text()
        self._rules = HeaderRules(self._text)
        self._rules_lock = threading.Lock()
        super().__init__(
            host, port, _handler(self), public=public, allowed_hosts=tuple(allowed_hosts)
        )

    @property
    def url(self) -> str:
        return f"{self.base_url}/"

    def rules(self) -> HeaderRules:
        """The ``_headers`` rules (a folder's are read again when its ``_headers`` changes:
        a site rebuilt while served)."""
        if isinstance(self.source, FolderSource):
            text = self.source.headers_text()
            with self._rules_lock:
                if text != self._text:
                    self._rules = HeaderRules(text)
                    self._text = text
        return self._rules


def _handler(owner: LogServer) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        server_version = "toolpin-log-serve"

        def send_error(
            self, code: int, message: str | None = None, explain: str | None = None
        ) -> None:
            # http.server's own refusals (a bad request line, headers too long): fixed words
            self._plain(code, "bad request", close=True)

        def _plain(self, status: int, text: str, *, close: bool = False, **extra: str) -> None:
            body = (text + "\n").encode("ascii")
            self.send_response_only(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", NO_CACHE)
            for name, value in extra.items():
                self.send_header(name, value)
            if close:
                self.close_connection = True
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

        def _checked(self) -> bool:
            host = (self.headers.get("Host") or "").lower()
            if host not in owner.hosts:
                self._plain(403, "Host is not this server", close=True)
                return False
            if self.command not in ("GET", "HEAD"):
                self._plain(405, "only GET and HEAD are served", close=True, Allow="GET, HEAD")
                return False
            length = self.headers.get("Content-Length")
            if self.headers.get("Transfer-Encoding") is not None or (
                length is not None and length.strip() != "0"
            ):
                self._plain(400, "a GET carries no body", close=True)
                return False
            return True

        def _answer(self) -> None:
            if not self._checked():
                return
            from toolpin.errors import StoreError

            rel = request_rel(self.path)
            try:
                found = owner.source.get(rel) if rel is not None else None
            except StoreError:  # the bucket could not be read: not an absent file
                self._plain(503, "the store could not be read")
                return
            if rel is None or found is None:
                self._plain(404, "not found")
                return
            headers = answer_headers(rel, found, owner.rules())
            headers["ETag"] = f'"{found.etag}"'
            if etag_matches(self.headers.get("If-None-Match"), found.etag):
                self.send_response_only(304)
                for name in ("ETag", "Cache-Control"):
                    self.send_header(name, headers[name])
                self.end_headers()
                return
            self.send_response_only(200)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(found.data)))
            self.end_headers()
            if self.command != "HEAD":
                with contextlib.suppress(OSError):
                    self.wfile.write(found.data)

        do_GET = do_HEAD = _answer

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _checked

    return Handler
