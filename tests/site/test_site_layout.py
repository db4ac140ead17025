"""The built site's layout in headless Chromium, at a phone's width and a desktop's: no
table header breaks inside a word, no page is wider than the window (a long code line
scrolls in its own box instead of being cut off), dates are readable ``<time>``s, and the
install page's form controls are full-size and styled."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.pages import open_page

WIDTHS = (375, 1100)

SPLIT_WORDS = """() => {
  const split = [];
  for (const th of document.querySelectorAll("th")) {
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /\\S+/g;
      let m;
      while ((m = re.exec(node.data)) !== null) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (tops.size > 1) split.push(m[0]);
      }
    }
  }
  return split;
}"""

OVERFLOW = """() => {
  const out = {page: document.documentElement.scrollWidth - window.innerWidth, cut: []};
  for (const el of document.querySelectorAll("pre, code, table")) {
    const style = getComputedStyle(el);
    if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0
        && !["auto", "scroll"].includes(style.overflowX)) {
      let box = el.parentElement, scrolls = false;
      for (; box; box = box.parentElement) {
        if (["auto", "scroll"].includes(getComputedStyle(box).overflowX)) {
          scrolls = true;
          break;
        }
      }
      if (!scrolls && el.tagName !== "CODE") {
        out.cut.push(el.tagName + ": " + el.textContent.slice(0, 40));
      }
    }
  }
  return out;
}"""


def _pages(site: dict[str, Any]) -> list[str]:
    ids = site["ids"]
    pages = [
        "index.html",
        "servers/index.html",
        f"servers/{ids['changed']}.html",
        f"servers/{ids['changed']}/compare.html",
        "install/index.html",
    ]
    reports = sorted((site["out"] / "reports").glob("*.html"))
    assert reports, "the sample site has report pages"
    pages += [f"reports/{p.name}" for p in reports]
    return pages


class Window:
    """One window width's pages, each loaded once for the whole module: every check here
    only reads a loaded page (its layout, text and computed styles), so the checks of one
    page at one width share one load."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.loaded: dict[str, Any] = {}

    def page(self, url: str) -> Any:
        if url not in self.loaded:
            self.loaded[url], _ = open_page(self.context, url)
        return self.loaded[url]


@pytest.fixture(scope="module")
def windows(browser: Any) -> Iterator[dict[int, Window]]:
    contexts = {w: browser.new_context(viewport={"width": w, "height": 800}) for w in WIDTHS}
    yield {w: Window(context) for w, context in contexts.items()}
    for context in contexts.values():
        context.close()


@pytest.fixture(params=WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def sized(request: pytest.FixtureRequest, windows: dict[int, Window]) -> Window:
    return windows[request.param]


def test_no_header_breaks_inside_a_word(
    sample_site: dict[str, Any], served: str, sized: Window
) -> None:
    checked = 0
    for rel in _pages(sample_site):
        page = sized.page(served + rel)
        assert page.evaluate(SPLIT_WORDS) == [], rel
        checked += len(page.query_selector_all("th"))
    assert checked > 10  # the pages do have table headers


def test_nothing_is_wider_than_the_window(
    sample_site: dict[str, Any], served: str, sized: Window
) -> None:
    for rel in _pages(sample_site):
        page = sized.page(served + rel)
        found = page.evaluate(OVERFLOW)
        assert found["page"] <= 0, (rel, found)
        assert found["cut"] == [], (rel, found)


def test_a_long_code_line_scrolls_in_its_box(served: str, sized: Window) -> None:
    page = sized.page(served + "install/index.html")
    box = page.query_selector("#out-vscode").evaluate_handle("e => e.closest('pre')")
    width = box.evaluate("e => [e.scrollWidth, e.clientWidth, getComputedStyle(e).overflowX]")
    assert width[0] > width[1] and width[2] == "auto"  # a long deeplink, scrollable


def test_report_dates_are_readable_times(
    sample_site: dict[str, Any], served: str, sized: Window
) -> None:
    shown = 0
    for rel in _pages(sample_site):
        if not rel.startswith("reports/"):
            continue
        page = sized.page(served + rel)
        for time in page.query_selector_all("time[datetime]"):
            text = time.text_content() or ""
            assert "T" not in text.split(",")[0] and text.endswith("UTC"), (rel, text)
            shown += 1
        body = page.text_content("main") or ""
        assert ":00Z" not in body, rel  # no raw ISO stamp left in the text
    assert shown > 0


def test_install_form_controls_are_full_size_and_styled(served: str, sized: Window) -> None:
    page = sized.page(served + "install/index.html")
    for selector in ("#install-command", "#install-name", "#install-env", "#install-path",
                     "#install-launcher", "button[type=submit]"):  # fmt: skip
        box = page.query_selector(selector).bounding_box()
        style = page.eval_on_selector(
            selector,
            "e => { const s = getComputedStyle(e); return [s.fontSize, s.borderTopWidth,"
            " s.borderTopStyle, s.paddingTop]; }",
        )
        assert box["height"] >= 36, (selector, box)  # a comfortable target
        assert float(style[0].removesuffix("px")) >= 16, (selector, style)
        assert style[2] == "solid" and float(style[3].removesuffix("px")) >= 4, (selector, style)
    command = page.query_selector("#install-command").bounding_box()
    main = page.query_selector("main").bounding_box()
    assert command["width"] >= min(main["width"] - 40, 600)  # the command field is wide
