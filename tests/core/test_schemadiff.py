"""Tests of toolpin.core.schemadiff: reference lines, every rule in both directions, $ref,
limits, and property tests over generated schemas."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from toolpin.core.schemadiff import Direction, SchemaFinding, diff_schema, finding_line

HERE = Path(__file__).parent
VECTORS = json.loads((HERE / "data" / "mtpc_schema_lines.json").read_text(encoding="utf-8"))
DIRECTIONS: tuple[Direction, ...] = ("input", "output")
REF_KINDS = {"ref_added", "ref_removed", "ref_retargeted"}


def lines(old: object, new: object, direction: Direction = "input", **kw: Any) -> list[str]:
    return [
        finding_line(f, direction=direction)
        for f in diff_schema(old, new, direction=direction, **kw)
    ]


def only(old: object, new: object, direction: Direction = "input", **kw: Any) -> SchemaFinding:
    found = diff_schema(old, new, direction=direction, **kw)
    assert len(found) == 1, found
    return found[0]


def pick(found: list[SchemaFinding], kind: str, path: str) -> SchemaFinding:
    matches = [f for f in found if f.kind == kind and f.path == path]
    assert len(matches) == 1, (kind, path, found)
    return matches[0]


def resolve_pointer(doc: object, pointer: str) -> bool:
    """True when the RFC 6901 pointer names a member of doc."""
    if pointer == "":
        return True
    current = doc
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict) and token in current:
            current = current[token]
        elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
            current = current[int(token)]
        else:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# mcp-tool-pin-check 0.2.2 compatibility: its exact lines (captured from the real package)


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: c["name"])
def test_reference_lines(case: dict[str, Any]) -> None:
    expected = case.get("toolpin", case["reference"])
    assert lines(case["old"], case["new"], case["direction"]) == expected


def test_reference_vectors_diverge_only_where_documented() -> None:
    diverging = [c for c in VECTORS["cases"] if "toolpin" in c]
    assert all(c["why"] and c["toolpin"] != c["reference"] for c in diverging)
    assert len(diverging) <= 8  # most lines are byte-identical to the reference


_REFERENCE = (
    os.environ.get("MTPC")
    or shutil.which("mcp-tool-pin-check")
    or ("/work/ref/venv/bin/mcp-tool-pin-check")
)


@pytest.mark.skipif(not Path(_REFERENCE).is_file(), reason="mcp-tool-pin-check not installed")
def test_stored_reference_lines_match_the_real_package() -> None:
    from tests.core import build_mtpc_vectors

    fresh = build_mtpc_vectors.run_reference(_REFERENCE)
    stored = {c["name"]: c["reference"] for c in VECTORS["cases"]}
    assert fresh == stored


# The reference's own tested widening rules, spelled out (research §7 / §12).


def test_reference_six_rules_exact_lines() -> None:
    base: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}
    added = copy.deepcopy(base)
    added["properties"]["limit"] = {"type": "integer"}
    assert lines(base, added) == ["[widened] property added: properties.limit (optional)"]
    assert lines({"required": ["query"]}, {}) == ["[widened] required removed: query"]
    assert lines(
        {"properties": {"status": {"enum": ["open"]}}},
        {"properties": {"status": {"enum": ["open", "archived"]}}},
    ) == ['[widened] enum loosened: properties.status.enum (added "archived")']
    assert lines(
        {"properties": {"q": {"maxLength": 5}}}, {"properties": {"q": {"maxLength": 10}}}
    ) == ["[widened] maxLength loosened: properties.q.maxLength (5 -> 10)"]
    assert lines({"properties": {"q": {"pattern": "^a"}}}, {"properties": {"q": {}}}) == [
        "[widened] pattern removed: properties.q.pattern"
    ]
    assert lines({"additionalProperties": False}, {}) == [
        "[widened] additionalProperties widened: additionalProperties (false -> absent)"
    ]
    assert lines({"additionalProperties": False}, {"additionalProperties": True}) == [
        "[widened] additionalProperties widened: additionalProperties (false -> true)"
    ]


def test_tighter_maxlength_is_not_widened() -> None:
    f = only({"properties": {"q": {"maxLength": 10}}}, {"properties": {"q": {"maxLength": 5}}})
    assert (f.kind, f.widened, f.detail) == ("maxLength_tightened", False, "10 -> 5")
    assert finding_line(f) == "maxLength tightened: properties.q.maxLength (10 -> 5)"


def test_new_required_property_is_not_widened_but_keeps_the_reference_line() -> None:
    old = {"type": "object", "properties": {}}
    new = {"type": "object", "properties": {"limit": {}}, "required": ["limit"]}
    found = diff_schema(old, new)
    added = pick(found, "property_added", "properties.limit")
    assert (added.widened, added.detail, added.cls) == (
        False,
        "required",
        "schema-unconstrained-added",
    )
    assert finding_line(added) == "property added: properties.limit"
    assert finding_line(pick(found, "required_added", "required")) == "required added: limit"


def test_output_enum_sentence_is_the_reference_one() -> None:
    f = only(
        {"properties": {"status": {"enum": ["ok"]}}},
        {"properties": {"status": {"enum": ["ok", "deleted"]}}},
        "output",
    )
    assert finding_line(f, direction="output") == (
        'output widened: properties.status.enum (added "deleted"); a new output enum value '
        "can break downstream exhaustive switches"
    )


def test_output_lines_for_other_findings() -> None:
    removed = only({"required": ["x"]}, {}, "output")
    assert finding_line(removed, direction="output") == "output widened: required removed: x"
    tightened = only({"enum": ["a", "b"]}, {"enum": ["a"]}, "output")
    assert finding_line(tightened, direction="output") == (
        'output changed: enum tightened: enum (removed "b")'
    )


# ---------------------------------------------------------------------------------------------
# One row per rule: (old, new, kind, path, widened for input, widened for output)

# data/schema_rules.jsonl: one row per rule, one line each:
# [name, old, new, kind, path, widened for input, widened for output]
RULES: list[tuple[str, object, object, str, str, bool, bool]] = [
    tuple(json.loads(line))
    for line in (HERE / "data" / "schema_rules.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
_COSMETIC_CLASS = {
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
}


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize(
    ("name", "old", "new", "kind", "path", "w_in", "w_out"), RULES, ids=[r[0] for r in RULES]
)
def test_rule(
    name: str,
    old: object,
    new: object,
    kind: str,
    path: str,
    w_in: bool,
    w_out: bool,
    direction: Direction,
) -> None:
    found = diff_schema(old, new, direction=direction)
    f = pick(found, kind, path)
    widened = w_in if direction == "input" else w_out
    assert f.widened is widened, f
    line = finding_line(f, direction=direction)
    if direction == "input":
        assert line.startswith("[widened] ") is widened
    else:
        assert line.startswith("output widened: " if widened else "output changed: ")
    if kind == "keyword_changed" and path in _COSMETIC_CLASS:
        assert f.cls == "schema-cosmetic-modified"
    # the reverse change is a finding too
    assert diff_schema(new, old, direction=direction)
    # and the whole diff never calls a pure tightening a widening
    if not widened and name not in {"property added required, open object"}:
        assert not any(x.widened for x in found if x.path == path), found


def test_rule_table_has_a_row_for_each_kind_family() -> None:
    kinds = {r[3] for r in RULES}
    for family in (
        "type_",
        "const_",
        "minimum_",
        "maximum_",
        "exclusiveM",
        "multipleOf_",
        "minLength_",
        "format_",
        "minItems_",
        "maxItems_",
        "uniqueItems_",
        "contains_",
        "minContains_",
        "maxContains_",
        "minProperties_",
        "maxProperties_",
        "propertyNames_",
        "dependentRequired_",
        "patternProperty_",
        "unevaluatedProperties_",
        "branch_",
        "not_",
        "ref_",
    ):
        assert any(k.startswith(family) for k in kinds), family


def test_classes() -> None:
    assert only({"type": "string"}, {"type": ["string", "null"]}).cls == "schema-type-broadened"
    assert only({"type": "number"}, {"type": "integer"}).cls == "schema-type-narrowed"
    assert only({"type": "string"}, {"type": "integer"}).cls == "schema-type-changed"
    assert only({"enum": [1]}, {"enum": [1, 2]}).cls == "schema-enum-widened"
    assert only({"enum": [1, 2]}, {"enum": [1]}).cls == "schema-enum-narrowed"
    assert only({"minimum": 1}, {"minimum": 0}).cls == "schema-constraint-relaxed"
    assert only({"minimum": 0}, {"minimum": 1}).cls == "schema-constraint-tightened"
    assert only({"additionalProperties": False}, {}).cls == "schema-additional-props-opened"
    assert only({}, {"additionalProperties": False}).cls == "schema-additional-props-closed"
    assert only({"required": ["a"]}, {}).cls == "schema-required-removed"
    assert only({}, {"required": ["a"]}).cls == "schema-required-unconstrained-added"
    with_prop = {"properties": {"a": {"type": "string"}}}
    assert (
        pick(
            diff_schema(with_prop, {**with_prop, "required": ["a"]}), "required_added", "required"
        ).cls
        == "schema-required-added"
    )
    assert only({}, {"properties": {"a": {"type": "string"}}}).cls == "schema-property-added"
    assert only({}, {"properties": {"a": {}}}).cls == "schema-unconstrained-added"
    assert only({"properties": {"a": {}}}, {}).cls == "schema-property-removed"
    assert only({"$schema": "a"}, {"$schema": "b"}).cls == "schema-version-migrated"
    assert only({"enum": [1, 2]}, {"enum": [2, 1]}).cls == "schema-cosmetic-modified"


# ---------------------------------------------------------------------------------------------
# Values: JavaScript number semantics, member order, representation


def test_number_semantics() -> None:
    assert diff_schema({"enum": [1], "maximum": 5}, {"enum": [1.0], "maximum": 5.0}) == []
    assert diff_schema({"const": 0}, {"const": -0.0}) == []
    assert diff_schema({"default": {"a": 1, "b": 2}}, {"default": {"b": 2, "a": 1}}) == []
    true_for_one = diff_schema({"enum": [1]}, {"enum": [True]})
    assert [f.kind for f in true_for_one] == ["enum_loosened", "enum_tightened"]
    assert only({"const": 1}, {"const": True}).kind == "const_changed"
    assert only({"maxLength": 1e3}, {"maxLength": 2000}).detail == "1000 -> 2000"


def test_every_representation_change_is_explained() -> None:
    # mcp-tool-pin-check reports these tools as changed with no reason at all
    assert only({"enum": ["a", "b"]}, {"enum": ["b", "a"]}).kind == "enum_reordered"
    assert only({"enum": ["a"]}, {"enum": ["a", "a"]}).kind == "enum_reordered"
    assert only({"required": ["a", "b"]}, {"required": ["b", "a"]}).kind == "required_reordered"
    assert only({"required": ["a"]}, {"required": ["a", "a"]}).kind == "keyword_changed"
    assert only({"type": ["string", "null"]}, {"type": ["null", "string"]}).kind == "type_restated"
    assert only({"type": "string"}, {"type": ["string"]}).kind == "type_restated"


def test_finding_records() -> None:
    f = only({"properties": {"a/b~c": {"enum": [1]}}}, {"properties": {"a/b~c": {"enum": [1, 2]}}})
    assert f == SchemaFinding(
        kind="enum_loosened",
        path="properties.a/b~c.enum",
        pointer="/properties/a~1b~0c/enum",
        cls="schema-enum-widened",
        widened=True,
        detail="added 2",
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.widened = False  # type: ignore[misc]
    assert (
        only({"anyOf": [{}, {"enum": [1]}]}, {"anyOf": [{}, {"enum": [1, 2]}]}).pointer
        == "/anyOf/1/enum"
    )


def test_order_is_the_reference_keyword_order_then_sorted() -> None:
    old = {
        "zeta": 1,
        "type": "string",
        "additionalProperties": False,
        "pattern": "a",
        "maxLength": 1,
        "enum": [1],
        "required": ["a"],
        "properties": {"a": {}},
        "alpha": 1,
    }
    new = {"zeta": 2, "type": "integer", "enum": [1, 2], "properties": {}, "alpha": 2}
    kinds = [f.kind for f in diff_schema(old, new)]
    assert kinds == [
        "property_removed",
        "required_removed",
        "enum_loosened",
        "maxLength_removed",
        "pattern_removed",
        "additionalProperties_widened",
        "keyword_changed",
        "type_changed",
        "keyword_changed",
    ]
    assert diff_schema(old, new) == diff_schema(copy.deepcopy(old), dict(reversed(new.items())))


def test_direction_is_validated() -> None:
    with pytest.raises(ValueError, match="direction"):
        diff_schema({}, {}, direction="sideways")  # type: ignore[arg-type]


def test_root_values() -> None:
    assert only(True, False).widened is False
    assert only(False, True).widened is True
    assert only(False, True).pointer == ""
    assert only({"a": 1}, []).kind == "value_changed"
    assert only(None, 1).kind == "value_changed"
    found = diff_schema(True, {"type": "string"})
    assert [f.kind for f in found] == ["boolean_schema_changed", "type_added"]
    assert not any(f.widened for f in found)
    found = diff_schema({"type": "string"}, True)
    assert [(f.kind, f.widened) for f in found] == [
        ("boolean_schema_changed", False),
        ("type_removed", True),
    ]


# ---------------------------------------------------------------------------------------------
# Walk: nested properties, items, anyOf


def test_nested_property_widening() -> None:
    old = {
        "properties": {"filter": {"properties": {"tag": {"type": "string"}}, "required": ["tag"]}}
    }
    new = {"properties": {"filter": {"properties": {"tag": {"type": "string"}, "owner": {}}}}}
    assert lines(old, new) == [
        "[widened] property added: properties.filter.properties.owner (optional)",
        "[widened] required removed: tag (properties.filter.required)",
    ]


def test_items_enum() -> None:
    f = only({"items": {"enum": ["a"]}}, {"items": {"enum": ["a", "b"]}}, "output")
    assert finding_line(f, direction="output").startswith('output widened: items.enum (added "b");')
    tuple_form = diff_schema({"items": [{"enum": [1]}]}, {"items": [{"enum": [1, 2]}, {}]})
    assert [(f.kind, f.path) for f in tuple_form] == [
        ("enum_loosened", "items[0].enum"),
        ("branch_added", "items[1]"),
    ]


def test_anyof_branches_are_matched_not_shifted() -> None:
    a, b, c = {"type": "string"}, {"type": "integer"}, {"type": "null"}
    found = diff_schema({"anyOf": [a, b]}, {"anyOf": [c, a, b]})
    assert [(f.kind, f.path, f.widened) for f in found] == [("branch_added", "anyOf[0]", True)]
    edited = diff_schema({"anyOf": [a, {"enum": [1]}]}, {"anyOf": [{"enum": [1, 2]}, a]})
    assert [(f.kind, f.path) for f in edited] == [("enum_loosened", "anyOf[0].enum")]


# ---------------------------------------------------------------------------------------------
# $ref


DEFS = {
    "Open": {"type": "object", "properties": {"state": {"enum": ["open"]}}},
    "Any": {"type": "object", "properties": {"state": {"enum": ["open", "closed"]}}},
}


def test_ref_retarget_reports_the_retarget_and_the_target_difference() -> None:
    old = {"$defs": DEFS, "properties": {"x": {"$ref": "#/$defs/Open"}}}
    new = {"$defs": DEFS, "properties": {"x": {"$ref": "#/$defs/Any"}}}
    assert lines(old, new) == [
        "ref_retargeted: properties.x.$ref (#/$defs/Open -> #/$defs/Any)",
        '[widened] enum loosened: properties.x.$ref.properties.state.enum (added "closed")',
    ]


def test_ref_pointer_escapes_and_percent_encoding() -> None:
    defs = {"a/b": {"maxLength": 1}, "c~d": {"maxLength": 2}, "e f": {"maxLength": 3}}
    old = {"definitions": defs, "$ref": "#/definitions/a~1b"}
    assert [f.kind for f in diff_schema(old, {**old, "$ref": "#/definitions/c~0d"})] == [
        "ref_retargeted",
        "maxLength_loosened",
    ]
    assert [f.detail for f in diff_schema(old, {**old, "$ref": "#/definitions/e%20f"})][
        1
    ] == "1 -> 3"


def test_unresolvable_and_external_refs_compare_as_strings() -> None:
    old = {"$ref": "#/$defs/missing"}
    f = only(old, {"$ref": "#/$defs/other"})
    assert (f.kind, f.widened, f.detail) == (
        "ref_retargeted",
        True,
        "#/$defs/missing -> #/$defs/other",
    )
    f = only({"$ref": "other.json#/a"}, {"$ref": "other.json#/b"})
    assert (f.kind, f.widened) == ("ref_retargeted", True)
    f = only({"$ref": "#anchor"}, {"$ref": "#other"})
    assert f.kind == "ref_retargeted"


def test_schema_replaced_by_an_equivalent_ref_is_not_widened() -> None:
    old = {"properties": {"x": {"type": "string", "maxLength": 5}}}
    new: dict[str, Any] = {
        "$defs": {"S": {"type": "string", "maxLength": 5}},
        "properties": {"x": {"$ref": "#/$defs/S"}},
    }
    found = diff_schema(old, new)
    assert [(f.kind, f.path) for f in found] == [
        ("ref_added", "properties.x.$ref"),
        ("definition_added", "$defs.S"),
    ]
    assert not any(f.widened for f in found)
    looser = copy.deepcopy(new)
    looser["$defs"]["S"]["maxLength"] = 50
    assert pick(diff_schema(old, looser), "maxLength_loosened", "properties.x.maxLength").widened


def test_ref_cycles_end_with_one_finding() -> None:
    def linked(name: str, values: list[int]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"v": {"enum": values}, "next": {"$ref": f"#/$defs/{name}"}},
        }

    defs = {"N": linked("N", [1]), "M": linked("M", [1, 2])}
    found = diff_schema({"$defs": defs, "$ref": "#/$defs/N"}, {"$defs": defs, "$ref": "#/$defs/M"})
    assert [(f.kind, f.path, f.detail) for f in found] == [
        ("ref_retargeted", "$ref", "#/$defs/N -> #/$defs/M"),
        ("ref_retargeted", "$ref.properties.next.$ref", "#/$defs/N -> #/$defs/M"),
        ("value_changed", "$ref.properties.next.$ref", "reference cycle"),
        ("enum_loosened", "$ref.properties.v.enum", "added 2"),
    ]
    # mutual recursion through the root
    old = {"properties": {"a": {"$ref": "#"}}, "title": "x"}
    new = {"properties": {"a": {"$ref": "#/properties/a"}}, "title": "x"}
    assert diff_schema(old, new)  # terminates and explains
    assert diff_schema({"x": 1}, {"$ref": "#"})


def test_ref_budget() -> None:
    old: dict[str, Any] = {
        "$defs": {"A": {"maxLength": 1}, "B": {"maxLength": 2}},
        "properties": {f"p{i}": {"$ref": "#/$defs/A", "title": "t"} for i in range(5)},
    }
    new = copy.deepcopy(old)
    for prop in new["properties"].values():
        prop["$ref"] = "#/$defs/B"
    found = diff_schema(old, new, max_refs=2)
    limited = [f for f in found if f.detail == "reference limit reached"]
    assert len(limited) == 3 and all(f.widened for f in limited)
    assert len([f for f in found if f.kind == "maxLength_loosened"]) == 2
    assert len([f for f in diff_schema(old, new) if f.kind == "maxLength_loosened"]) == 5


def test_exponential_ref_fan_out_is_bounded() -> None:
    # every level refers twice to the next one: 2**30 paths to compare without a budget
    def chain(prefix: str, leaf: int) -> dict[str, Any]:
        defs: dict[str, Any] = {
            f"{prefix}{i}": {
                "anyOf": [
                    {"$ref": f"#/$defs/{prefix}{i + 1}"},
                    {"items": {"$ref": f"#/$defs/{prefix}{i + 1}"}},
                ]
            }
            for i in range(30)
        }
        defs[f"{prefix}30"] = {"maxLength": leaf}
        return {"$defs": defs, "$ref": f"#/$defs/{prefix}0"}

    found = diff_schema(chain("A", 1), chain("B", 2))
    assert found[0].kind == "definition_added"
    limited = [f for f in found if f.detail == "reference limit reached"]
    assert limited and all(f.widened for f in limited)
    assert sum(f.kind == "ref_retargeted" for f in found) <= 2 * 256 + 2


# ---------------------------------------------------------------------------------------------
# Limits


def nested(depth: int, leaf: object) -> object:
    for _ in range(depth):
        leaf = {"properties": {"a": leaf}}
    return leaf


def test_depth_limit() -> None:
    at_limit = diff_schema(nested(64, {"enum": [1]}), nested(64, {"enum": [1, 2]}))
    assert [f.kind for f in at_limit] == ["enum_loosened"]
    past = only(nested(65, {"enum": [1]}), nested(65, {"enum": [1, 2]}))
    assert (past.kind, past.detail, past.widened) == (
        "value_changed",
        "schema nesting limit reached",
        True,
    )
    assert past.path.count("properties.a") == 65


def test_depth_limit_line_matches_the_reference_at_its_depth() -> None:
    def chain(leaf: int) -> object:
        value: object = leaf
        for _ in range(34):
            value = {"a": value}
        return value

    f = only(chain(1), chain(2), max_depth=32)
    assert f.path == ".".join(["a"] * 33)
    assert finding_line(f) == f"[widened] value_changed: {f.path} (schema nesting limit reached)"


def test_very_deep_values_never_raise() -> None:
    deep_list: object = 1
    for _ in range(50_000):
        deep_list = [deep_list]
    assert diff_schema({"enum": [deep_list]}, {"enum": [deep_list]}) == []
    assert diff_schema({"const": deep_list}, {"const": [deep_list]})[0].kind == "const_changed"
    assert only(nested(5_000, {}), nested(5_000, {"type": "string"})).kind == "value_changed"
    huge_depth = diff_schema(
        nested(500, {"enum": [1]}), nested(500, {"enum": [2]}), max_depth=10**9
    )
    assert len(huge_depth) == 1 and huge_depth[0].detail == "schema nesting limit reached"


def test_python_level_cycles_do_not_loop() -> None:
    loop: dict[str, Any] = {"properties": {}}
    loop["properties"]["self"] = loop
    other: dict[str, Any] = {"properties": {}}
    other["properties"]["self"] = other
    other["title"] = "x"
    assert diff_schema(loop, other)


# ---------------------------------------------------------------------------------------------
# Property tests

_FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer())
_SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _FLOATS | st.text(max_size=6)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4)
    ),
    max_leaves=25,
)
_KEYWORDS = [
    "type",
    "properties",
    "required",
    "enum",
    "const",
    "items",
    "prefixItems",
    "anyOf",
    "allOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$ref",
    "$defs",
    "definitions",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "uniqueItems",
    "contains",
    "minItems",
    "description",
    "default",
    "$schema",
    "nullable",
    "x-extra",
]
_NAMES = st.sampled_from(["a", "b", "a/b", "c~d", "", "A"])
_REFS = st.sampled_from(
    [
        "#",
        "#/$defs/A",
        "#/$defs/B",
        "#/properties/a",
        "#/definitions/a~1b",
        "#/items/0",
        "https://example.com/s",
        "#/missing",
        "#/anyOf/1",
    ]
)
_TYPES = st.sampled_from(["string", "integer", "number", "null", "object", "array", "boolean"])
_KEYWORD_VALUE_LEAVES = (
    _SCALARS
    | _REFS
    | _TYPES
    | st.lists(_TYPES | _NAMES, max_size=3)
    | st.lists(_SCALARS, max_size=3)
)


def _schema_children(kids: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    member = (
        kids
        | _KEYWORD_VALUE_LEAVES
        | st.lists(kids, max_size=3)
        | st.dictionaries(_NAMES, kids, max_size=3)
    )
    return st.dictionaries(st.sampled_from(_KEYWORDS), member, max_size=5)


SCHEMAS = st.recursive(
    st.booleans() | st.just({}) | _schema_children(st.just({})), _schema_children, max_leaves=20
)


def _containers(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    found = [path] if isinstance(value, dict | list) else []
    if isinstance(value, dict):
        for key, member in value.items():
            found += _containers(member, (*path, key))
    elif isinstance(value, list):
        for index, member in enumerate(value):
            found += _containers(member, (*path, index))
    return found


@st.composite
def one_edit(draw: st.DrawFn) -> tuple[object, object]:
    """A generated schema and a copy with one edit somewhere inside it."""
    old = draw(SCHEMAS)
    new = copy.deepcopy(old)
    spots = _containers(new)
    if not spots:
        return old, draw(SCHEMAS | JSON_VALUES)
    path = draw(st.sampled_from(spots))
    target: Any = new
    for seg in path:
        target = target[seg]
    replacement = draw(SCHEMAS | _KEYWORD_VALUE_LEAVES)
    if isinstance(target, dict):
        key = draw(st.sampled_from([*target, *_KEYWORDS[:8], "a"]))
        if key in target and draw(st.booleans()):
            del target[key]
        else:
            target[key] = replacement
    elif target and draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = replacement
    else:
        target.insert(draw(st.integers(0, len(target))), replacement)
    return old, new


def _same_json(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


_FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FAST
@given(SCHEMAS)
def test_identical_schemas_have_no_findings(schema: object) -> None:
    for direction in DIRECTIONS:
        assert diff_schema(schema, schema, direction=direction) == []
        assert diff_schema(schema, copy.deepcopy(schema), direction=direction) == []


@_FAST
@given(one_edit())
def test_an_edit_is_never_left_unexplained(pair: tuple[object, object]) -> None:
    old, new = pair
    for direction in DIRECTIONS:
        found = diff_schema(old, new, direction=direction)
        assert bool(found) is not _same_json(old, new)
        assert bool(diff_schema(new, old, direction=direction)) is not _same_json(old, new)
        for f in found:
            finding_line(f, direction=direction)
            assert f.pointer == "" or f.pointer.startswith("/")
        if not any(f.kind in REF_KINDS for f in found):
            for f in found:
                assert resolve_pointer(old, f.pointer) or resolve_pointer(new, f.pointer), f


@_FAST
@given(SCHEMAS, SCHEMAS)
def test_two_schemas_differ_iff_findings(old: object, new: object) -> None:
    found = diff_schema(old, new)
    assert bool(found) is not _same_json(old, new)
    assert diff_schema(old, new) == found  # deterministic


@_FAST
@given(JSON_VALUES, JSON_VALUES, st.integers(0, 70), st.integers(0, 5))
def test_arbitrary_json_never_raises(old: object, new: object, depth: int, refs: int) -> None:
    for direction in DIRECTIONS:
        found = diff_schema(old, new, direction=direction, max_depth=depth, max_refs=refs)
        for f in found:
            assert isinstance(f.widened, bool)
            assert all(isinstance(x, str) for x in (f.kind, f.path, f.pointer, f.cls, f.detail))
            assert finding_line(f, direction=direction)
        if _same_json(old, new):
            assert found == []


@_FAST
@given(
    JSON_VALUES, JSON_VALUES, st.integers(55, 70), st.sampled_from(["properties", "items", "not"])
)
def test_generated_values_near_the_depth_limit(
    old: object, new: object, depth: int, keyword: str
) -> None:
    def wrap(value: object) -> object:
        for _ in range(depth):
            value = {keyword: {"a": value}} if keyword == "properties" else {keyword: value}
        return value

    found = diff_schema(wrap(old), wrap(new))
    assert bool(found) is not _same_json(old, new)
    if found and depth > 64 and keyword == "properties":  # the leaf is walked at `depth`
        assert [f.detail for f in found] == ["schema nesting limit reached"]


_NUMBERS = st.sampled_from(
    [0, -0.0, 0.0, 1, 1.0, 1e16, 10**16, 1e22, 10**22, 2**53, 2**53 + 1, 2**64 + 1, 0.5,
     float("nan"), float("inf"), True, False, None, "null", "1.0", "1e16"]
)  # fmt: skip
_VALUES = st.recursive(
    _NUMBERS | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "type", "é"]), inner, max_size=3)
    ),
    max_leaves=8,
)


class _NoOrjson:
    OPT_SORT_KEYS = 0

    @staticmethod
    def dumps(value: object, option: int = 0) -> bytes:
        raise TypeError("the standard library path")


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(_VALUES, _VALUES)
@example([float("nan")], [None])
@example({"a": float("inf")}, {"a": None})
@example([1.0], [1])
@example({"x": [1e16]}, {"x": [10**16]})
@example([-0.0], [0])
@example([2**64 + 1], [2**64 + 1])
@example([True], [1])
def test_the_orjson_comparison_agrees_with_the_standard_library_one(old: Any, new: Any) -> None:
    """``same`` through orjson answers as through json.dumps alone, for numbers JavaScript
    reads alike (1 and 1.0, 1e16 and 10**16), NaN, null, big integers and nesting."""
    import toolpin.core.schemadiff as sd

    fast = sd._Walker(old, new, "input", 64, 256)
    answers = [fast.same(old, new), fast.same(new, old), fast.same(old, copy.deepcopy(old))]
    real = sd._orjson
    sd._orjson = _NoOrjson  # type: ignore[assignment]
    try:
        slow = sd._Walker(old, new, "input", 64, 256)
        expected = [slow.same(old, new), slow.same(new, old), slow.same(old, copy.deepcopy(old))]
    finally:
        sd._orjson = real
    assert answers == expected
