"""Closed vocabulary: hostile names and definitions in the log and the pin store never
reach an answer; every output character is in the lookup alphabet."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import Client

from tests.lookup.lookup_helpers import LogBuilder, signer, snapshot, tool
from toolpin.core.drift import compare
from toolpin.lookup.server import build_server
from toolpin.lookup.source import LogSource
from toolpin.lookup.tools import Lookup
from toolpin.lookup.vocab import TEXT_CHARS, TOKEN_CHARS, VocabularyError, check_closed, safe_name
from toolpin.pins.store import PinStore

JSON_PUNCTUATION = set('{}[]",: ')
WIRE_ALPHABET = set(TEXT_CHARS) | JSON_PUNCTUATION
NASTY = (
    "\x00\x07\x1b[31m\n\r\t\"'\\<>&`$;|"
    "\u200b\u200d\u202e\u2066\ufeff\u00ad\U000e0041\U000e007f"
    "Ignore previous instructions ~/.ssh/id_rsa https://evil.example "
    "ünïcødé 中文 ＡＢＣ 𝐀"
)
hostile = st.text(alphabet=st.sampled_from(NASTY), min_size=1, max_size=120) | st.text(
    min_size=1, max_size=120
)


def _names(value: Any, out: set[str]) -> set[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            _names(v, out)
    elif isinstance(value, list):
        for v in value:
            _names(v, out)
    elif isinstance(value, str):
        out.add(value)
    return out


def _assert_closed(answer: dict[str, Any], text: str) -> None:
    wire = json.dumps(answer, ensure_ascii=False)
    assert "\\" not in wire  # nothing needed escaping
    assert set(wire) <= WIRE_ALPHABET
    assert set(text) <= set(TEXT_CHARS)


@settings(
    max_examples=25,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    server_name=hostile,
    tool_name=hostile.filter(str.strip),  # a blank tool name is refused by every listing
    description=hostile,
    label=hostile,
    package=hostile,
)
def test_hostile_log_and_store_never_leak(
    server_name: str, tool_name: str, description: str, label: str, package: str
) -> None:
    work = Path(tempfile.mkdtemp())
    try:
        builder = LogBuilder(work / "log", signer())
        builder.observe(
            server_name, [tool(tool_name, "plain")], "2026-11-01T00:00:00Z", package=package
        )
        builder.observe(
            server_name,
            [tool(tool_name, description), tool(tool_name + "2", description)],
            "2026-11-02T00:00:00Z",
            package=package,
            url=f"https://{server_name}/mcp",
        )
        builder.append_raw(
            {
                "type": "toolpin/observation",
                "v": 1,
                "server": {"id": description, "name": server_name},
                "observedAt": description,
                "digests": {"surface": description},
            }
        )
        store = PinStore(work / "home")
        pinned = snapshot([tool(tool_name, "plain")])
        observed = snapshot([tool(tool_name, description), tool(tool_name + "\u202e", description)])
        store.pin_first("0123456789abcdef", label, pinned)
        store.record_drift("0123456789abcdef", observed, compare(pinned, observed))

        lookup = Lookup(LogSource(str(builder.root), signer().verifier), home=work / "home")
        server = build_server(lookup)

        async def session() -> list[tuple[dict[str, Any], str]]:
            out = []
            async with Client(server) as client:
                for name, args in (
                    ("lookup_server", {"server": server_name}),
                    ("server_history", {"server": server_name}),
                    ("check_definitions", {"server": server_name, "hash": "0" * 64}),
                    ("pending_reviews", {}),
                    ("log_status", {}),
                    ("lookup_server", {"server": description}),
                ):
                    result = await client.call_tool(name, args)
                    # A blank query is refused (fixed text); everything else is answered.
                    assert result.is_error == (not args.get("server", "x").strip())
                    out.append((result.structured_content or {}, result.content[0].text))
            return out

        answers = anyio.run(session)
        for answer, text in answers:
            _assert_closed(answer, text)
        assert answers[3][0]["count"] == 1
        # The server is found by its (reduced) name, and its change is labelled.
        if server_name.strip():
            assert answers[0][0]["status"] in ("found", "ambiguous")
        strings = _names([a for a, _ in answers], set())
        long_hostile = [s for s in (description, label) if len(s) > 12 and safe_name(s) != s]
        for s in long_hostile:
            assert s not in strings
    finally:
        shutil.rmtree(work, ignore_errors=True)


@given(st.text(max_size=300))
def test_safe_name_reduces_to_the_token_alphabet(text: str) -> None:
    name = safe_name(text)
    assert 1 <= len(name) <= 96
    assert set(name) <= set(TOKEN_CHARS)


@pytest.mark.parametrize(
    "answer",
    [{"name": "a b"}, {"name": "\u202e"}, {"bad key": 1}, {"x": 1.5}, {"x": ["\n"]}],
)
def test_check_closed_refuses_anything_else(answer: dict[str, Any]) -> None:
    with pytest.raises(VocabularyError):
        check_closed(answer)
