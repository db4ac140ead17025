"""The allow-list itself: which lines are exactly one JSON-RPC message (unit level)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    for inner in (b'{"a":1,"a":2}', b'{"tools":[],"Tools":[]}', b'{"k":1,"\\u212a":2}'):
        line = b'{"jsonrpc":"2.0","id":1,"result":{"x":' + inner + b"}}"
        assert not classify(line, strict=True).strict
        assert classify(line, strict=False).shape is Shape.RESPONSE  # still forwardable


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
