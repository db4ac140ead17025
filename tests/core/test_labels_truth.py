"""Labels tell the truth: "Wording only" only for description/title text, and every
core.schemadiff class produces the label the table below names."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from toolpin.core import labels as lab
from toolpin.core.canonical import normalize
from toolpin.core.drift import compare, explain_change
from toolpin.core.schemadiff import SchemaFinding, diff_schema
from toolpin.core.snapshot import Definition, Kind, snapshot_from_export

DATA = Path(__file__).resolve().parent / "data"
SCHEMADIFF = Path(lab.__file__).resolve().parent / "schemadiff.py"

# The label a finding of each class gets when it does not widen the schema and no field
# label ("New field", "Field removed", "Field type changed") covers it.
CLASS_LABEL: dict[str, str] = {
    "schema-property-added": "schema-changed",
    "schema-unconstrained-added": "schema-changed",
    "schema-property-removed": "schema-changed",
    "schema-required-added": "schema-tightened",
    "schema-required-removed": "schema-changed",
    "schema-required-unconstrained-added": "schema-changed",
    "schema-enum-widened": "schema-changed",
    "schema-enum-narrowed": "schema-tightened",
    "schema-enum-removed": "schema-changed",
    "schema-enum-added": "schema-tightened",
    "schema-type-broadened": "schema-changed",
    "schema-type-narrowed": "schema-tightened",
    "schema-type-changed": "schema-changed",
    "schema-constraint-relaxed": "schema-changed",
    "schema-constraint-tightened": "schema-tightened",
    "schema-additional-props-opened": "schema-changed",
    "schema-additional-props-closed": "schema-tightened",
    "schema-branch-added": "schema-changed",
    "schema-branch-removed": "schema-tightened",
    "schema-definition-added": "schema-changed",
    "schema-definition-removed": "schema-changed",
    "schema-ref-retargeted": "schema-changed",
    "schema-ref-inlined": "schema-changed",
    "schema-cosmetic-modified": "schema-changed",
    "schema-version-migrated": "schema-changed",
    "schema-modified": "schema-changed",
}


def _property(path: str) -> bool:
    return ".properties." in f".{path}"


def expected_label(finding: SchemaFinding) -> str:
    if lab.is_wording(finding):
        return "wording"
    if finding.kind == "property_added" and _property(finding.path):
        return "new-field"
    if finding.kind == "property_removed" and _property(finding.path):
        return "field-removed"
    typed = finding.kind.startswith("type_") and finding.kind != "type_restated"
    if typed and _property(finding.path):
        return "field-type"
    if finding.widened:
        return "schema-widened"
    return CLASS_LABEL[finding.cls]


def test_the_table_names_every_class_schemadiff_can_produce() -> None:
    source = SCHEMADIFF.read_text(encoding="utf-8")
    classes = set(re.findall(r'"(schema-[a-z-]+)"', source))
    assert classes == set(CLASS_LABEL)


EXTRA_CASES: list[list[Any]] = [
    ["typed property added", {}, {"properties": {"a": {"type": "string"}}}],
    ["definition added", {"$defs": {}}, {"$defs": {"A": {"type": "string"}}}],
    ["definition removed", {"$defs": {"A": {"type": "string"}}}, {"$defs": {}}],
    [
        "schema inlined as a $ref",
        {"$defs": {"A": {"type": "string"}}, "properties": {"x": {"type": "string"}}},
        {"$defs": {"A": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/A"}}},
    ],
    ["$schema migrated", {"$schema": "a"}, {"$schema": "b"}],
]


def _rule_cases() -> list[list[Any]]:
    lines = (DATA / "schema_rules.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()] + EXTRA_CASES


def _tool(schema: Any, **extra: Any) -> Definition:
    return Definition.of(Kind.TOOL, normalize({"name": "t", "inputSchema": schema, **extra}))


@pytest.mark.parametrize("case", _rule_cases(), ids=lambda c: c[0])
def test_every_schema_rule_case_gets_the_label_of_its_class(case: list[Any]) -> None:
    _, old, new = case[:3]
    findings = diff_schema(old, new)
    assert findings
    change = explain_change(Kind.TOOL, _tool(old), _tool(new))
    keys = {label.key for label in change.labels}
    for finding in findings:
        if not lab.is_wording(finding):
            assert expected_label(finding) in keys, (finding, keys)
    wording_only = all(lab.is_wording(f) for f in findings)
    assert ("wording" in keys) == wording_only, (findings, keys)


def test_every_class_is_exercised_by_a_rule_case() -> None:
    seen = {f.cls for case in _rule_cases() for f in diff_schema(case[1], case[2])}
    assert seen == set(CLASS_LABEL)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({"description": "a"}, {"description": "b"}, ["wording"]),
        ({"title": "a"}, {"title": "b"}, ["wording"]),
        ({"annotations": {"title": "a"}}, {"annotations": {"title": "b"}}, ["wording"]),
        ({"inputSchema": {"description": "a"}}, {"inputSchema": {"description": "b"}}, ["wording"]),
        ({"icons": []}, {"icons": [{"src": "x"}]}, ["member-changed"]),
        ({}, {"_meta": {"a": 1}}, ["member-changed"]),
        ({"annotations": {"x": 1}}, {"annotations": {"x": 2}}, ["member-changed"]),
        ({"inputSchema": {"default": 1}}, {"inputSchema": {"default": 2}}, ["schema-changed"]),
        (
            {"inputSchema": {"required": ["a", "b"]}},
            {"inputSchema": {"required": ["b", "a"]}},
            ["schema-changed"],
        ),
        (
            {"inputSchema": {"type": "object"}},
            {"inputSchema": {"type": "object", "additionalProperties": False}},
            ["schema-tightened"],
        ),
    ],
)
def test_members_and_annotations(
    old: dict[str, Any], new: dict[str, Any], expected: list[str]
) -> None:
    base = {"inputSchema": {"type": "object"}}
    change = explain_change(
        Kind.TOOL,
        Definition.of(Kind.TOOL, normalize({"name": "t", **base, **old})),
        Definition.of(Kind.TOOL, normalize({"name": "t", **base, **new})),
    )
    assert [label.key for label in change.labels] == expected


def test_a_prompt_argument_description_is_wording_but_its_required_flag_is_not() -> None:
    def prompt(arg: dict[str, Any]) -> Definition:
        return Definition.of(
            Kind.PROMPT, normalize({"name": "p", "arguments": [{"name": "x", **arg}]})
        )

    wording = explain_change(
        Kind.PROMPT, prompt({"description": "a"}), prompt({"description": "b"})
    )
    assert [x.key for x in wording.labels] == ["wording"]
    flag = explain_change(Kind.PROMPT, prompt({"required": False}), prompt({"required": True}))
    assert [x.key for x in flag.labels] == ["member-changed"]


# ------------------------------------------------------------ the real server-filesystem


def _listing(version: str) -> Any:
    path = DATA / "server-filesystem" / f"{version}.tools.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _snapshot(doc: Any) -> Any:
    return snapshot_from_export([normalize(doc)], paged=True).snapshot


def _strip_additional(doc: Any, member: str) -> tuple[Any, int]:
    doc = copy.deepcopy(doc)
    count = 0
    for tool in doc["result"]["tools"]:
        schema = tool.get(member)
        if isinstance(schema, dict) and schema.get("additionalProperties") is False:
            del schema["additionalProperties"]
            count += 1
    return doc, count


def test_server_filesystem_closing_its_output_objects_is_not_wording() -> None:
    """The real 2026.8.31 listing closes all 14 tools' output objects with
    ``additionalProperties: false``; against the same listing without it, every one of
    those tools is labelled as a schema change, none as wording."""
    real = _listing("2026.8.31")
    pinned, count = _strip_additional(real, "outputSchema")
    assert count == 14
    drift = compare(_snapshot(pinned), _snapshot(real))
    assert len(drift.changes) == 14
    for change in drift.changes:
        assert [f.kind for f in change.output_findings] == ["additionalProperties_changed"]
        assert [x.key for x in change.labels] == ["output-schema"]


def test_server_filesystem_closing_its_input_objects_is_schema_tightened() -> None:
    """The same change made to the input schemas: "Schema tightened", never wording."""
    real = _listing("2026.8.31")
    closed = copy.deepcopy(real)
    for tool in closed["result"]["tools"]:
        tool["inputSchema"]["additionalProperties"] = False
    drift = compare(_snapshot(real), _snapshot(closed))
    assert len(drift.changes) == 14
    for change in drift.changes:
        assert [f.detail for f in change.input_findings] == ["absent -> false"]
        assert [x.key for x in change.labels] == ["schema-tightened"]
        assert change.labels[0].text == "Schema tightened: additionalProperties"


def test_server_filesystem_upgrade_labels_no_change_as_wording() -> None:
    """2025.11.25 -> 2026.8.31 (both real): hints, output schemas; nothing is "wording"."""
    drift = compare(_snapshot(_listing("2025.11.25")), _snapshot(_listing("2026.8.31")))
    assert len(drift.changes) == 14
    for change in drift.changes:
        assert "wording" not in [x.key for x in change.labels]
    media = next(c for c in drift.changes if c.key == "read_media_file")
    assert "output-schema" in [x.key for x in media.labels]
