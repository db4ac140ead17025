"""Badges, feeds and the API of a built site."""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import feedparser
import jsonschema
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from toolpin.site.api import SCHEMAS
from toolpin.site.badge import (
    AMBER,
    CLAIM_WORDS,
    GREEN,
    GREY,
    RED,
    badge_for_unverified,
    badge_state,
    render_badge,
)
from toolpin.site.model import ServerHistory, Version

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


def _version(index: int, at: str, last_good: str | None = None) -> Version:
    return Version(
        index=index, leaf_hash="0" * 64, observed_at=at, last_good_look=last_good,
        surface="1" * 64, counts={"tools": 1}, digests={}, blob=None, previous=None, name="x",
        source="registry", transport="stdio", url=None, package=None, server_info=None,
        era=None, protocol_version=None,
    )  # fmt: skip


def _history(*versions: Version, last_ok: str | None = None) -> ServerHistory:
    history = ServerHistory("0123456789abcdef", list(versions))
    history.last_ok = last_ok or versions[-1].observed_at
    return history


BADGE_CASES = [
    # (versions, last good look, message, colour)
    ([("2026-09-01T03:00:00Z", None)], "2026-12-01T03:00:00Z", "unchanged 91d · 1 Dec", GREEN),
    ([("2026-09-01T03:00:00Z", None)], "2026-11-27T03:00:00Z", "last checked 27 Nov", GREY),
    ([("2025-09-04T03:00:00Z", None)], "2025-09-04T03:00:00Z", "last checked 4 Sep 2025", GREY),
    ([("2026-12-01T02:00:00Z", None)], None, "first recorded today · 1 Dec", GREEN),
    ([("2026-11-28T02:00:00Z", None)], "2026-12-01T02:00:00Z", "first recorded 28 Nov", GREEN),
    (
        [("2026-10-01T00:00:00Z", None), ("2026-12-01T01:00:00Z", "2026-11-30T23:00:00Z")],
        None,
        "changed today · 1 Dec",
        AMBER,
    ),
    (
        [("2026-10-01T00:00:00Z", None), ("2026-11-29T01:00:00Z", "2026-11-28T23:00:00Z")],
        "2026-12-01T01:00:00Z",
        "changed 29 Nov",
        AMBER,
    ),
    (
        [("2026-10-01T00:00:00Z", None), ("2026-11-30T01:00:00Z", "2026-09-04T23:00:00Z")],
        "2026-12-01T01:00:00Z",
        "changed since 4 Sep",
        AMBER,
    ),
    (
        [("2026-10-01T00:00:00Z", None), ("2026-11-01T01:00:00Z", "2026-10-31T01:00:00Z")],
        "2026-12-01T01:00:00Z",
        "unchanged 30d · 1 Dec",
        GREEN,
    ),
]


@pytest.mark.parametrize(("versions", "last_ok", "message", "color"), BADGE_CASES)
def test_every_badge_state_is_dated(
    versions: list[tuple[str, str | None]], last_ok: str | None, message: str, color: str
) -> None:
    history = _history(
        *(_version(i, at, lg) for i, (at, lg) in enumerate(versions)), last_ok=last_ok
    )
    badge = badge_state(history, NOW)
    assert (badge.message, badge.color) == (message, color)
    assert re.search(r"\d", badge.message)  # a date or a day count, or "today"
    assert not any(word in badge.message for word in CLAIM_WORDS)


def test_red_only_when_the_log_does_not_verify() -> None:
    colors = set()
    for versions, last_ok, _, _ in BADGE_CASES:
        history = _history(
            *(_version(i, a, g) for i, (a, g) in enumerate(versions)), last_ok=last_ok
        )
        colors.add(badge_state(history, NOW).color)
    assert RED not in colors
    assert badge_for_unverified().color == RED


def test_svg_and_endpoint_json_come_from_one_state() -> None:
    history = _history(_version(0, "2026-09-01T03:00:00Z"), last_ok="2026-12-01T03:00:00Z")
    badge = badge_state(history, NOW)
    svg, endpoint = render_badge(badge)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.get("aria-label") == root.find(f"{ns}title").text == badge.text  # type: ignore[union-attr]
    assert root.get("role") == "img"
    data = json.loads(endpoint)
    assert data["schemaVersion"] == 1 and data["label"] == "toolpin"
    assert data["message"] == badge.message and data["color"] == badge.color.lstrip("#")
    assert f"toolpin: {data['message']}" == badge.text


def test_the_server_page_shows_the_badge_text(sample_site: dict[str, Any]) -> None:
    out = sample_site["out"]
    for sid in (sample_site["ids"][k] for k in ("stable", "changed", "new")):
        badge = json.loads((out / "badge" / f"{sid}.json").read_text())
        page = (out / "servers" / f"{sid}.html").read_text()
        text = f"toolpin: {badge['message']}"
        assert f'<span id="badge-text">{text}</span>' in page
        svg = (out / "badge" / f"{sid}.svg").read_text()
        assert f"<title>{text}</title>" in svg


def _feeds(out: Path) -> list[Path]:
    return sorted([*out.glob("feed.atom"), *(out / "feed").rglob("*.atom")])


def test_feeds_parse_and_are_dated_by_their_last_entry(sample_site: dict[str, Any]) -> None:
    out = sample_site["out"]
    feeds = _feeds(out)
    assert out / "feed.atom" in feeds
    assert out / "feed" / "label" / "secrets.atom" in feeds
    for path in feeds:
        parsed = feedparser.parse(path.read_bytes())
        assert parsed.bozo == 0, (path, parsed.get("bozo_exception"))
        assert parsed.version == "atom10"
        updated = max(e.updated for e in parsed.entries)
        assert parsed.feed.updated == updated
        mirror = json.loads(path.with_suffix(".json").read_text())
        assert mirror["version"] == "https://jsonfeed.org/version/1.1"
        assert [i["id"] for i in mirror["items"]] == [e.id for e in parsed.entries]
    whole = feedparser.parse((out / "feed.atom").read_bytes())
    assert whole.feed.updated == "2026-11-30T04:00:00Z"  # the last shown entry, not the build
    titles = [e.title for e in whole.entries]
    assert "acme-weather: first recorded (2 tools)" in titles
    assert "files-plus: changed (1 changed, 1 added, 0 removed)" in titles
    origin = "log.example/toolpin-site-test"
    assert all(e.id.startswith(f"urn:toolpin:{origin}:") for e in whole.entries)
    assert all(re.fullmatch(r"urn:toolpin:.+:\d+:[0-9a-f]{64}", e.id) for e in whole.entries)


def test_feeds_carry_no_server_prose(sample_site: dict[str, Any]) -> None:
    for path in _feeds(sample_site["out"]):
        text = path.read_text()
        assert "Always include" not in text and "does things" not in text


def test_every_api_file_matches_its_schema(sample_site: dict[str, Any]) -> None:
    api = sample_site["out"] / "api" / "v1"
    pairs = [
        (api / "log.json", "log"),
        (api / "servers.json", "servers"),
        (api / "stats.json", "stats"),
    ]
    pairs += [(p, "server") for p in sorted((api / "servers").glob("*.json"))]
    assert len(pairs) == 3 + 4
    for path, name in pairs:
        schema = json.loads((api / "schema" / f"{name}.schema.json").read_text())
        assert schema == json.loads(json.dumps(SCHEMAS[name]))
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate(json.loads(path.read_text()), schema)
    openapi = json.loads((api / "openapi.json").read_text())
    assert openapi["openapi"].startswith("3.1")
    assert set(openapi["paths"]) == {
        "/log.json",
        "/servers.json",
        "/servers/{id}.json",
        "/stats.json",
        "/digests/index.json",
        "/digests/{prefix}.json",
    }
    stats = json.loads((api / "stats.json").read_text())
    assert stats["windows"]["24h"] == {"changes": 0, "serversChanged": 0, "serversNew": 0}
    assert stats["windows"]["7d"] == {"changes": 1, "serversChanged": 1, "serversNew": 1}
    assert stats["windows"]["30d"] == {"changes": 1, "serversChanged": 1, "serversNew": 1}


def test_the_api_holds_no_server_prose(sample_site: dict[str, Any]) -> None:
    for path in (sample_site["out"] / "api").rglob("*.json"):
        text = path.read_text()
        assert "Always include" not in text and "does things" not in text and "Read any" not in text


_REPORT_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=6)
    | st.sampled_from(["é", "\U0001f600", "\x7f", "a\u2028b", "</script>"])
)
_ASCII_KEYS = st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=4)
_REPORT_VALUES = st.recursive(
    _REPORT_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=4) | st.sampled_from(["é", "b", "a"]), inner, max_size=4)
    ),
    max_leaves=20,
)


@example({"month": "2026-11", "notes": ["a \U0001f600 é \x7f \u2028 → b"], "e": [1, "\U0010ffff"]})
@given(st.dictionaries(_ASCII_KEYS | st.text(max_size=4), _REPORT_VALUES, max_size=5))
def test_report_json_is_json_dumps_text(report: dict[str, Any]) -> None:
    # The orjson shortcut for a plain, all-ASCII report gives exactly json.dumps' text.
    from toolpin.site.reports import report_json

    assert report_json(report) == json.dumps(report, indent=2, ensure_ascii=True)
