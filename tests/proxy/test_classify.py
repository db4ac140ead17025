"""The allow-list itself: which lines are exactly one JSON-RPC message (unit level)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolpin.core.gofold import same_field
from toolpin.proxy.classify import OPAQUE, Shape, Unclassified, classify, validate

ACCEPTED = {
    b'{"jsonrpc":"2.0","id":1,"result":{}}': (Shape.RESPONSE, 1),
    b'{"result":{"a":1},"jsonrpc":"2.0","id":"x"}': (Shape.RESPONSE, "x"),
    b' { "jsonrpc" : "2.0" , "id" : 7 , "result" : { } } \r': (Shape.RESPONSE, 7),
    b'{"jsonrpc":"2.0","id":1,"res\\u0075lt":{}}': (Shape.RESPONSE, 1),
    b'{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"m","data":[1]}}': (Shape.RESPONSE, 2),
    b'{"jsonrpc":"2.0","id":"r","method":"ping"}': (Shape.REQUEST, "r"),
    b'{"jsonrpc":"2.0","method":"notifications/x","params":{}}': (Shape.NOTIFICATION, None),
    b'{"jsonrpc":"2.0","id":1.5,"result":{}}': (Shape.RESPONSE, 1.5),
}

REFUSED = {
    b'{"jsonrpc":"2.0","id":1,"result":{},"method":null}': "also has a method member",
    b'{"jsonrpc":"2.0","id":1,"result":{},"Result":{}}': "exactly jsonrpc, id and result",
    b'{"jsonrpc":"2.0","id":1,"result":{},"result":{}}': "repeated top-level member",
    b'{"jsonrpc":"2.0","id":1,"result":{}}{"jsonrpc":"2.0","id":1,"result":{}}': "more than one",
    b'{"jsonrpc":"2.0","id":1,"result":{}}\r{"jsonrpc":"2.0","id":1,"result":{}}': "carriage",
    b'{"jsonrpc":"2.0","id":1,"result":': "not exactly one JSON value",
    b'[{"jsonrpc":"2.0","id":1,"result":{}}]': "batch",
    b'{"jsonrpc":"1.0","id":1,"result":{}}': "not JSON-RPC 2.0",
    b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}': "invalid id",
    b'{"jsonrpc":"2.0","id":true,"result":{}}': "invalid id",
    b'{"jsonrpc":"2.0","id":1,"result":[]}': "result is not an object",
    b'{"jsonrpc":"2.0","id":NaN,"result":{}}': "not JSON",
    b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"result":{}}': "not exactly one JSON value",
    b'{"jsonrpc":"2.0","id":1,"result":{"a":"\xff"}}': "not UTF-8",
    b'{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}': "malformed error",
    b'{"jsonrpc":"2.0","id":1}': "neither",
}


@pytest.mark.parametrize("line", sorted(ACCEPTED))
def test_accepted(line: bytes) -> None:
    msg = classify(line + b"\n")
    assert (msg.shape, msg.id) == ACCEPTED[line]


@pytest.mark.parametrize("line", sorted(REFUSED))
def test_refused(line: bytes) -> None:
    with pytest.raises(Unclassified) as caught:
        classify(line + b"\n")
    assert REFUSED[line] in caught.value.reason


def test_numbers_of_any_length_and_nesting_of_any_depth() -> None:
    big = b'{"jsonrpc":"2.0","id":1,"result":{"n":' + b"7" * 100_000 + b"}}"
    deep = b'{"jsonrpc":"2.0","id":1,"result":{"n":' + b"[" * 200_000 + b"]" * 200_000 + b"}}"
    for line in (big, deep):
        msg = classify(line, strict=True)
        assert msg.shape is Shape.RESPONSE and msg.id == 1
        assert msg.result is OPAQUE and not msg.strict  # valid, but never checkable
    with pytest.raises(Unclassified):
        classify(deep[:-1])  # one bracket short: half a value


def test_strict_reading_refuses_repeated_and_case_folded_names() -> None:
    refused = {
        # a repeated name, wherever it stands
        b'{"x":{"a":1,"a":2}}': "a member name is repeated in one object, at result.(member 1)",
        b'{"tools":[{"name":"t","inputSchema":{"default":{"k":1,"k":2}}}]}': (
            "a member name is repeated in one object, at result.tools[0].inputSchema.default"
        ),
        # names a Go client reads into one struct field
        b'{"tools":[],"Tools":[]}': "takes for one field, at result",
        b'{"tasks":{},"tas\\u212as":{}}': "takes for one field, at result",  # Kelvin sign
        b'{"tools":[{"name":"a","Name":"b"}]}': "takes for one field, at result.tools[0]",
        b'{"tools":[{"name":"a","inputSchema":{"type":"object","TYPE":"x"}}]}': (
            "takes for one field, at result.tools[0].inputSchema"
        ),
        b'{"tools":[{"name":"t","t\\u0131tle":"x","title":"y"}]}': "at result.tools[0]",
        b'{"tools":[{"name":"\\ud83d"}]}': "unpaired surrogate escape",
        b'{"n":1e400}': "a number too large for a double",
    }
    for inner, reason in refused.items():
        line = b'{"jsonrpc":"2.0","id":1,"result":' + inner + b"}"
        msg = classify(line, strict=True)
        assert not msg.strict, inner
        assert msg.unfit is not None and reason in msg.unfit, (inner, msg.unfit)
        assert classify(line, strict=False).shape is Shape.RESPONSE  # still forwardable


def test_strict_reading_accepts_names_that_are_data() -> None:
    accepted = (
        # free maps and data: property names, defaults, examples, enums, _meta
        b'{"tools":[{"name":"t","inputSchema":{"type":"object","properties":'
        b'{"ID":{},"id":{},"mm":{},"Mm":{},"strasse":{},"stra\xc3\x9fe":{}}}}]}',
        b'{"tools":[{"name":"t","inputSchema":{"default":{"K":1,"k":2},'
        b'"examples":[{"A":1,"a":2}],"enum":[{"B":1,"b":2}],"$defs":{"X":{},"x":{}}}}]}',
        b'{"tools":[{"name":"t","_meta":{"Key":1,"key":2}}],"_meta":{"A":1,"a":2}}',
        # names no struct has: a Go client ignores both
        b'{"tools":[{"name":"t","ID":1,"id":2,"x-Vendor":{"Type":1,"type":2}}]}',
        # escapes every encoder writes: surrogate pairs in either case, a backslash before u
        b'{"tools":[{"name":"\\ud83d\\ude00","description":"\\uD83D\\uDE00 C:\\\\users'
        b'\\\\udev \\\\ud800","inputSchema":{"pattern":"\\\\u[0-9a-f]{4}"}}]}',
    )
    for inner in accepted:
        line = b'{"jsonrpc":"2.0","id":1,"result":' + inner + b"}"
        msg = classify(line, strict=True)
        assert msg.strict and msg.unfit is None, (inner, msg.unfit)
        assert msg.result == json.loads(inner)


def test_error_objects_with_extra_members_are_answers() -> None:
    js_error = b'{"code":-32603,"message":"boom","name":"Error","stack":"Error: boom\\n at x"}'
    msg = classify(b'{"jsonrpc":"2.0","id":3,"error":' + js_error + b"}")
    assert msg.shape is Shape.RESPONSE and msg.error["stack"].startswith("Error")
    for twin in (b'"Code":1', b'"MESSAGE":"x"', b'"Data":{}'):
        line = b'{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m",' + twin + b"}}"
        with pytest.raises(Unclassified, match="takes for code, message or data"):
            classify(line)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_the_limit_free_validator_agrees_with_json(value: object) -> None:
    text = json.dumps({"v": value})
    members = validate(text)
    assert members is not None and set(members) == {"v"}


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    ),
    st.integers(min_value=0),
)
def test_the_limit_free_validator_refuses_exactly_what_json_refuses(
    value: object, cut: int
) -> None:
    text = json.dumps({"v": value})
    text = text[: cut % (len(text) + 1)] if text else text
    try:
        json.loads(text)
        ok = text.startswith("{")
    except ValueError:
        ok = False
    if ok:
        assert validate(text) is not None
    else:
        with pytest.raises(Unclassified):
            validate(text)


_UPPER_HEX = re.compile(r"(\\\\)|\\u([0-9a-f]{4})")
"""A ``\\uXXXX`` escape (an escaped backslash is skipped whole)."""
_ANY_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
"""Strings from all of Unicode (astral planes, tags, combining marks), no lone surrogate."""


def _no_twins(names: list[str]) -> bool:
    return not any(same_field(a, b) for i, a in enumerate(names) for b in names[i + 1 :])


_data = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "name": _ANY_TEXT,
                "description": _ANY_TEXT,
                "inputSchema": st.fixed_dictionaries(
                    {
                        "type": st.just("object"),
                        "properties": st.dictionaries(_ANY_TEXT, _data, max_size=5),
                        "default": st.dictionaries(_ANY_TEXT, _data, max_size=4),
                    }
                ),
                "_meta": st.dictionaries(_ANY_TEXT, _data, max_size=4),
            }
        ),
        max_size=4,
    ),
    st.dictionaries(_ANY_TEXT, _data, max_size=3).filter(lambda d: _no_twins(list(d))),
    st.booleans(),
)
def test_every_encoding_of_a_valid_listing_is_fit_to_check(
    tools: list[dict[str, object]], extra: dict[str, object], ascii_only: bool
) -> None:
    # free names (properties, default, _meta) may be case twins of anything; the tool's
    # own members get extra names that fold onto nothing of one another
    for t in tools:
        t.update({k: v for k, v in extra.items() if _no_twins([*t, k])})
    result = {"tools": tools}
    escaped = json.dumps(result, ensure_ascii=True)
    for text in (
        json.dumps(result, ensure_ascii=ascii_only),
        json.dumps(result, ensure_ascii=True, separators=(" , ", " : ")),
        _UPPER_HEX.sub(lambda m: m.group(1) or "\\u" + m.group(2).upper(), escaped),
    ):
        line = ('{"jsonrpc":"2.0","id":1,"result":' + text + "}").encode()
        msg = classify(line, strict=True)
        assert msg.strict, msg.unfit
        assert msg.result == result
