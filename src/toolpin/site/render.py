"""The jinja2 environment of every page: autoescape everywhere, ``StrictUndefined``.

Every server string reaches a template through the ``v`` filter (:func:`toolpin.core.render.
visible`), so control, bidi, zero-width and tag characters show as ``\\u{hex}`` escapes, and
autoescaping then makes the result inert HTML. Templates live in ``site/templates/``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

import jinja2
import markupsafe
from markupsafe import Markup, escape

from toolpin.core.render import visible
from toolpin.site.model import MONTHS

CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The content security policy of every page (``_headers``)."""

META_CSP: Final = CSP.removesuffix("; frame-ancestors 'none'")
"""The same policy as a meta tag: browsers ignore ``frame-ancestors`` there (and report
an error for it), so only the header carries it."""

__all__ = ["CSP", "META_CSP", "Chrome", "chrome", "environment", "escape_text", "show", "site_path"]


def show(value: object) -> str:
    """A server string made visible on one line (``None`` shows as an empty string)."""
    if value is None:
        return ""
    return visible(value if isinstance(value, str) else str(value))


def show_multiline(value: object) -> str:
    if value is None:
        return ""
    return visible(value if isinstance(value, str) else str(value), multiline=True)


def site_path(base_url: object) -> str:
    """The path of ``base_url`` (every link starts with it), ending in ``/``."""
    return _site_path(base_url) if isinstance(base_url, str) else "/"


@functools.lru_cache(maxsize=16)
def _site_path(base_url: str) -> str:
    path = urlsplit(base_url).path
    return path if path.endswith("/") else path + "/"


@jinja2.pass_context
def href(context: Mapping[str, object], rel: str) -> str:
    """A link to ``rel`` (a path from the site root) under the path of ``base_url``."""
    return site_path(context.get("base_url")) + rel


def _replace_chain(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace(">", "&gt;")
        .replace("<", "&lt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


_ESCAPE_STR: Final[Callable[[str], str]] = getattr(markupsafe, "_escape_inner", _replace_chain)
"""The function :func:`markupsafe.escape` applies to a plain ``str`` (C in MarkupSafe 3,
four to six times faster than :func:`_replace_chain`), or the same replacements in Python
when a MarkupSafe release does not have it."""


def escape_text(text: str) -> str:
    """``text`` escaped exactly as :func:`markupsafe.escape` (and so autoescaping) escapes
    it, as a plain ``str`` for a fragment being built (no :class:`Markup` per piece).
    Anything but a plain ``str`` goes through :func:`markupsafe.escape` itself."""
    if type(text) is not str:
        return str(escape(text))
    return _ESCAPE_STR(text)


_STAMP: Final = re.compile(r"\d{4}-(?:0[1-9]|1[0-2])-\d{2}T\d{2}:\d{2}")


def when(value: object) -> Markup:
    """``2026-11-30T03:00:00Z`` as ``<time datetime=…>30 Nov 2026, 03:00 UTC</time>``."""
    return _when(value if isinstance(value, str) else "")


@functools.lru_cache(maxsize=1 << 12)
def _when(text: str) -> Markup:  # a version's time is shown in its history and its row
    if not _STAMP.match(text):
        return Markup("<time>") + text + Markup("</time>")
    year, month, day = text[:4], int(text[5:7]), int(text[8:10])
    shown = f"{day} {MONTHS[month - 1]} {year}, {text[11:16]} UTC"
    return Markup(f'<time datetime="{escape(text)}">{shown}</time>')


@dataclass(frozen=True, slots=True)
class Chrome:
    """The markup every page shares around its title, head, content and scripts (built
    once per site path and log: 70,000 pages of a large log repeat it)."""

    top: Markup
    links: Markup
    body: Markup
    foot: Markup


def _member(checkpoint: object, name: str) -> object:
    if isinstance(checkpoint, Mapping):
        return checkpoint[name]
    return getattr(checkpoint, name)


@jinja2.pass_context
def site_chrome(context: Mapping[str, object]) -> Chrome:
    """:class:`Chrome` for the page's ``base_url`` and log (``checkpoint``'s origin)."""
    checkpoint = context["checkpoint"]
    return chrome(site_path(context.get("base_url")), show(_member(checkpoint, "origin")))


@functools.lru_cache(maxsize=16)
def chrome(root: str, origin: str) -> Chrome:
    """The shared markup of the pages under ``root`` of the log ``origin`` (already made
    visible), every string escaped. It names no checkpoint: a page's bytes change only
    when what it shows does, and ``static/status.js`` shows the current checkpoint from
    ``api/v1/log.json`` (the server pages' ``verify.js`` verifies it)."""
    e, r = escape_text, escape_text(root)
    return Chrome(
        top=Markup(
            '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{e(META_CSP)}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<meta name="referrer" content="no-referrer">\n'
        ),
        links=Markup(
            '<link rel="icon" href="data:,">\n'
            f'<link rel="stylesheet" href="{r}static/site.css">\n'
            '<link rel="alternate" type="application/atom+xml" title="Every change in the log" '
            f'href="{r}feed.atom">\n'
        ),
        body=Markup(
            '</head>\n<body>\n<a class="skip" href="#main">Skip to content</a>\n'
            '<header class="site">\n<nav aria-label="Site">\n'
            f'<a class="brand" href="{r}index.html">toolpin log</a>\n'
            f'<a href="{r}servers/index.html">Servers</a>\n'
            f'<a href="{r}install/index.html">Install</a>\n'
            f'<a href="{r}reports/index.html">Reports</a>\n'
            f'<a href="{r}feed.atom">Feed</a>\n'
            f'<a href="{r}api/v1/servers.json">API</a>\n'
            '</nav>\n</header>\n<main id="main">\n'
        ),
        foot=Markup(
            '</main>\n<footer class="site">\n'
            f"<p>The log <code>{e(origin)}</code>:\n"
            f'<a href="{r}checkpoint">its signed checkpoint</a>'
            f'<span id="log-status" data-root="{r}"></span>.</p>\n'
            "<p>A record of what servers said, when. Not a safety rating.</p>\n</footer>\n"
            f'<script src="{r}static/status.js" defer></script>\n'
        ),
    )


class _CompiledTemplates(jinja2.BytecodeCache):
    """The code of each template as compiled by an environment of :func:`environment`,
    kept in memory for the process: every build makes a new environment, and each would
    parse and compile every template again (about a third of a small site's build).
    jinja2 keys it by the template's name and file and checks it against the source's
    checksum, so a changed template is compiled again; every environment that uses it has
    the same settings (they are :func:`environment`'s), which the compiled code depends on."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


_COMPILED: Final = _CompiledTemplates()


def environment() -> jinja2.Environment:
    """A fresh environment over ``toolpin/site/templates`` (every template autoescaped)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("toolpin.site", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,  # the templates are toolpin's own files: no stat on every use
        bytecode_cache=_COMPILED,
    )
    env.filters["v"] = show
    env.filters["vm"] = show_multiline
    env.filters["when"] = when
    env.globals["CSP"] = META_CSP
    env.globals["href"] = href
    env.globals["site_chrome"] = site_chrome
    env.globals["witness_policy"] = ""  # a witness policy's JSON: build_site(policy=...)
    return env
