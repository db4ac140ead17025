"""Atom (RFC 4287) feeds and their JSON Feed 1.1 mirrors.

``feed.atom`` / ``feed.json`` (the whole log), ``feed/<id>.atom`` / ``.json`` (one server),
``feed/label/<key>.atom`` / ``.json`` (changes carrying one label). An entry's id never
changes: ``urn:toolpin:<origin>:<index>:<leaf hash>``. A feed's ``updated`` is its newest
entry's time, never the build time. Entries carry labels, counts and links only: no text
a server wrote other than its (visible-escaped) name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from toolpin.core.render import counted, visible
from toolpin.site.render import escape_text

if TYPE_CHECKING:
    from toolpin.site.changes import ChangeSummary
    from toolpin.site.model import LogView, Version
    from toolpin.site.output import SiteWriter
    from toolpin.site.pages import ServerPage

MAX_ITEMS: Final = 200
LABEL_KEY: Final = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
EPOCH: Final = "1970-01-01T00:00:00Z"

__all__ = [
    "FeedEntry",
    "atom_entries",
    "entry_id",
    "server_entries",
    "write_feeds",
    "write_server_feed",
]


@dataclass(frozen=True)
class FeedEntry:
    id: str
    title: str
    updated: str
    link: str
    proof: str
    summary: str
    labels: tuple[str, ...]
    index: int


def entry_id(origin: str, index: int, leaf_hash: str) -> str:
    """The stable id of the entry at ``index``: origin + index + leaf hash."""
    return f"urn:toolpin:{quote(origin, safe='/.-_~')}:{index}:{leaf_hash}"


def _xml_safe(text: str) -> str:
    """Visible text with the two non-characters XML cannot carry escaped as well."""
    return visible(text).replace("\ufffe", "\\u{fffe}").replace("\uffff", "\\u{ffff}")


def _counts_text(counts: Mapping[str, int]) -> str:
    shown = (counted(n, kind[:-1], kind) for kind, n in sorted(counts.items()))
    return ", ".join(shown) or "nothing listed"


_Newest = tuple[list[FeedEntry], dict[str, list[FeedEntry]]]


def _newest(view: LogView, pages: Mapping[str, ServerPage], base: str) -> _Newest:
    """The whole log's newest entries, and each label's (at most :data:`MAX_ITEMS` of
    each: only those are built, of the 100,000 entries of a large log)."""
    origin = view.checkpoint.origin
    items = [
        (version.index, page, version, change)
        for page in pages.values()
        if not page.history.opted_out
        for version, change in page.changes
    ]
    items.sort(key=lambda item: item[0], reverse=True)
    names: dict[str, str] = {}
    whole: list[FeedEntry] = []
    by_label: dict[str, list[FeedEntry]] = {}
    for _, page, version, change in items:
        wanted = []
        for key in change.label_keys if change is not None else ():
            if LABEL_KEY.fullmatch(key):
                chosen = by_label.setdefault(key, [])
                if len(chosen) < MAX_ITEMS:
                    wanted.append(chosen)
        if len(whole) >= MAX_ITEMS and not wanted:
            continue
        if page.id not in names:
            names[page.id] = _xml_safe(page.history.latest.name) or page.id
        entry = _entry(origin, page.id, names[page.id], version, change, base)
        if len(whole) < MAX_ITEMS:
            whole.append(entry)
        for chosen in wanted:
            chosen.append(entry)
    return whole, by_label


def _entry(
    origin: str, sid: str, name: str, version: Version, change: ChangeSummary | None, base: str
) -> FeedEntry:
    counts = _counts_text(version.counts)
    if change is None:
        title = f"{name}: first recorded ({counts})"
        labels: tuple[str, ...] = ()
        summary = f"First recorded at entry {version.index}: {counts}."
    else:
        labels = change.label_keys
        title = (
            f"{name}: changed ({change.rewritten + change.schema_only} changed, "
            f"{change.added} added, {change.removed} removed)"
        )
        summary = f"Entry {version.index}: {counts}; labels: {', '.join(labels) or 'none'}."
    return FeedEntry(
        id=entry_id(origin, version.index, version.leaf_hash),
        title=title,
        updated=version.observed_at,
        link=f"{base}servers/{sid}.html#entry-{version.index}",
        proof=f"{base}proof/{version.index}.tlog-proof",
        summary=summary,
        labels=labels,
        index=version.index,
    )


def server_entries(origin: str, page: ServerPage, base: str) -> list[FeedEntry]:
    """The feed entries of one server, newest first (none for an opted-out server)."""
    if page.history.opted_out:
        return []
    name = _xml_safe(page.history.latest.name) or page.id
    out = [_entry(origin, page.id, name, v, c, base) for v, c in page.changes]
    out.sort(key=lambda e: e.index, reverse=True)
    return out


def atom_entries(entries: Sequence[FeedEntry]) -> Markup:
    """The ``<entry>`` elements of a feed (built here, every string escaped as the
    template's autoescaping would: a feed has one per change, 200 at most)."""
    e = escape_text
    out: list[str] = []
    for item in entries:
        out.append(
            f"  <entry>\n    <id>{e(item.id)}</id>\n    <title>{e(item.title)}</title>\n"
            f"    <updated>{e(item.updated)}</updated>\n"
            f'    <link rel="alternate" type="text/html" href="{e(item.link)}"/>\n'
            f'    <link rel="related" type="text/plain" href="{e(item.proof)}"/>\n'
        )
        out.extend(f'    <category term="{e(key)}"/>\n' for key in item.labels)
        out.append(f'    <summary type="text">{e(item.summary)}</summary>\n  </entry>\n')
    return Markup("".join(out))


def _write(
    env: jinja2.Environment,
    writer: SiteWriter,
    rel: str,
    *,
    title: str,
    feed_id: str,
    base: str,
    alternate: str,
    entries: Sequence[FeedEntry],
) -> None:
    chosen = list(entries[:MAX_ITEMS])
    updated = max((e.updated for e in chosen), default=EPOCH)
    atom = env.get_template("feed.atom").render(
        title=title,
        feed_id=feed_id,
        updated=updated,
        self_url=f"{base}{rel}.atom",
        alternate=f"{base}{alternate}",
        entries_xml=atom_entries(chosen),
    )
    writer.text(f"{rel}.atom", atom)
    document: dict[str, Any] = {
        "version": "https://jsonfeed.org/version/1.1",
        "title": title,
        "home_page_url": f"{base}{alternate}",
        "feed_url": f"{base}{rel}.json",
        "items": [
            {
                "id": e.id,
                "url": e.link,
                "title": e.title,
                "content_text": e.summary,
                "date_published": e.updated,
                "tags": list(e.labels),
                "external_url": e.proof,
            }
            for e in chosen
        ],
    }
    writer.text(
        f"{rel}.json", json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"
    )


def write_server_feed(
    env: jinja2.Environment, writer: SiteWriter, origin: str, page: ServerPage, base: str
) -> None:
    """``feed/<id>.atom`` and ``.json``: one server's changes (nothing when opted out)."""
    entries = server_entries(origin, page, base)
    if not entries:
        return
    sid = page.id
    name = _xml_safe(page.history.latest.name) or sid
    _write(
        env,
        writer,
        f"feed/{sid}",
        title=f"toolpin log: {name}",
        feed_id=f"urn:toolpin:{quote(origin, safe='/.-_~')}:server:{sid}",
        base=base,
        alternate=f"servers/{sid}.html",
        entries=entries,
    )


def write_feeds(
    env: jinja2.Environment,
    writer: SiteWriter,
    view: LogView,
    pages: Mapping[str, ServerPage],
    base: str,
) -> None:
    """The feeds of the whole log and of each label (each server's feed is
    :func:`write_server_feed`'s, written with the server's page)."""
    origin = view.checkpoint.origin
    entries, by_label = _newest(view, pages, base)
    _write(
        env,
        writer,
        "feed",
        title=f"toolpin log {_xml_safe(origin)}: every change",
        feed_id=f"urn:toolpin:{quote(origin, safe='/.-_~')}:feed",
        base=base,
        alternate="index.html",
        entries=entries,
    )
    for key in sorted(by_label):
        _write(
            env,
            writer,
            f"feed/label/{key}",
            title=f"toolpin log: changes labelled {key}",
            feed_id=f"urn:toolpin:{quote(origin, safe='/.-_~')}:label:{key}",
            base=base,
            alternate="index.html",
            entries=by_label[key],
        )
