"""The jinja2 environment of every page: autoescape everywhere, ``StrictUndefined``.

Every server string reaches a template through the ``v`` filter (:func:`toolpin.core.render.
visible`), so control, bidi, zero-width and tag characters show as ``\\u{hex}`` escapes, and
autoescaping then makes the result inert HTML. Templates live in ``site/templates/``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

import jinja2
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

__all__ = ["CSP", "META_CSP", "environment", "escape_text", "show", "site_path"]


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


def escape_text(text: str) -> str:
    """``text`` escaped exactly as :func:`markupsafe.escape` (and so autoescaping) escapes
    it, as a plain ``str`` for a fragment being built (no :class:`Markup` per piece).
    Anything but a plain ``str`` goes through :func:`markupsafe.escape` itself."""
    if type(text) is not str:
        return str(escape(text))
    return (
        text.replace("&", "&amp;")
        .replace(">", "&gt;")
        .replace("<", "&lt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


_STAMP: Final = re.compile(r"\d{4}-(?:0[1-9]|1[0-2])-\d{2}T\d{2}:\d{2}")


def when(value: object) -> Markup:
    """``2026-11-30T03:00:00Z`` as ``<time datetime=…>30 Nov 2026, 03:00 UTC</time>``."""
    text = value if isinstance(value, str) else ""
    if not _STAMP.match(text):
        return Markup("<time>") + text + Markup("</time>")
    year, month, day = text[:4], int(text[5:7]), int(text[8:10])
    shown = f"{day} {MONTHS[month - 1]} {year}, {text[11:16]} UTC"
    return Markup(f'<time datetime="{escape(text)}">{shown}</time>')


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
    )
    env.filters["v"] = show
    env.filters["vm"] = show_multiline
    env.filters["when"] = when
    env.globals["CSP"] = META_CSP
    env.globals["href"] = href
    return env
