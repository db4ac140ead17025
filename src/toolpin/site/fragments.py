"""HTML fragments built in Python: the parts of a page repeated for every version.

A server page's history and a compare page's list of versions are the site's hottest
markup (one piece per log entry, 100,000 in a large log); building them with
:func:`toolpin.site.render.escape_text` directly costs a fraction of the template engine's
per-expression work. Every string is escaped here, exactly as the templates' autoescaping
would, and the pages that hold these fragments are still templates (``server.html``,
``compare.html``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from toolpin.site.render import escape_text as escape
from toolpin.site.render import show, when

__all__ = [
    "change_links",
    "compare_rows",
    "definitions_html",
    "history_items",
    "server_rows",
    "tool_count_rows",
    "version_options",
]


def _counts(counts: Mapping[str, int]) -> str:
    items = sorted(counts.items(), key=lambda item: item[0].lower())  # as dictsort does
    return ", ".join(f"{escape(kind)}: {n}" for kind, n in items)


def history_items(entries: Sequence[Mapping[str, Any]], root: str) -> Markup:
    """The ``<li>`` of every entry of a server's history (``root``: the site's path)."""
    out: list[str] = []
    for entry in entries:
        version, change, window = entry["version"], entry["change"], entry["window"]
        index = version.index
        out.append(f'<li id="entry-{index}">\n')
        if change is None:
            out.append(f"<h3>First recorded {when(version.observed_at)}</h3>\n")
            out.append(f"<p>{_counts(version.counts)}</p>\n")
        else:
            after, seen = when(window["after"]), when(window["seen"])
            out.append(f"<h3>Changed between {after} and {seen}</h3>\n")
            if window["gap"]:
                out.append(
                    f'<p class="gap">The crawl had a gap: no good look between {after} and '
                    f"{seen}, so the change happened somewhere in that window.</p>\n"
                )
            if not window["known"]:
                out.append(
                    '<p class="gap">The entry does not record the last good look before it; '
                    "the window starts at the previous entry.</p>\n"
                )
            out.append('<ul class="labels summary-labels">')
            out.extend(f'<li class="label">{escape(key)}</li>' for key in change.label_keys)
            out.append("</ul>\n")
            out.append(entry["body"])
        out.append(
            f'<p class="proof">Entry {index} · leaf <code class="hash">'
            f"{escape(version.leaf_hash)}</code> ·\n"
            f'<a href="{escape(root)}proof/{index}.tlog-proof">inclusion proof</a></p>\n</li>\n'
        )
    return Markup("".join(out))


def version_options(rows: Sequence[Mapping[str, Any]], selected: int) -> Markup:
    """The ``<option>`` of every version, ``selected`` (a position) chosen."""
    chosen = selected % len(rows) if rows else 0
    return Markup(
        "".join(
            f'<option value="{row["index"]}" data-blob="{escape(row["blob_path"])}"'
            f"{' selected' if n == chosen else ''}>entry {row['index']} · "
            f"{escape(row['observed_at'][:10])}</option>"
            for n, row in enumerate(rows)
        )
    )


def compare_rows(rows: Sequence[Mapping[str, Any]], root: str) -> Markup:
    """The table row of every version on a compare page."""
    out: list[str] = []
    for row in rows:
        links = " · ".join(
            f'<a href="{escape(link["href"])}">{escape(link["text"])}</a>' for link in row["links"]
        )
        blob = row["blob_path"]
        definitions = f'<a href="{escape(root)}{escape(blob)}">JSON</a>' if blob else ""
        out.append(
            f"<tr>\n<td>{row['index']}</td>\n<td>{when(row['observed_at'])}</td>\n"
            f"<td>{_counts(row['counts'])}</td>\n"
            f'<td><code class="hash">{escape(row["surface"][:16])}</code></td>\n'
            f"<td>{links or 'first recorded'}</td>\n"
            f"<td>{definitions}</td>\n"
            "</tr>\n"
        )
    return Markup("".join(out))


def change_links(indices: Sequence[int]) -> Markup:
    """The server page's link to each change on it (``indices``: its versions' entries)."""
    return Markup(
        "".join(
            f'<li><a href="#entry-{b}">entry {a} → {b}</a> (on this page)</li>'
            for a, b in itertools.pairwise(indices)
        )
    )


def definitions_html(groups: Sequence[Mapping[str, Any]]) -> Markup:
    """The current definitions in full, per kind (``kind``, ``items`` of ``key``, ``hash``
    and ``json``, the lines already made visible)."""
    out: list[str] = []
    for group in groups:
        items = group["items"]
        out.append(f"<h3>{escape(str(group['kind']).capitalize())} ({len(items)})</h3>\n")
        out.extend(
            f'<details><summary><code>{escape(show(d["key"]))}</code> <code class="hash">'
            f"{escape(d['hash'][:16])}</code></summary>\n"
            f'<pre tabindex="0">{escape(d["json"])}</pre></details>\n'
            for d in items
        )
    return Markup("".join(out))


def _or_unknown(value: Any) -> str:
    return "?" if value is None else escape(str(value))


def tool_count_rows(rows: Sequence[Mapping[str, Any]]) -> Markup:
    """The ``<tr>`` of every server of a monthly report's "by count of tools changed"
    table (thousands of rows a month in a large log)."""
    out: list[str] = []
    for row in rows:
        first = row["firstChange"]
        if first["gap"]:
            dated = f"between {when(first['from'])} and {when(first['to'])}"
        else:
            dated = str(when(first["to"]))
        server = escape(str(row["server"]))
        out.append(
            f'<tr><th scope="row"><a href="../servers/{server}.html">'
            f"{escape(str(row['name'])) if row['name'] else server}</a></th>"
            f"<td>{escape(str(row['events']))}</td>"
            f"<td>{_or_unknown(row['toolsBefore'])} → {_or_unknown(row['toolsAfter'])}</td>"
            f"<td>{escape(str(row['toolsAdded']))}</td><td>{escape(str(row['toolsRemoved']))}</td>"
            f"<td>{escape(str(row['toolsChanged']))}</td><td>{escape(str(row['schemaOnly']))}</td>"
            f"<td>{dated}</td></tr>\n"
        )
    return Markup("".join(out))


def server_rows(rows: Sequence[Mapping[str, Any]], root: str) -> Markup:
    """The ``<tr>`` of every server of a server list, last row first (20,000 rows in a
    large log, on each of the three lists)."""
    out: list[str] = []
    base = escape(root)
    for row in reversed(rows):
        name = show(row["name"])
        sid = escape(row["id"])
        tools = row["tools"]
        out.append(
            f'<tr data-name="{escape(name.lower())} {sid}">\n'
            f'<td><a href="{base}servers/{sid}.html">{escape(name) if name else sid}</a> '
            f'<code class="id">{sid}</code></td>\n'
            f'<td><span class="pill {escape(row["state"])}">{escape(row["badge"].message)}'
            "</span></td>\n"
            f"<td>{'?' if tools is None else escape(str(tools))}</td>\n"
            f"<td>{escape(str(row['versions']))}</td>\n"
            f"<td>{escape(show(row['source']))}</td>\n"
            "</tr>\n"
        )
    return Markup("".join(out))
