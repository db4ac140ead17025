"""The JSONC span editor: values read right, edits touch only their own span."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolpin.clients import jsonc
from toolpin.clients.jsonc import JSONCError

SAMPLE = """// top comment
{
  /* block */ "servers": {
    "a": {"command": "npx", "args": ["-y", "pkg",], // trailing comma
    },
  },
  "n": [1, 2.5, -3e2, true, false, null, "\\u00e9"],
}
"""


def test_parse_sample() -> None:
    root = jsonc.parse(SAMPLE)
    assert root.value == {
        "servers": {"a": {"command": "npx", "args": ["-y", "pkg"]}},
        "n": [1, 2.5, -300.0, True, False, None, "é"],
    }
    node = jsonc.find(root, ("servers", "a", "args", 1))
    assert node is not None and SAMPLE[node.start : node.end] == '"pkg"'
    assert jsonc.find(root, ("servers", "zz")) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1, "a": 2}', "repeated member name"),
        ('{"a": ', "unexpected end"),
        ('{"a" 1}', "expected ':'"),
        ('{"a": 1 "b": 2}', "expected ',' or '}'"),
        ('{"a": "x\ny"}', "line break inside a string"),
        ("{'a': 1}", "unexpected character"),
        ('{"a": 1} x', "unexpected character"),
        ('{"a": 1} {}', "after the value"),
        ("/* never closed", "unterminated comment"),
        ('{"a": "\\x"}', "bad string"),
        ("[" * 300, "nested too deeply"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(JSONCError, match=message):
        jsonc.parse(text)


def test_error_position() -> None:
    with pytest.raises(JSONCError, match="line 3, column 3"):
        jsonc.parse('{\n "a": 1,\n  ?}')


def test_edits_keep_everything_else() -> None:
    root = jsonc.parse(SAMPLE)
    a = jsonc.find(root, ("servers", "a"))
    assert a is not None
    out = jsonc.insert_member(SAMPLE, a, "env", '{"K": "v"}', after="command")
    assert '"command": "npx", "env": {"K": "v"}, "args"' in out
    assert jsonc.parse(out).value["servers"]["a"]["env"] == {"K": "v"}  # type: ignore[index]
    again = jsonc.find(jsonc.parse(out), ("servers", "a"))
    assert again is not None
    assert jsonc.delete_member(out, again, "env") == SAMPLE


def test_crlf_and_indent_are_copied() -> None:
    text = '{\r\n    "a": 1,\r\n    "b": [\r\n        "x"\r\n    ]\r\n}\r\n'
    root = jsonc.parse(text)
    out = jsonc.insert_member(text, root, "c", "true")
    assert (
        out == '{\r\n    "a": 1,\r\n    "b": [\r\n        "x"\r\n    ],\r\n    "c": true\r\n}\r\n'
    )
    b = jsonc.find(jsonc.parse(out), ("b",))
    assert b is not None
    out2 = jsonc.insert_items(out, b, 0, ['"w"', '"v"'])
    assert '"b": [\r\n        "w",\r\n        "v",\r\n        "x"\r\n    ]' in out2
    b2 = jsonc.find(jsonc.parse(out2), ("b",))
    assert b2 is not None
    assert jsonc.delete_items(out2, b2, 0, 2) == out
    assert jsonc.delete_member(out, jsonc.parse(out), "c") == text


# ---- property tests: random documents, random formatting, random edits --------------

KEYS = st.text(alphabet='abcé/\\"x\u2028', min_size=1, max_size=4)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=5),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=8,
)
GAPS = st.sampled_from(["", " ", "\n  ", "\r\n\t", " /* c */ ", " // c\n", "\n// line\n  "])


def render(value: Any, draw: Any, nl: str) -> str:
    """``value`` as JSONC with random spacing, comments and trailing commas."""

    def gap() -> str:
        return str(draw(GAPS)).replace("\n", nl).replace("\r\r", "\r")

    if isinstance(value, dict):
        parts = [
            f"{gap()}{json.dumps(k)}{gap()}:{gap()}{render(v, draw, nl)}{gap()}"
            for k, v in value.items()
        ]
        trailing = "," if parts and draw(st.booleans()) else ""
        return "{" + ",".join(parts) + trailing + gap() + "}"
    if isinstance(value, list):
        parts = [f"{gap()}{render(v, draw, nl)}{gap()}" for v in value]
        trailing = "," if parts and draw(st.booleans()) else ""
        return "[" + ",".join(parts) + trailing + gap() + "]"
    return json.dumps(value, ensure_ascii=draw(st.booleans()))


def containers(
    node: jsonc.Node, path: tuple[str | int, ...] = ()
) -> list[tuple[tuple[str | int, ...], jsonc.Node]]:
    out = [(path, node)] if node.kind in ("object", "array") else []
    for m in node.members:
        out += containers(m.value, (*path, m.key))
    for i, item in enumerate(node.items):
        out += containers(item, (*path, i))
    return out


def get(value: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(KEYS, VALUES, min_size=1, max_size=4),
    st.sampled_from(["\n", "\r\n"]),
    st.data(),
)
def test_edit_round_trip(value: dict[str, Any], nl: str, data: st.DataObject) -> None:
    text = "// head" + nl + render(value, data.draw, nl) + nl
    root = jsonc.parse(text)
    assert root.value == value
    path, node = data.draw(st.sampled_from(containers(root)))
    expected = json.loads(json.dumps(value))
    target = get(expected, path)
    new_value = data.draw(VALUES)
    if node.kind == "object":
        key = data.draw(KEYS.filter(lambda k: k not in target))
        after = data.draw(st.sampled_from([None, *target])) if target else None
        out = jsonc.insert_member(text, node, key, jsonc.dumps(new_value), after=after)
        target[key] = new_value
        assert jsonc.parse(out).value == expected
        # the inverse edit gives back the original bytes
        back = jsonc.find(jsonc.parse(out), path)
        assert back is not None and jsonc.delete_member(out, back, key) == text
    else:
        index = data.draw(st.integers(0, len(target)))
        count = data.draw(st.integers(1, 3))
        new_items = [data.draw(SCALARS) for _ in range(count)]
        out = jsonc.insert_items(text, node, index, [jsonc.dumps(v) for v in new_items])
        target[index:index] = new_items
        assert jsonc.parse(out).value == expected
        back = jsonc.find(jsonc.parse(out), path)
        assert back is not None
        if node.items:
            assert jsonc.delete_items(out, back, index, index + count) == text
    # every byte before the container and after it is unchanged
    assert out[: node.start] == text[: node.start]
    assert out[len(out) - (len(text) - node.end) :] == text[node.end :]


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(KEYS, VALUES, min_size=1, max_size=4), st.data())
def test_replace_value(value: dict[str, Any], data: st.DataObject) -> None:
    text = render(value, data.draw, "\n")
    root = jsonc.parse(text)
    key = data.draw(st.sampled_from(sorted(value)))
    member = root.member(key)
    assert member is not None
    new_value = data.draw(VALUES)
    out = jsonc.replace_value(text, member.value, jsonc.dumps(new_value))
    assert jsonc.parse(out).value == {**value, key: new_value}
    assert out[: member.value.start] == text[: member.value.start]
    assert out[member.value.start + len(jsonc.dumps(new_value)) :] == text[member.value.end :]
