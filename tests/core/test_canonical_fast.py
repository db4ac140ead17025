"""The orjson shortcuts of toolpin.core.canonical give exactly the strict answers.

``parse_json`` keeps orjson's value only when it is provably what the strict parser
returns, and ``canonical_many_parsed`` keeps orjson's bytes only when they are provably
RFC 8785; these tests compare both with the strict standard-library paths (the shortcut
switched off) on generated documents, hostile spellings and every refusal rule.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.test_canonical import VALUES, _js
from toolpin.core import canonical
from toolpin.core.canonical import canonical_bytes, canonical_many_parsed, parse_json
from toolpin.errors import JSONError


def _strict(data: bytes | str, **options: Any) -> Any:
    """parse_json with the orjson shortcut switched off (the strict parser alone)."""
    real = canonical._fast_parse
    canonical._fast_parse = lambda *a, **k: canonical._FALLBACK  # type: ignore[assignment]
    try:
        return _outcome(data, **options)
    finally:
        canonical._fast_parse = real  # type: ignore[assignment]


def _outcome(data: bytes | str, **options: Any) -> Any:
    try:
        return ("value", _typed(parse_json(data, **options)))
    except JSONError as exc:
        return ("error", exc.message)


def _typed(value: Any) -> Any:
    """The value with every scalar's type spelled out (1 and 1.0 differ)."""
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def _same(data: bytes | str, **options: Any) -> None:
    assert _outcome(data, **options) == _strict(data, **options), data


HOSTILE = [
    '{"a": 1, "a": 2}',
    '{"a": 1, "\\u0061": 2}',
    '[{"x": {"k": [], "k": {}}}]',
    '{"a": "\\"", "b": "\\\\", "c": "\\\\\\"", "d": "\\\\\\\\"}',
    '{"q\\"": 1, "q\\"": 2}',
    '{"a\\\\": 1, "a\\\\": 1}',
    '["\\\\", "\\"\\"", "\\/"]',
    "[NaN]",
    '{"x": -Infinity}',
    "[1e400]",
    "[-1e400]",
    "[" + "9" * 400 + "]",
    "[" + "1" * 5000 + "]",
    "[1.0, 1e0, 1E2, -0, -0.0, 0.5, 1e-7, 1.5e300]",
    "[9999999999999999, 9007199254740993, 18446744073709551616, -9223372036854775809]",
    "[123456789012345678901234567890, 1e16, 1e21, 12345678901234567.0]",
    '["\\ud800"]',
    '["\\udc00\\ud800"]',
    '["\\ud83d\\ude00", "\\ud83d"]',
    '{"\\udfff": 1}',
    "[1,]",
    "[01]",
    '{"a" 1}',
    "",
    "  ",
    "\ufeff[]",
    '"\t"',
    "[] x",
    "nul",
    "[" * 128 + "]" * 128,
    "[" * 129 + "]" * 129,
    '{"a":' * 128 + "1" + "}" * 128,
    '{"a":' * 129 + "1" + "}" * 129,
    "[" * 2000 + "]" * 2000,
    "1",
    "1.0",
    "9999999999999999",
    '"plain"',
    "true",
    "null",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_documents_get_the_strict_answer(text: str) -> None:
    _same(text)
    _same(text.encode("utf-8", "surrogatepass"))
    _same(text, allow_lone_surrogates=True)
    _same(text.encode("utf-8"), allow_bom=True, max_depth=3)


@pytest.mark.parametrize(
    "data",
    [b"\xef\xbb\xbf[1]", b'["\xff"]', b'["\xed\xa0\x80"]', b'["\xc0\xaf"]', b"[\x00]", b"\xef\xbb"],
)
def test_bytes_edge_cases(data: bytes) -> None:
    _same(data)
    _same(data, allow_bom=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES, rnd=st.randoms(use_true_random=False))
def test_generated_documents_get_the_strict_answer(value: Any, rnd: random.Random) -> None:
    text = json.dumps(value, ensure_ascii=rnd.random() < 0.5, indent=rnd.choice([None, 1]))
    _same(text)
    _same(text.encode("utf-8"))
    if isinstance(value, dict) and value:
        # the same document with its first member repeated: refused both ways
        key = json.dumps(next(iter(value)))
        repeated = text.replace("{", "{" + key + ": null, ", 1)
        _same(repeated)
        assert _outcome(repeated)[0] == "error"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(VALUES, max_size=6))
def test_canonical_many_parsed_is_rfc8785(values: list[Any]) -> None:
    parsed = [parse_json(json.dumps(v, ensure_ascii=False)) for v in values]
    assert canonical_many_parsed(parsed) == [rfc8785.dumps(_js(v)) for v in values]
    # values straight from another parser (Python numbers: 1.0, 2**60) too
    loaded = [json.loads(json.dumps(v)) for v in values]
    assert canonical_many_parsed(loaded) == [canonical_bytes(v) for v in loaded]


@pytest.mark.parametrize(
    "value",
    [
        1.0,
        [1.0],
        {"a": -0.0},
        [1e16, 1e21, 1e-7, 1e-6, 0.000001, 5e-324],
        [2**53 - 1, 2**53, 2**60, -(2**63)],
        {"\ue000": 1, "\U0001f600": 2},
        {"v": "1.0, 2e-3 and 3e+4 are text", "n": 1.5},
        ["\ud800"],
        {"deep": [[[[[[[[[[1]]]]]]]]]]},
    ],
)
def test_canonical_many_parsed_falls_back_where_orjson_differs(value: Any) -> None:
    assert canonical_many_parsed([value]) == [canonical_bytes(value)]
    assert canonical_many_parsed([value, {"x": 1}]) == [canonical_bytes(value), b'{"x":1}']
