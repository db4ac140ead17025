"""toolpin.site.fragments: each fragment gives the very bytes of the template markup it
replaced (kept here as jinja source), for hostile strings too."""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolpin.site.badge import Badge
from toolpin.site.fragments import server_rows, tool_count_rows
from toolpin.site.model import SiteCheckpoint
from toolpin.site.render import environment

SERVER_ROWS = """\
{% for row in rows|reverse %}
<tr data-name="{{ (row.name|v)|lower }} {{ row.id }}">
<td><a href="{{ href('servers/' ~ row.id ~ '.html') }}">{{ row.name|v or row.id }}</a> \
<code class="id">{{ row.id }}</code></td>
<td><span class="pill {{ row.state }}">{{ row.badge.message }}</span></td>
<td>{{ row.tools if row.tools is not none else "?" }}</td>
<td>{{ row.versions }}</td>
<td>{{ row.source|v }}</td>
</tr>
{% endfor %}
"""

TOOL_COUNT_ROWS = """\
{% for row in rows %}
<tr><th scope="row"><a href="../servers/{{ row.server }}.html">{{ row.name if row.name else \
row.server }}</a></th><td>{{ row.events }}</td><td>{{ row.toolsBefore if row.toolsBefore is \
not none else "?" }} → {{ row.toolsAfter if row.toolsAfter is not none else "?" }}</td><td>\
{{ row.toolsAdded }}</td><td>{{ row.toolsRemoved }}</td><td>{{ row.toolsChanged }}</td><td>\
{{ row.schemaOnly }}</td><td>{% if row.firstChange.gap %}between {{ row.firstChange.from|when }} \
and {{ row.firstChange.to|when }}{% else %}{{ row.firstChange.to|when }}{% endif %}</td></tr>
{% endfor %}
"""

HOSTILE = st.one_of(
    st.sampled_from(
        ["", "</script><script>alert(1)</script>", "<img src=x onerror=alert(1)>", "a&b\"c'd",
         "\u202eevil\u202c", "x\u200by", "tag\U000e0041", "İSTANBUL", "ǅ", "../../etc/passwd"]
    ),
    st.text(max_size=12),
)  # fmt: skip
COUNT = st.one_of(st.none(), st.integers(min_value=0, max_value=10**6))


@functools.cache
def _environment() -> Any:
    """One environment for the module (:func:`environment` makes a new one per call;
    rendering changes nothing in it), so each template is compiled once, not per example."""
    return environment()


@functools.cache
def _template(source: str) -> Any:
    return _environment().from_string(source)


def _render(source: str, **context: Any) -> str:
    return str(_template(source).render(**context))


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {
                "id": HOSTILE,
                "name": st.one_of(st.none(), HOSTILE),
                "state": HOSTILE,
                "badge": st.builds(Badge, HOSTILE, HOSTILE, HOSTILE),
                "tools": COUNT,
                "versions": st.integers(min_value=1, max_value=10**4),
                "source": st.one_of(st.none(), HOSTILE),
            }
        ),
        max_size=4,
    ),
    base_url=st.sampled_from(["/", "/log/", "https://example.test/a&b/"]),
)
def test_server_rows_are_the_template_rows(rows: list[dict[str, Any]], base_url: str) -> None:
    from toolpin.site.render import site_path

    expected = _render(SERVER_ROWS, rows=rows, base_url=base_url)
    assert str(server_rows(rows, site_path(base_url))) == expected


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {
                "server": HOSTILE,
                "name": HOSTILE,
                "events": st.integers(min_value=0, max_value=10**4),
                "toolsBefore": COUNT,
                "toolsAfter": COUNT,
                "toolsAdded": st.integers(min_value=0, max_value=99),
                "toolsRemoved": st.integers(min_value=0, max_value=99),
                "toolsChanged": st.integers(min_value=0, max_value=99),
                "schemaOnly": st.integers(min_value=0, max_value=99),
                "firstChange": st.fixed_dictionaries(
                    {"gap": st.booleans(), "from": HOSTILE, "to": HOSTILE}
                ),
            }
        ),
        max_size=4,
    )
)
def test_tool_count_rows_are_the_template_rows(rows: list[dict[str, Any]]) -> None:
    assert str(tool_count_rows(rows)) == _render(TOOL_COUNT_ROWS, rows=rows)


OLD_BASE = """\
{% set root = href('') %}
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{ CSP }}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{% block title %}toolpin log{% endblock %}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{{ root }}static/site.css">
<link rel="alternate" type="application/atom+xml" title="Every change in the log" \
href="{{ root }}feed.atom">
{% block head %}{% endblock %}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site">
<nav aria-label="Site">
<a class="brand" href="{{ root }}index.html">toolpin log</a>
<a href="{{ root }}servers/index.html">Servers</a>
<a href="{{ root }}install/index.html">Install</a>
<a href="{{ root }}reports/index.html">Reports</a>
<a href="{{ root }}feed.atom">Feed</a>
<a href="{{ root }}api/v1/servers.json">API</a>
</nav>
</header>
<main id="main">
{% block content %}{% endblock %}
</main>
<footer class="site">
<p>The log <code>{{ checkpoint.origin|v }}</code>:
<a href="{{ root }}checkpoint">its signed checkpoint</a><span id="log-status" \
data-root="{{ root }}"></span>.</p>
<p>A record of what servers said, when. Not a safety rating.</p>
</footer>
<script src="{{ root }}static/status.js" defer></script>
{% block scripts %}{% endblock %}
</body>
</html>
"""


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    origin=HOSTILE,
    size=st.integers(min_value=0, max_value=10**9),
    root=HOSTILE,
    time=st.one_of(HOSTILE, st.sampled_from(["2026-11-30T03:00:00Z", "2026-13-01T00:00"])),
    base_url=st.sampled_from(["/", "/log/", "https://example.test/a&b/", "https://x.test"]),
    as_mapping=st.booleans(),
)
def test_the_shared_page_markup_is_the_old_base_template(
    origin: str, size: int, root: str, time: str, base_url: str, as_mapping: bool
) -> None:
    checkpoint: Any = SiteCheckpoint(origin, size, root, time, "note", "vkey")
    if as_mapping:
        checkpoint = {"origin": origin, "size": size, "root": root, "time": time}
    page = _environment().get_template("base.html").render(checkpoint=checkpoint, base_url=base_url)
    assert page == _render(OLD_BASE, checkpoint=checkpoint, base_url=base_url)


@settings(max_examples=500, deadline=None)
@given(st.text(), st.sampled_from(["&", "<", ">", "'", '"', "&amp;", "\x00", "\u202e"]))
def test_escaped_text_is_markupsafe_s_and_the_fallback_s(text: str, special: str) -> None:
    import markupsafe

    from toolpin.site.render import _replace_chain, escape_text

    for sample in (text, special + text + special, text.join(special * 3)):
        expected = str(markupsafe.escape(sample))
        assert escape_text(sample) == expected
        assert _replace_chain(sample) == expected
