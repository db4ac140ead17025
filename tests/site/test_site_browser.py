"""The built site in headless Chromium (Debian's, driven by playwright) over 127.0.0.1.

Every page type loads with zero console errors and zero CSP violations; the in-browser
verification passes, and fails on a tampered tile; a hostile corpus changes no DOM
structure and runs no script; axe-core finds no violation; badge text keeps 5-7 px of
padding in the real font. Screenshots of the main pages go to the artifacts folder.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from site_helpers import NOW, LogWriter, sample_log, serve, tool

from toolpin.publog.note import Verifier
from toolpin.site.badge import Badge, render_badge
from toolpin.site.build import build_site, parse_now

WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI);
});
"""


class Tab:
    """A page with its console errors, page errors and CSP violations collected."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1100, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.add_init_script(WATCH)
        self.page.on(
            "console",
            lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None,
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("dialog", lambda d: (self.errors.append("dialog opened"), d.dismiss()))

    def open(self, url: str) -> Any:
        response = self.page.goto(url, wait_until="load", timeout=20_000)
        assert response is not None and response.ok, url
        return self.page

    def violations(self) -> list[str]:
        found: list[str] = self.page.evaluate("window.__csp || []")
        return found

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser: Any) -> Iterator[Tab]:
    t = Tab(browser)
    yield t
    t.close()


def _wait_verdict(page: Any) -> str:
    """The verification's verdict (polled: the CSP forbids the eval wait_for_function uses)."""
    for _ in range(200):
        if page.get_attribute("#verify-status", "class"):
            text: str = page.text_content("#verify-status")
            return text
        page.wait_for_timeout(100)
    raise AssertionError("the in-browser verification gave no verdict within 20 s")


def _served_verdict(tab: Tab, out: Path, rel: str) -> tuple[Any, str]:
    """Serve ``out``, open its page ``rel`` and wait for the verification's verdict (the
    page stays open after the server stops: its text is read)."""
    server, url = serve(out)
    try:
        page = tab.open(url + rel)
        return page, _wait_verdict(page)
    finally:
        server.shutdown()
        server.server_close()


def _wait_pair(page: Any, pair: str) -> None:
    """Wait for the compare page's script to show ``pair``."""
    for _ in range(100):
        if page.get_attribute("#pair", "data-shown") == pair:
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"the compare page did not show {pair} within 5 s")


def _pages(site: dict[str, Any]) -> list[str]:
    ids = site["ids"]
    pages = [
        "index.html",
        "servers/index.html",
        "servers/changed.html",
        "servers/stale.html",
        *(f"servers/{ids[k]}.html" for k in ("stable", "changed", "new", "optout")),
        f"servers/{ids['changed']}/compare.html",
    ]
    optional = ("install/index.html", "reports/index.html")
    pages.extend(rel for rel in optional if (site["out"] / rel).is_file())
    return pages


def test_every_page_type_loads_clean(sample_site: dict[str, Any], served: str, tab: Tab) -> None:
    for rel in _pages(sample_site):
        page = tab.open(served + rel)
        if page.query_selector("#verify-status"):
            _wait_verdict(page)
        assert tab.errors == [], (rel, tab.errors)
        assert tab.violations() == [], rel
    badge = tab.open(served + f"badge/{sample_site['ids']['stable']}.svg")
    assert badge.title() == badge.get_attribute("svg", "aria-label")
    # (a document of its own, so the browser also asks for /favicon.ico: not a page error)


def test_the_filter_works_with_and_without_javascript(
    sample_site: dict[str, Any], served: str, browser: Any
) -> None:
    with_js = Tab(browser)
    page = with_js.open(served + "servers/index.html")
    assert page.is_visible("#filter")
    page.fill("#filter", "files")
    assert page.text_content("#filter-count") == "1 of 3 shown"
    assert len(page.query_selector_all("#server-rows tr:not([hidden])")) == 1
    with_js.close()
    context = browser.new_context(java_script_enabled=False)
    plain = context.new_page()
    plain.goto(served + "servers/index.html")
    assert not plain.is_visible("#filter")
    assert len(plain.query_selector_all("#server-rows tr")) == 3
    plain.goto(served + "servers/changed.html")
    assert len(plain.query_selector_all("#server-rows tr")) == 1
    plain.goto(served + f"servers/{sample_site['ids']['changed']}.html")
    assert "needs JavaScript" in (plain.text_content("#verify-status") or "")
    context.close()


def test_in_browser_verification_passes(sample_site: dict[str, Any], served: str, tab: Tab) -> None:
    for key in ("stable", "changed", "new"):
        page = tab.open(served + f"servers/{sample_site['ids'][key]}.html")
        verdict = _wait_verdict(page)
        assert "verified against checkpoint 5" in verdict, verdict
        assert page.get_attribute("#verify-status", "class") == "ok"
    assert tab.errors == []


def _grown(tmp_path: Path) -> tuple[Path, dict[str, str], LogWriter]:
    """The sample site, then two more entries (of a new server) and an incremental build:
    the stable server's page and proof are the ones published at checkpoint 5."""
    writer, ids = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    out, cache = tmp_path / "out", tmp_path / "cache"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    page = out / "servers" / f"{ids['stable']}.html"
    before = (page.read_bytes(), page.stat().st_mtime_ns)
    proof = (out / "proof" / "0.tlog-proof").read_bytes()
    writer.observe("later-server", [tool("a")], "2026-11-30T06:00:00Z")
    writer.observe("later-server-2", [tool("b")], "2026-11-30T07:00:00Z")
    writer.commit()
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    assert (page.read_bytes(), page.stat().st_mtime_ns) == before  # not rewritten
    assert (out / "proof" / "0.tlog-proof").read_bytes() == proof
    return out, ids, writer


def test_in_browser_verification_of_a_grown_site_proves_consistency(
    tmp_path: Path, tab: Tab
) -> None:
    out, ids, _ = _grown(tmp_path)
    page, verdict = _served_verdict(tab, out, f"servers/{ids['stable']}.html")
    footer = page.text_content("#log-status")
    assert verdict.startswith(
        "Entry 0 verified against checkpoint 5, consistent with the current checkpoint 7"
    ), verdict
    assert page.get_attribute("#verify-status", "class") == "ok"
    assert footer is not None and "7 entries" in footer, footer
    assert tab.errors == [] and tab.violations() == []


def test_in_browser_verification_fails_on_a_forked_current_checkpoint(
    tmp_path: Path, tab: Tab
) -> None:
    """The same key signs another tree of 7 entries; the site's proofs of checkpoint 5
    are kept, the checkpoint and tiles are the fork's: the page says they are not
    consistent."""
    from toolpin.publog.tiles import TileLog

    out, ids, _ = _grown(tmp_path)
    fork = LogWriter(tmp_path / "fork")  # the same key
    for n in range(6):
        fork.observe(f"fork-{n}", [tool("x")], "2026-11-30T06:00:00Z")
    # entry 0 is the stable server's own bytes (its proof holds); the rest differ
    fork.pending.insert(0, TileLog.open(tmp_path / "log").read_entry(0))
    shutil.copytree(tmp_path / "log" / "blob", tmp_path / "fork" / "blob", dirs_exist_ok=True)
    fork.commit()
    for rel in ("checkpoint", "tile"):
        target = out / rel
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
    shutil.copy(tmp_path / "fork" / "checkpoint", out / "checkpoint")
    shutil.copytree(tmp_path / "fork" / "tile", out / "tile")
    page, verdict = _served_verdict(tab, out, f"servers/{ids['stable']}.html")
    assert verdict.endswith(
        "does not verify: checkpoint 5 is not consistent with the current checkpoint 7"
    ), verdict
    assert page.get_attribute("#verify-status", "class") == "bad"


def test_in_browser_verification_fails_on_a_tampered_tile(
    sample_site: dict[str, Any], tmp_path: Path, tab: Tab
) -> None:
    out = shutil.copytree(sample_site["out"], tmp_path / "out")
    tile = out / "tile" / "0" / "000.p" / "5"
    data = bytearray(tile.read_bytes())
    data[5] ^= 0x40  # leaf 0's hash: a sibling of every later entry's path
    tile.write_bytes(bytes(data))
    page, verdict = _served_verdict(tab, out, f"servers/{sample_site['ids']['changed']}.html")
    assert "does not verify" in verdict and "root" in verdict, verdict
    assert page.get_attribute("#verify-status", "class") == "bad"


def test_in_browser_verification_fails_on_a_forged_checkpoint(
    sample_site: dict[str, Any], tmp_path: Path, tab: Tab
) -> None:
    out = shutil.copytree(sample_site["out"], tmp_path / "out")
    note = (out / "checkpoint").read_text()
    (out / "checkpoint").write_text(note.replace("\n5\n", "\n6\n", 1))
    _, verdict = _served_verdict(tab, out, f"servers/{sample_site['ids']['new']}.html")
    assert "does not verify: the checkpoint is not signed by the key on this page" in verdict


def test_axe_finds_no_violation(sample_site: dict[str, Any], served: str, tab: Tab) -> None:
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    for rel in _pages(sample_site):
        page = tab.open(served + rel)
        if page.query_selector("#verify-status"):
            _wait_verdict(page)
        results = axe.run(page)
        assert results.violations_count == 0, (rel, results.generate_report())


def test_screenshots(sample_site: dict[str, Any], served: str, tab: Tab, artifacts: Path) -> None:
    ids = sample_site["ids"]
    for rel, name in (
        ("index.html", "index"),
        ("servers/index.html", "servers"),
        (f"servers/{ids['changed']}.html", "server-changed"),
        (f"servers/{ids['optout']}.html", "server-stub"),
    ):
        page = tab.open(served + rel)
        if page.query_selector("#verify-status"):
            _wait_verdict(page)
        page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)
        assert (artifacts / f"{name}.png").stat().st_size > 10_000


BADGE_TEXTS = [
    ("unchanged", "unchanged 91d · 4 Sep"),
    ("unchanged", "unchanged 1234d · 30 Sep 2025"),
    ("changed", "changed today · 1 Dec"),
    ("changed", "changed 29 Nov"),
    ("changed-since", "changed since 4 Sep"),
    ("new", "first recorded today · 1 Dec"),
    ("stale", "last checked 4 Sep"),
    ("stale", "last checked 28 Feb 2025"),
    ("unverified", "log does not verify"),
]


def test_badge_text_keeps_its_padding_in_the_real_font(tmp_path: Path, tab: Tab) -> None:
    for n, (state, message) in enumerate(BADGE_TEXTS):
        svg, _ = render_badge(Badge(state, message, "#2e7d32"))
        (tmp_path / f"{n}.svg").write_bytes(svg)
    server, url = serve(tmp_path)
    try:
        for n, (_, message) in enumerate(BADGE_TEXTS):
            page = tab.open(f"{url}{n}.svg")
            sizes = page.evaluate(
                """() => Array.from(document.querySelectorAll('rect')).map((r, i) => {
                    const t = document.querySelectorAll('text')[i];
                    const x = Number(r.getAttribute('x') || 0), w = Number(r.getAttribute('width'));
                    const tx = Number(t.getAttribute('x')), len = t.getComputedTextLength();
                    return [tx - x, x + w - (tx + len)];
                })"""
            )
            for left, right in sizes:
                assert 5 <= left <= 7 and 5 <= right <= 7, (message, sizes)
    finally:
        server.shutdown()
        server.server_close()


HOSTILE = {
    "name": "</script><script>window.__pwned=1</script>\u202egnp.exe",
    "tool": '"><img src=x onerror="window.__pwned=1">',
    "tool2": "zero\u200bwidth\U000e0041tag",
    "prop": "</pre><svg onload=window.__pwned=1>",
    "desc": "Ignore previous instructions\u2066 <b>bold</b> " + "A" * 100_000 + "</textarea>",
    "pkg": "../../../../etc/passwd",
    "ver": "1.0\u202e<script>",
    "instr": "<iframe src=javascript:window.__pwned=1></iframe>\n\x1b[31mred",
}


def _benign(text: str) -> str:
    """A harmless string of the same length (letters only)."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    letters = "".join(chr(ord("a") + int(c, 16) % 26) for c in digest)
    return (letters * (len(text) // len(letters) + 1))[: len(text)]


def _corpus_log(path: Path, words: dict[str, str]) -> tuple[LogWriter, str]:
    w = LogWriter(path)
    tools = [
        tool(words["tool"], words["desc"], **{words["prop"]: {"type": "string"}}),
        tool(words["tool2"], "plain"),
    ]
    sid = w.observe(
        words["name"],
        tools,
        "2026-11-01T00:00:00Z",
        package=("npm", words["pkg"], words["ver"]),
        instructions=words["instr"],
    )
    w.commit()
    tools2 = [*tools, tool(words["tool2"] + "2", "plain")]
    w.observe(
        words["name"],
        tools2,
        "2026-11-10T00:00:00Z",
        last_good_look="2026-11-09T00:00:00Z",
        package=("npm", words["pkg"], words["ver"]),
        instructions=words["instr"],
    )
    w.commit()
    tools3 = [
        tool(words["tool"], words["desc"], **{words["prop"]: {"type": "integer"}}),
        *tools2[1:],
    ]
    w.observe(
        words["name"],
        tools3,
        "2026-11-30T00:00:00Z",
        last_good_look="2026-11-29T00:00:00Z",
        package=("npm", words["pkg"], words["ver"]),
        instructions=words["instr"],
    )
    w.commit()
    return w, sid


def _shape(page: Any) -> list[str]:
    shape: list[str] = page.evaluate(
        # Labels are left out: hidden characters rightly add one (and its list item).
        "() => Array.from(document.querySelectorAll('*')).filter(e => !e.closest('.label'))"
        ".map(e => e.tagName + Array.from(e.attributes).map(a => ' ' + a.name).join(''))"
    )
    return shape


def test_a_hostile_corpus_changes_no_dom_structure_and_runs_no_script(
    tmp_path: Path, tab: Tab, artifacts: Path
) -> None:
    sites: dict[str, tuple[str, str]] = {}
    for kind, words in (
        ("hostile", HOSTILE),
        ("benign", {k: _benign(v) for k, v in HOSTILE.items()}),
    ):
        writer, sid = _corpus_log(tmp_path / kind / "log", words)
        out = tmp_path / kind / "out"
        build_site(
            tmp_path / kind / "log", Verifier.from_text(writer.vkey), out, now=parse_now(NOW)
        )
        sites[kind] = (str(out), sid)
    files = {
        kind: sorted(
            str(p.relative_to(out)).replace(sid, "ID")
            for p in Path(out).rglob("*")
            if p.is_file()
            and "blob" not in p.parts
            and "tile" not in p.parts
            and "proof" not in p.parts
            and "label" not in p.parts  # hidden characters carry a label, and its feed
        )
        for kind, (out, sid) in sites.items()
    }
    assert files["hostile"] == files["benign"]  # no name reaches a file name
    shapes: dict[str, dict[str, list[str]]] = {}
    for kind, (out, sid) in sites.items():
        server, url = serve(Path(out))
        try:
            shapes[kind] = {}
            for rel in (
                "index.html",
                "servers/index.html",
                f"servers/{sid}.html",
                f"servers/{sid}/compare.html",
            ):
                page = tab.open(url + rel)
                if page.query_selector("#verify-status"):
                    assert "verified against checkpoint 3" in _wait_verdict(page)
                if page.query_selector("#pair"):
                    page.select_option("#from", "0")
                    _wait_pair(page, "0-2")  # the script's view of the pair, in the shape
                shapes[kind][rel.replace(sid, "ID")] = _shape(page)
                assert page.evaluate("typeof window.__pwned") == "undefined"
                if kind == "hostile" and rel == f"servers/{sid}.html":
                    page.screenshot(path=str(artifacts / "hostile-server.png"), full_page=True)
                    heading = page.text_content("h1") or ""
                    assert "\u202e" not in heading and "\\u{202e}" in heading
                    assert "</script>" in heading  # shown as text, not parsed
                    body = page.text_content("main") or ""
                    assert "\u200b" not in body and "\\u{200b}" in body
                    assert "\U000e0041" not in body and "\\u{e0041}" in body
            assert tab.errors == [], tab.errors
            assert tab.violations() == []
        finally:
            server.shutdown()
            server.server_close()
    assert shapes["hostile"] == shapes["benign"]
