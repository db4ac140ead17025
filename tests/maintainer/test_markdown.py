"""``snapshot --markdown`` renders hostile server text safely.

The Markdown is rendered by markdown-it-py (CommonMark, with GitHub-style autolinks,
tables and raw HTML allowed, as GitHub allows some), and the HTML is checked: no link, no
HTML from the server, nothing of the server's text outside ``<code>``, no control, bidi
or invisible character anywhere.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest
from markdown_it import MarkdownIt

from toolpin.core.drift import compare
from toolpin.core.render import has_unsafe
from toolpin.core.snapshot import Snapshot, snapshot_from_export
from toolpin.report.markdown import check_markdown, code, fenced, written_markdown

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "<details><summary>open me</summary>",
    "https://evil.example/steal?k=1",
    "www.evil.example",
    "[click here](https://evil.example/a)",
    "mail evil@evil.example",
    "ping @octocat and @org/team",
    "closes #1",
    ":smile: ![x](https://evil.example/p.png)",
    "```\n# pwned heading\n```",
    "`````` six",
    "rtl \u202eevil\u202c zw\u200bsp tag\U000e0041 esc\x1b[31m red",
    "a | table | row\n|---|---|",
]


def _snap(tools: list[dict[str, Any]]) -> Snapshot:
    return snapshot_from_export({"tools": tools}).snapshot


class _Text(HTMLParser):
    """Collects the HTML's tags, and its text outside <code>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.outside: list[str] = []
        self._code = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)
        self._code += tag == "code"

    def handle_endtag(self, tag: str) -> None:
        self._code -= tag == "code"

    def handle_data(self, data: str) -> None:
        if not self._code:
            self.outside.append(data)


def _render(markdown: str) -> _Text:
    md = MarkdownIt("gfm-like", {"html": True, "linkify": True})
    tokens = md.parse(markdown)
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in (t.children or [])}
    assert not kinds & {"html_block", "html_inline", "link_open", "image"}, kinds
    parser = _Text()
    parser.feed(md.render(markdown))
    return parser


ALLOWED_TAGS = {"h3", "p", "strong", "ul", "li", "code", "pre"}


def _assert_safe(markdown: str, *, code_blocks: int) -> None:
    assert not has_unsafe(markdown), "a control, bidi or invisible character got through"
    parsed = _render(markdown)
    assert set(parsed.tags) <= ALLOWED_TAGS, set(parsed.tags) - ALLOWED_TAGS
    assert parsed.tags.count("pre") == code_blocks, "a fence was closed early or opened"
    outside = "".join(parsed.outside)
    for needle in ("@", "evil", "octocat", "#1", "pwned", "smile", "alert", "<", "|"):
        assert needle not in outside, (needle, outside)


def test_hostile_descriptions_and_names_stay_inside_code() -> None:
    old = _snap([{"name": "t", "description": "Harmless.", "inputSchema": {"type": "object"}}])
    new_tools = [
        {"name": "t", "description": "\n".join(HOSTILE), "inputSchema": {"type": "object"}},
        *(
            {"name": f"n{i}`{text}", "description": text, "inputSchema": {"type": "object"}}
            for i, text in enumerate(HOSTILE)
        ),
    ]
    drift = compare(old, _snap(new_tools))
    out = check_markdown(
        "srv @octocat", ".toolpin/definitions.json", drift, accept="toolpin snapshot -- node x.js"
    )
    _assert_safe(out, code_blocks=2)
    assert "\\u{202e}" in out and "\\u{e0041}" in out and "\\u{1b}" in out
    assert "closes #1" in out, "the text is shown (in code), not dropped"


def test_hostile_schema_only_change_is_called_out_first_and_safe() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    wider = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "@octocat <b>https://evil.example</b>": {}},
    }
    old = _snap(
        [
            {"name": "search", "description": "Search.", "inputSchema": schema},
            {"name": "count", "description": "Count.", "inputSchema": {"type": "object"}},
        ]
    )
    new = _snap(
        [
            {"name": "search", "description": "Search.", "inputSchema": wider},
            {"name": "count", "description": "Count, @octocat.", "inputSchema": {"type": "object"}},
        ]
    )
    out = check_markdown("server", "b.json", compare(old, new), accept="toolpin snapshot -- x")
    _assert_safe(out, code_blocks=2)
    first = out.index("Schema changed, description untouched")
    assert first < out.index("- `search`") < out.index("Everything else") < out.index("- `count`")
    diff = out[out.index("```diff") :]
    assert diff.index("observed/search") < diff.index("observed/count")


def test_a_match_and_a_first_run_are_safe_too() -> None:
    snap = _snap([{"name": t, "description": t} for t in HOSTILE])
    out = check_markdown("s", "b.json", compare(snap, snap), accept="x", counts={"tool": 14})
    assert "matches" in out and "(14 tools)" in out
    _assert_safe(out, code_blocks=0)
    keys = {"tools": [d.key for d in snap.tools.items]}  # type: ignore[union-attr]
    first = written_markdown("s", "b.json", keys, accept="toolpin snapshot -- node x.js")
    _assert_safe(first, code_blocks=1)
    assert first.count("\n- ") == len(HOSTILE)


def test_a_long_diff_is_cut_and_says_so() -> None:
    old = _snap([{"name": "t", "description": "a"}])
    new = _snap([{"name": "t", "description": "\n".join(f"line {i}" for i in range(5000))}])
    out = check_markdown("s", "b.json", compare(old, new), accept="x", limit=2000)
    assert len(out) < 4000
    assert re.search(r"\d+ more lines not shown here", out)
    _assert_safe(out, code_blocks=2)


@pytest.mark.parametrize("text", ["", "`", "a`b", "``x``", " lead", "tail ", "`` ` ``"])
def test_code_spans_show_the_text_exactly(text: str) -> None:
    html = MarkdownIt("commonmark").renderInline(code(text))
    inner = re.fullmatch(r"<code>(.*)</code>", html, re.S)
    assert inner is not None, html
    assert inner.group(1) == text.replace("&", "&amp;").replace("<", "&lt;") or not text


def test_fenced_blocks_cannot_be_closed_by_their_lines() -> None:
    lines = ["```", "````", "~~~", "    ```", "end"]
    html = MarkdownIt("commonmark").render("\n".join([*fenced(lines, "diff"), "after"]))
    assert html.count("<pre>") == 1
    assert "after" in html.split("</pre>", 1)[1]
