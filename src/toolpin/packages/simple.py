"""Read one project page of the standard simple repository API (pure, no I/O).

PEP 691 JSON (``application/vnd.pypi.simple.v1+json``: ``files`` with ``filename``,
``hashes`` and ``yanked``) and PEP 503 HTML (one anchor per file, its digest in the URL
fragment ``#sha256=...``, ``data-yanked`` when yanked). Each file's version is read from
its name (wheel or source distribution, :mod:`packaging.utils`); a file of another project
or with an unreadable name has no version and is left out by the caller. A page that is
not what it claims raises :class:`ValueError` with a fixed reason (never page text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import unquote, urljoin, urlsplit

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from toolpin.core.canonical import unique_members

MAX_FILES = 100_000


@dataclass(frozen=True)
class SimpleFile:
    """One file of a project page."""

    filename: str
    sha256: str | None
    yanked: bool
    version: Version | None
    """From the file name; ``None`` when it is not a wheel or sdist of this project."""


def file_version(filename: str, project: str) -> Version | None:
    """The version in a wheel or sdist file name of ``project`` (else ``None``)."""
    try:
        if filename.endswith(".whl"):
            name, version, _build, _tags = parse_wheel_filename(filename)
        else:
            name, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    if name != canonicalize_name(project):
        return None
    return version


def parse_simple_json(body: bytes, project: str) -> list[SimpleFile]:
    """The files of a PEP 691 project page."""
    try:
        doc = json.loads(body, object_pairs_hook=unique_members)
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None
    except json.JSONDecodeError:
        raise ValueError("not JSON") from None
    if not isinstance(doc, dict):
        raise ValueError("not an object")
    meta = doc.get("meta")
    api = meta.get("api-version") if isinstance(meta, dict) else None
    if not isinstance(api, str) or not api.startswith("1."):
        raise ValueError("not simple API version 1")
    files = doc.get("files")
    if not isinstance(files, list) or len(files) > MAX_FILES:
        raise ValueError("no files array")
    out: list[SimpleFile] = []
    for item in files:
        if not isinstance(item, dict) or not isinstance(item.get("filename"), str):
            raise ValueError("a file without a name")
        hashes = item.get("hashes")
        if not isinstance(hashes, dict):
            raise ValueError("a file without hashes")
        digest = hashes.get("sha256")
        yanked = item.get("yanked", False)
        filename = item["filename"]
        out.append(
            SimpleFile(
                filename,
                digest.lower() if isinstance(digest, str) else None,
                yanked is not False,
                file_version(filename, project),
            )
        )
    return out


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open = dict(attrs)
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.anchors.append((self._open, "".join(self._text).strip()))
            self._open = None
            if len(self.anchors) > MAX_FILES:
                raise ValueError("too many files")


def parse_simple_html(body: bytes, project: str, *, base: str) -> list[SimpleFile]:
    """The files of a PEP 503 project page (``base``: the page's URL, for relative links)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None
    parser = _Anchors()
    parser.feed(text)
    parser.close()
    out: list[SimpleFile] = []
    for attrs, label in parser.anchors:
        href = attrs.get("href")
        if not href:
            continue
        parts = urlsplit(urljoin(base, href))
        filename = label or unquote(parts.path.rsplit("/", 1)[-1])
        digest = None
        name, _, value = parts.fragment.partition("=")
        if name == "sha256" and value:
            digest = value.lower()
        out.append(
            SimpleFile(filename, digest, "data-yanked" in attrs, file_version(filename, project))
        )
    return out
