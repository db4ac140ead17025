"""export_from_bytes (parse and hash in one pass) gives exactly the export of parse_json +
snapshot_from_export, or None, never a different answer; and None for every document
the strict path refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolpin.core.canonical import EXPORT_DEPTH, parse_json
from toolpin.core.snapshot import Export, export_from_bytes, snapshot_from_export
from toolpin.errors import JSONError, ListingError

BENCH = Path(__file__).resolve().parents[1] / "data" / "vectors" / "bench-tools-1000.json"


def _classic(documents: list[bytes]) -> Export | Exception:
    try:
        docs = [parse_json(d, allow_bom=True, max_depth=EXPORT_DEPTH) for d in documents]
        return snapshot_from_export(docs, paged=True)
    except (JSONError, ListingError) as exc:
        return exc


def _typed(value: Any) -> Any:
    """The value with each number's type spelled out (1 == 1.0 in Python)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (type(value).__name__, repr(value))
    return value


def _same(documents: list[bytes]) -> Export | None:
    fast = export_from_bytes(documents, allow_bom=True)
    classic = _classic(documents)
    if fast is None:
        return None
    assert isinstance(classic, Export), classic
    assert fast == classic
    for listing in fast.snapshot.listings():
        other = classic.snapshot.listing(listing.kind)
        assert other is not None and listing.set_hash == other.set_hash
        for mine, theirs in zip(listing.items, other.items, strict=True):
            assert (mine.key, mine.hash) == (theirs.key, theirs.hash)
            assert _typed(mine.value) == _typed(theirs.value)
    return fast


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.sampled_from([0.0, -0.0, 1.0, 1.5, 1e15, 1e16, 1e21, 2.5e-7, 2.0**53, 2.0**53 + 2]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.sampled_from('ab"\\[]{}:,é\u2028\U0001f600\ue000\n\x01'), max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(alphabet='abé["\\', max_size=3), inner, max_size=4),
    ),
    max_leaves=20,
)
tools = st.lists(
    st.fixed_dictionaries(
        {"name": st.text(alphabet="abc_é", min_size=1, max_size=4)},
        optional={
            "description": st.text(max_size=10),
            "inputSchema": st.dictionaries(st.text(max_size=3), values, max_size=3),
            "annotations": st.dictionaries(st.text(max_size=3), values, max_size=2),
            "extra": values,
        },
    ),
    max_size=5,
)
pages = st.one_of(
    tools,
    st.fixed_dictionaries({"tools": tools}, optional={"other": values, "nextCursor": st.text()}),
    st.fixed_dictionaries(
        {"result": st.fixed_dictionaries({"tools": tools}, optional={"prompts": tools})},
        optional={"jsonrpc": st.just("2.0"), "id": values},
    ),
)


def _spell(value: Any, how: int) -> bytes:
    if how == 0:
        return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if how == 1:
        return json.dumps(value).encode()
    return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8", "surrogatepass")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pages, st.integers(0, 2), st.integers(0, 5))
def test_one_pass_is_the_strict_path(page: Any, how: int, fault: int) -> None:
    data = _spell(page, how)
    if fault == 1:  # a repeated member name in the first object, if any
        data = data.replace(b"{", b'{"name": "x", "name": "x", ', 1).replace(b", }", b"}")
    elif fault == 2:  # a repeated name deeper, inside a definition
        data = data.replace(b'"name"', b'"name": 1, "name"', 1)
    elif fault == 3:
        data = b"\xef\xbb\xbf" + data
    elif fault == 4:
        data = data.replace(b"[", b"[" * 130, 1)  # too deep, or not JSON at all
    elif fault == 5:
        data = data.replace(b'"', b'"\\ud800', 1)  # a lone surrogate escape
    fast = _same([data])
    if isinstance(_classic([data]), Exception):
        assert fast is None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pages, min_size=1, max_size=3))
def test_pages_in_one_pass_are_the_strict_path(many: list[Any]) -> None:
    _same([_spell(p, 0) for p in many])


def test_a_large_listing_takes_the_one_pass() -> None:
    assert _same([BENCH.read_bytes()]) is not None


@pytest.mark.parametrize(
    ("document", "why"),
    [
        (b'[{"name": "a", "x": 1.0}]', "an integral double in a definition"),
        (b'[{"name": "a", "x": 1e400}]', "a number too large"),
        (b'[{"name": "a", "x": 9007199254740993}]', "an integer beyond 2^53"),
        (b'[{"name": "a", "name": "b"}]', "a repeated name"),
        (b'{"tools": [], "tools": []}', "a repeated name outside the definitions"),
        (b'[{"name": "a", "s": "\\ud800"}]', "a lone surrogate"),
        (b'[{"name": "a"}, {"name": "a"}]', "a repeated tool"),
        (b'{"tools": {}}', "tools not an array"),
        (b"[" * 127 + b"]" * 127, "a tool that is not an object"),
        (b'[{"name": "a", "x": ' + b"[" * 128 + b"]" * 128 + b"}]", "nested too deep"),
        (b'{"result": {"tools": [{"name": "a", "x": ' + b"[" * 128 + b"]" * 128 + b"}]}}", "deep"),
    ],
)
def test_none_where_the_strict_path_must_decide(document: bytes, why: str) -> None:
    assert export_from_bytes([document]) is None, why


def test_the_deepest_nesting_allowed_is_the_same() -> None:
    # 128 levels counted from the definition itself (the tool object is level 1), however
    # the document wraps it: the proxy counts the same way (docs/proxy.md)
    inner = b"[" * 127 + b"]" * 127
    for head, tail in ((b"[", b"]"), (b'{"result": {"tools": [', b"]}}")):
        document = head + b'{"name": "a", "x": ' + inner + b"}" + tail
        assert _same([document]) is not None
        deeper = head + b'{"name": "a", "x": [' + inner + b"]}" + tail
        assert export_from_bytes([deeper]) is None
        assert isinstance(_classic([deeper]), (JSONError, ListingError))


def test_numbers_outside_the_definitions_keep_the_one_pass() -> None:
    # outside the definition arrays numbers are settled on the value, as parse_json does;
    # only the definitions' own numbers must be canonical as written
    document = b'{"id": 1.0, "big": 9007199254740993, "tools": [{"name": "a", "n": 2}]}'
    assert _same([document]) is not None
