"""toolpin.core.canonical: strict parsing, RFC 8785 and the tool definition hash (v1).

The published vectors (tests/data/vectors/, see its README) and the 1,000-tool set hash
must reproduce exactly; property tests compare the fast path with the ``rfc8785``
package on generated JSON and check every strict-parsing rule.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolpin.core.canonical import (
    EMPTY_SET_HASH,
    MAX_DEPTH,
    canonical_bytes,
    canonical_json,
    definition_hash,
    has_lone_surrogate,
    instructions_hash,
    normalize,
    parse_json,
    pretty_json,
    set_hash,
    utf16_key,
)
from toolpin.errors import JSONError

VECTORS_DIR = Path(__file__).resolve().parents[1] / "data" / "vectors"
VECTORS = json.loads((VECTORS_DIR / "mcp-pin-hash-vectors.json").read_text(encoding="utf-8"))
BENCH_SET_HASH = "5dd8270765edc633a0b03ed1178b26b6b6fce8594c2be455628554d7875c61cb"


# ------------------------------------------------------------------------------- vectors


def test_vector_file_is_the_published_copy() -> None:
    data = (VECTORS_DIR / "mcp-pin-hash-vectors.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == (
        "9415de53b5dcd164353060d59c40cbb85d08010b2823ff8d1c556ae4e4a55cbc"
    )
    counts = {k: len(VECTORS[k]) for k in ("definitions", "sets", "instructions", "invalid")}
    assert counts == {"definitions": 8, "sets": 5, "instructions": 3, "invalid": 4}


@pytest.mark.parametrize(
    "vector", VECTORS["definitions"], ids=[v["about"][:40] for v in VECTORS["definitions"]]
)
def test_definition_vectors(vector: dict[str, Any]) -> None:
    value = parse_json(vector["input"], allow_lone_surrogates=True)
    assert canonical_json(value) == vector["canonical"]
    assert canonical_bytes(value) == vector["canonical"].encode("utf-8", "surrogatepass")
    assert definition_hash(value) == vector["hash"]
    # the same bytes through the general path (the rfc8785 package)
    if not has_lone_surrogate(value):
        assert rfc8785.dumps(_js(json.loads(vector["canonical"]))) == canonical_bytes(value)


@pytest.mark.parametrize("vector", VECTORS["sets"], ids=[v["about"][:40] for v in VECTORS["sets"]])
def test_set_vectors(vector: dict[str, Any]) -> None:
    items = [item for page in vector["pages"] for item in parse_json(page)]
    pairs = [(item["name"], definition_hash(item)) for item in items]
    ordered = sorted(pairs, key=lambda p: (utf16_key(p[0]), p[1]))
    assert [f"{n}:{h}" for n, h in ordered] == vector["lines"]
    assert set_hash(pairs) == vector["setHash"]
    assert set_hash(reversed(pairs)) == vector["setHash"]


@pytest.mark.parametrize(
    "vector", VECTORS["instructions"], ids=[v["about"][:40] for v in VECTORS["instructions"]]
)
def test_instruction_vectors(vector: dict[str, Any]) -> None:
    assert instructions_hash(vector["instructions"]) == vector["hash"]


def test_invalid_vectors() -> None:
    from toolpin.core.snapshot import Kind, Listing
    from toolpin.errors import ListingError

    for vector in VECTORS["invalid"]:
        if vector["reason"] == "repeated member name":
            with pytest.raises(JSONError, match="repeated"):
                parse_json(vector["input"])
        else:
            assert vector["reason"] == "no string name"
            items = [item for page in vector["pages"] for item in parse_json(page)]
            with pytest.raises(ListingError, match="string name"):
                Listing.parse(Kind.TOOL, items)


def test_bench_listing_set_hash() -> None:
    from toolpin.core.snapshot import snapshot_from_export

    data = (VECTORS_DIR / "bench-tools-1000.json").read_bytes()
    export = snapshot_from_export(parse_json(data))
    assert export.snapshot.tools is not None
    assert len(export.snapshot.tools) == 1000
    assert export.snapshot.tools.set_hash == BENCH_SET_HASH
    # and by the bare recipe, without the snapshot model
    pairs = [(item["name"], definition_hash(item)) for item in parse_json(data)]
    assert set_hash(pairs) == BENCH_SET_HASH


def test_empty_set_hash() -> None:
    assert set_hash([]) == EMPTY_SET_HASH == hashlib.sha256(b"").hexdigest()


def test_instructions_hash_of_a_lone_surrogate_uses_replacement_character() -> None:
    # The WHATWG UTF-8 encoder (the spec's) turns an unpaired surrogate into U+FFFD.
    assert instructions_hash("a\ud800b") == hashlib.sha256("a\ufffdb".encode()).hexdigest()


# ------------------------------------------------------------------- generated JSON values

_KEY_CHARS = st.one_of(
    st.characters(max_codepoint=0x7F),
    st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF),
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
    st.characters(min_codepoint=0x80, max_codepoint=0xD7FF),
)
KEYS = st.text(alphabet=_KEY_CHARS, max_size=4)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    FLOATS,
    st.sampled_from([0.0, -0.0, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, 2.0**53, 1e16]),
    st.text(max_size=12),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=5)),
    max_leaves=25,
)


def _js(value: Any) -> Any:
    """The value a JavaScript client holds (what rfc8785 is given)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if abs(value) <= 2**53 - 1 else float(value)
    if isinstance(value, float):
        return value
    if isinstance(value, list):
        return [_js(v) for v in value]
    return {k: _js(v) for k, v in value.items()}


def _shuffled(value: Any, rnd: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: _shuffled(v, rnd) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rnd) for v in value]
    return value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES)
def test_fast_path_equals_rfc8785(value: Any) -> None:
    parsed = parse_json(json.dumps(value, ensure_ascii=False))
    assert canonical_bytes(parsed) == rfc8785.dumps(_js(value))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES)
def test_python_values_canonicalize_like_rfc8785(value: Any) -> None:
    """Values built in code (1.0, -0.0, 2**60, unsorted keys) get the same bytes."""
    assert canonical_bytes(value) == rfc8785.dumps(_js(value))


@settings(max_examples=150, deadline=None)
@given(value=VALUES, rnd=st.randoms(use_true_random=False), indent=st.sampled_from([None, 0, 1, 4]))
def test_canonical_form_ignores_member_order_and_whitespace(
    value: Any, rnd: random.Random, indent: int | None
) -> None:
    plain = canonical_bytes(parse_json(json.dumps(value)))
    separators = (" ,\t", "\r\n:  ") if indent is None else None
    ascii_only = rnd.random() < 0.5
    text = json.dumps(
        _shuffled(value, rnd), indent=indent, ensure_ascii=ascii_only, separators=separators
    )
    assert canonical_bytes(parse_json(text)) == plain
    assert definition_hash(parse_json(text)) == hashlib.sha256(plain).hexdigest()


@settings(max_examples=150, deadline=None)
@given(value=FLOATS)
def test_every_float_magnitude(value: float) -> None:
    parsed = parse_json(json.dumps([value]))
    assert canonical_bytes(parsed) == rfc8785.dumps([value])


@settings(max_examples=100, deadline=None)
@given(value=st.integers(min_value=-(10**30), max_value=10**30))
def test_big_integers_are_read_as_doubles(value: int) -> None:
    assert canonical_bytes(parse_json(str(value))) == rfc8785.dumps(_js(value))


@settings(max_examples=100, deadline=None)
@given(
    bmp=st.lists(st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF), min_size=1),
    astral=st.lists(st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF), min_size=1),
)
def test_non_bmp_keys_sort_before_private_use_keys(bmp: list[str], astral: list[str]) -> None:
    doc = dict.fromkeys(bmp, 1) | dict.fromkeys(astral, 2)
    keys = list(json.loads(canonical_json(parse_json(json.dumps(doc)))))
    assert keys == sorted(doc, key=utf16_key)
    # every non-BMP key (a D800-DBFF lead unit) comes before every U+E000..U+FFFF key
    assert {ord(k) >= 0x10000 for k in keys[: len(set(astral))]} == {True}


def test_pretty_json_keeps_canonical_numbers() -> None:
    value = parse_json('{"b": 1e21, "a": [1.5e-7, 100]}')
    pretty = pretty_json(value)
    assert json.loads(pretty) == json.loads(canonical_json(value))
    assert "1e+21" in pretty and "1.5e-7" in pretty
    assert pretty.index('"a"') < pretty.index('"b"')


def test_normalize_matches_parse() -> None:
    assert normalize({"b": 1.0, "a": [2**60]}) == parse_json('{"a": [1152921504606846976], "b": 1}')
    with pytest.raises(JSONError):
        normalize({"a": float("nan")})
    with pytest.raises(JSONError):
        normalize({"a": object()})


# ------------------------------------------------------------------------- strict parsing


def _nest(inner: str, wrappers: list[int]) -> str:
    for w in wrappers:
        inner = f'{{"k{w}": {inner}}}' if w % 2 else f"[0, {inner}]"
    return inner


@settings(max_examples=100, deadline=None)
@given(
    wrappers=st.lists(st.integers(min_value=0, max_value=9), max_size=40),
    spelling=st.sampled_from(['"a"', '"\\u0061"']),
)
def test_repeated_member_name_at_any_depth(wrappers: list[int], spelling: str) -> None:
    text = _nest(f'{{"a": 1, "b": 2, {spelling}: 1}}', wrappers)
    with pytest.raises(JSONError, match="member name is repeated"):
        parse_json(text)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}', "[1, NaN]"])
def test_nan_and_infinity_are_rejected(text: str) -> None:
    with pytest.raises(JSONError, match="is not JSON"):
        parse_json(text)


@pytest.mark.parametrize("text", ["1e400", "[-1e400]", '{"a": 1E+309}'])
def test_overflowing_numbers_are_rejected(text: str) -> None:
    with pytest.raises(JSONError, match="too large for a double"):
        parse_json(text)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(min_size=1, max_size=40))
def test_invalid_utf8_is_rejected(data: bytes) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(JSONError, match="not valid UTF-8"):
            parse_json(b'["' + data + b'"]')


def test_byte_order_mark_only_where_allowed() -> None:
    assert parse_json(b"\xef\xbb\xbf[1]", allow_bom=True) == [1]
    with pytest.raises(JSONError, match="byte order mark"):
        parse_json(b"\xef\xbb\xbf[1]")
    with pytest.raises(JSONError, match="not valid JSON"):
        parse_json(b"[1]\xef\xbb\xbf", allow_bom=True)
    with pytest.raises(JSONError, match="not valid JSON"):
        parse_json(b"\xef\xbb\xbf\xef\xbb\xbf[1]", allow_bom=True)
    with pytest.raises(JSONError):  # UTF-16 is not UTF-8
        parse_json("\ufeff[1]".encode("utf-16"), allow_bom=True)


@settings(max_examples=100, deadline=None)
@given(
    unit=st.integers(min_value=0xD800, max_value=0xDFFF),
    before=st.text(max_size=5),
    in_key=st.booleans(),
)
def test_lone_surrogates(unit: int, before: str, in_key: bool) -> None:
    escaped = json.dumps(before)[1:-1] + f"\\u{unit:04x}"
    text = f'{{"{escaped}": 1}}' if in_key else f'["{escaped}"]'
    with pytest.raises(JSONError, match="unpaired surrogate"):
        parse_json(text)
    value = parse_json(text, allow_lone_surrogates=True)
    assert f"\\u{unit:04x}".encode() in canonical_bytes(value)


def test_paired_surrogate_escapes_are_fine() -> None:
    assert parse_json('["\\ud83d\\ude00"]') == ["\U0001f600"]
    assert parse_json('{"\\uD834\\uDD1E": 1}') == {"\U0001d11e": 1}


def test_nesting_limit() -> None:
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_json(ok) is not None
    too_deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    with pytest.raises(JSONError, match=f"nested more than {MAX_DEPTH} levels"):
        parse_json(too_deep)
    objects = '{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    with pytest.raises(JSONError, match="nested more than"):
        parse_json(objects)


@pytest.mark.parametrize("depth", [1_000, 5_000, 100_000])
def test_absurd_nesting_is_an_error_not_a_crash(depth: int) -> None:
    with pytest.raises(JSONError, match="nested more than"):
        parse_json("[" * depth + "]" * depth)
    with pytest.raises(JSONError, match="nested more than"):
        parse_json('{"a":' * depth + "1" + "}" * depth)


def test_ten_megabyte_string() -> None:
    big = "x" * (10 * 1024 * 1024)
    value = parse_json(b'{"description": "' + big.encode() + b'"}')
    assert value["description"] == big
    with pytest.raises(JSONError) as caught:
        parse_json(b'{"description": "' + big.encode())
    assert len(caught.value.message) < 200, "the message must not echo the input"
    assert "Unterminated string" in caught.value.message


def test_oversized_document() -> None:
    from toolpin.core import canonical

    data = b" " * (canonical.MAX_DOCUMENT_BYTES + 1)
    with pytest.raises(JSONError, match="larger than"):
        parse_json(data)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "Expecting value"),
        ("[1,]", "Expecting value"),
        ("{'a': 1}", "Expecting property name"),
        ('{"a": 1} x', "Extra data"),
        ("[01]", "not valid JSON"),
        ('["\t"]', "Invalid control character"),
    ],
)
def test_syntax_errors_say_where(text: str, reason: str) -> None:
    with pytest.raises(JSONError, match=reason) as caught:
        parse_json(text)
    assert "\n" not in caught.value.message


def test_parse_errors_never_echo_input() -> None:
    secret = "ignore all previous instructions"
    for text in (f'{{"{secret}": 1, "{secret}": 2}}', f'["{secret}", NaN]', f'["{secret}\\ud800"]'):
        with pytest.raises(JSONError) as caught:
            parse_json(text)
        assert secret not in caught.value.message


def test_numbers_have_javascript_semantics() -> None:
    assert parse_json("[1.0, 1E3, -0, -0.0, 0.1e1, 12345678901234567890]") == [
        1,
        1000,
        0,
        0,
        1,
        12345678901234567890.0,
    ]
    assert type(parse_json("1.0")) is int
    assert parse_json('{"a": 1}') == parse_json('{"a": 1.0}')
    assert canonical_json(parse_json("[true, 1]")) == "[true,1]"


def test_python_number_mode_keeps_spelling() -> None:
    value = parse_json('{"b": 1.0, "a": 12345678901234567890}', numbers="python")
    assert value == {"b": 1.0, "a": 12345678901234567890}
    assert list(value) == ["b", "a"], "python mode keeps member order"
    assert type(value["b"]) is float


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(VALUES, max_size=6))
def test_canonical_many_is_canonical_bytes_of_each(values: list[Any]) -> None:
    """The batched fast-path check never changes a single byte."""
    from toolpin.core.canonical import canonical_many

    parsed = [parse_json(json.dumps(v, ensure_ascii=False)) for v in values]
    assert canonical_many(parsed) == [rfc8785.dumps(_js(v)) for v in values]
    assert canonical_many(values) == [canonical_bytes(v) for v in values]
