"""PLACEHOLDER (the site's own render module replaces this at merge): the jinja2
environment every page is rendered with: autoescape on, undefined names are errors."""

from __future__ import annotations

import jinja2


def environment() -> jinja2.Environment:
    """Templates from ``toolpin/site/templates``, autoescaped, ``StrictUndefined``."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("toolpin.site", "templates"),
        autoescape=jinja2.select_autoescape(["html", "xml", "svg"], default=True),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
