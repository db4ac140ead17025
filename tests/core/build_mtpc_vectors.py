"""Regenerate ``data/mtpc_schema_lines.json`` from the real mcp-tool-pin-check 0.2.2.

Usage (from the project root)::

    python tests/core/build_mtpc_vectors.py --mtpc /path/to/bin/mcp-tool-pin-check

Every case becomes one tool of one crafted listing; the reference pins the "old" listing and
checks the "new" one, and the schema lines it prints for each tool are stored verbatim. Where
toolpin deliberately prints something else (rules its brief changes), the case says what and
why; ``test_schemadiff.py`` compares toolpin with the reference lines everywhere else.

The reference is MIT licensed (Copyright (c) Digital Fortress); only its printed output is
stored here, none of its code.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("data") / "mtpc_schema_lines.json"

# name -> (direction, old, new); "output" cases put the pair in outputSchema.
CASES: dict[str, tuple[str, Any, Any]] = {
    "property-added-optional": (
        "input",
        {"type": "object", "properties": {"q": {"type": "string"}}},
        {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}}},
    ),
    "property-added-required": (
        "input",
        {"type": "object", "properties": {"q": {"type": "string"}}},
        {
            "type": "object",
            "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["limit"],
        },
    ),
    "property-removed": ("input", {"properties": {"a": {}, "b": {}}}, {"properties": {"a": {}}}),
    "properties-mixed": (
        "input",
        {"properties": {"b": {}, "d": {"enum": [1]}, "a": {"enum": [1]}}},
        {"properties": {"c": {}, "a": {"enum": [1, 2]}, "e": {}, "d": {"enum": [1, 2]}}},
    ),
    "properties-not-object": ("input", {"properties": []}, {"properties": {}}),
    "required-removed": ("input", {"required": ["query"]}, {}),
    "required-added": ("input", {"required": ["query"]}, {"required": ["query", "b"]}),
    "required-nested": (
        "input",
        {"properties": {"f": {"required": ["a"]}}},
        {"properties": {"f": {"required": ["b"]}}},
    ),
    "required-sorted": ("input", {"required": ["z", "a"]}, {"required": ["y", "b"]}),
    "enum-loosened": (
        "input",
        {"properties": {"status": {"enum": ["a", "b"]}}},
        {"properties": {"status": {"enum": ["a", "b", "archived"]}}},
    ),
    "enum-tightened": (
        "input",
        {"properties": {"status": {"enum": ["a", "b"]}}},
        {"properties": {"status": {"enum": ["a"]}}},
    ),
    "enum-removed": (
        "input",
        {"properties": {"status": {"enum": ["a", "b"]}}},
        {"properties": {"status": {}}},
    ),
    "enum-added": ("input", {"properties": {"s": {}}}, {"properties": {"s": {"enum": ["a"]}}}),
    "enum-changed": (
        "input",
        {"properties": {"s": {"enum": "a"}}},
        {"properties": {"s": {"enum": ["a"]}}},
    ),
    "enum-values-canonical": (
        "input",
        {"enum": ["a", 1, None]},
        {"enum": ["b", {"y": [1, 2], "x": "é"}, True, 2.5, "a\nb"]},
    ),
    "enum-values-unicode": (
        "input",
        {"enum": ["x"]},
        {"enum": ["x", "\u2028", "é", "\U0001f600", "\ufb33", "\u0007"]},
    ),
    "maxLength-loosened": (
        "input",
        {"properties": {"q": {"maxLength": 5}}},
        {"properties": {"q": {"maxLength": 10}}},
    ),
    "maxLength-tightened": (
        "input",
        {"properties": {"q": {"maxLength": 10}}},
        {"properties": {"q": {"maxLength": 5}}},
    ),
    "maxLength-removed": (
        "input",
        {"properties": {"q": {"maxLength": 10}}},
        {"properties": {"q": {}}},
    ),
    "maxLength-added": (
        "input",
        {"properties": {"q": {}}},
        {"properties": {"q": {"maxLength": 5}}},
    ),
    "maxLength-changed-string": ("input", {"maxLength": "5"}, {}),
    "maxLength-changed-bool": ("input", {"maxLength": 5}, {"maxLength": True}),
    "maxLength-fraction": ("input", {"maxLength": 5}, {"maxLength": 5.5}),
    "pattern-removed": (
        "input",
        {"properties": {"q": {"pattern": "^a"}}},
        {"properties": {"q": {}}},
    ),
    "pattern-added": ("input", {"properties": {"q": {}}}, {"properties": {"q": {"pattern": "^a"}}}),
    "pattern-changed": (
        "input",
        {"properties": {"q": {"pattern": "^a"}}},
        {"properties": {"q": {"pattern": "^b"}}},
    ),
    "additionalProperties-false-absent": ("input", {"additionalProperties": False}, {}),
    "additionalProperties-false-true": (
        "input",
        {"additionalProperties": False},
        {"additionalProperties": True},
    ),
    "additionalProperties-schema-true": (
        "input",
        {"additionalProperties": {"type": "string"}},
        {"additionalProperties": True},
    ),
    "additionalProperties-false-schema": (
        "input",
        {"additionalProperties": False},
        {"additionalProperties": {}},
    ),
    "additionalProperties-absent-false": ("input", {}, {"additionalProperties": False}),
    "additionalProperties-true-absent": ("input", {"additionalProperties": True}, {}),
    "additionalProperties-recursed": (
        "input",
        {"additionalProperties": {"enum": ["a"]}},
        {"additionalProperties": {"enum": ["a", "b"]}},
    ),
    "items-enum": ("input", {"items": {"enum": ["a"]}}, {"items": {"enum": ["a", "b"]}}),
    "anyOf-branch-edited": (
        "input",
        {"anyOf": [{"type": "string"}, {"enum": [1]}]},
        {"anyOf": [{"type": "string"}, {"enum": [1, 2]}]},
    ),
    "anyOf-branch-added": (
        "input",
        {"anyOf": [{"type": "string"}]},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
    ),
    "defs-nested": (
        "input",
        {"$defs": {"A": {"properties": {"y": {"enum": [1]}}}}},
        {"$defs": {"A": {"properties": {"y": {"enum": [1, 2]}}}}},
    ),
    "description-changed": ("input", {"description": "a"}, {"description": "b"}),
    "type-broadened": (
        "input",
        {"properties": {"a": {"type": "string"}}},
        {"properties": {"a": {"type": ["string", "null"]}}},
    ),
    "schema-value-replaced": ("input", {"properties": {"a": 1}}, {"properties": {"a": 2}}),
    "dotted-property-name": (
        "input",
        {"properties": {"a.b": {"enum": [1]}}},
        {"properties": {"a.b": {"enum": [1, 2]}}},
    ),
    "keyword-order": (
        "input",
        {
            "properties": {"a": {"enum": [1]}},
            "enum": [1],
            "maxLength": 1,
            "pattern": "x",
            "additionalProperties": False,
            "required": ["a"],
            "title": "t",
        },
        {
            "properties": {"a": {"enum": [1, 2]}},
            "enum": [1, 2],
            "maxLength": 2,
            "title": "u",
            "required": [],
        },
    ),
    "enum-reordered": ("input", {"enum": ["a", "b"]}, {"enum": ["b", "a"]}),
    "output-enum-widened": (
        "output",
        {"properties": {"status": {"enum": ["a"]}}},
        {"properties": {"status": {"enum": ["a", "deleted"]}}},
    ),
    "output-items-enum-widened": ("output", {"items": {"enum": [1]}}, {"items": {"enum": [1, 2]}}),
    "output-enum-tightened": (
        "output",
        {"properties": {"status": {"enum": ["a", "b"]}}},
        {"properties": {"status": {"enum": ["a"]}}},
    ),
    "output-property-removed": (
        "output",
        {"properties": {"a": {}, "title": {}}},
        {"properties": {"a": {}}},
    ),
    "output-mixed": (
        "output",
        {
            "properties": {"status": {"enum": ["a", "b"]}},
            "required": ["x"],
            "additionalProperties": False,
        },
        {"properties": {"status": {"enum": ["a"]}, "n": {}}},
    ),
}

# Where toolpin prints something else on purpose: name -> (toolpin lines, why).
DIVERGES: dict[str, tuple[list[str], str]] = {
    "property-added-required": (
        ["property added: properties.limit", "required added: limit"],
        "a new required argument is a tightening for callers: not widened",
    ),
    "additionalProperties-false-schema": (
        ["[widened] additionalProperties widened: additionalProperties (false -> schema)"],
        "false -> {} accepts unknown members: a widening the reference misses",
    ),
    "anyOf-branch-added": (
        ["[widened] branch_added: anyOf[1] (anyOf)"],
        "a new anyOf branch accepts more: widened, with its own kind",
    ),
    "type-broadened": (
        ['[widened] type_broadened: properties.a.type ("string" -> ["string","null"])'],
        "type arrays are compared as sets; adding null is a widening",
    ),
    "enum-reordered": (
        ["enum_reordered: enum (order or duplicates changed)"],
        "the reference reports a changed tool with no reason; every hash difference is explained",
    ),
    "output-mixed": (
        [
            "output widened: property added: properties.n (optional)",
            'output changed: enum tightened: properties.status.enum (removed "b")',
            "output widened: required removed: x",
            "output widened: additionalProperties widened: additionalProperties (false -> absent)",
        ],
        "output relaxations other than enums say 'output widened' (the brief's rule)",
    ),
}

_HEADINGS = {"schema:", "output schema:", "schema widened: yes"}


def run_reference(mtpc: str) -> dict[str, list[str]]:
    names = sorted(CASES)
    tools_old, tools_new = [], []
    for index, name in enumerate(names):
        direction, old, new = CASES[name]
        key = "outputSchema" if direction == "output" else "inputSchema"
        tool = f"case{index:03d}"
        tools_old.append({"name": tool, "description": "", key: old})
        tools_new.append({"name": tool, "description": "", key: new})
    with tempfile.TemporaryDirectory() as tmp:
        old_path, new_path, lock = (Path(tmp) / p for p in ("old.json", "new.json", "lock.json"))
        old_path.write_text(json.dumps({"tools": tools_old}), encoding="utf-8")
        new_path.write_text(json.dumps({"tools": tools_new}), encoding="utf-8")
        pin = [mtpc, "pin", "--listing", str(old_path), "--lock", str(lock)]
        subprocess.run(pin, check=True, capture_output=True)
        check = [mtpc, "check", "--listing", str(new_path), "--lock", str(lock)]
        done = subprocess.run(check, capture_output=True, encoding="utf-8")
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    # U+2028 and friends are not line breaks for this parser: split on "\n" only
    for line in done.stdout.split("\n"):
        if line.startswith("  ~ "):
            current = blocks.setdefault(line[4:], [])
        elif current is not None and line.startswith("    "):
            text = line[4:]
            if text not in _HEADINGS:
                current.append(text)
        elif not line.startswith("    "):
            current = None
    return {name: blocks.get(f"case{index:03d}", []) for index, name in enumerate(names)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mtpc", required=True, help="the mcp-tool-pin-check command")
    args = parser.parse_args()
    lines = run_reference(args.mtpc)
    cases = []
    for name in sorted(CASES):
        direction, old, new = CASES[name]
        case: dict[str, Any] = {
            "name": name,
            "direction": direction,
            "old": old,
            "new": new,
            "reference": lines[name],
        }
        if name in DIVERGES:
            case["toolpin"], case["why"] = DIVERGES[name]
        cases.append(case)
    document = {
        "_note": (
            "Schema finding lines printed by mcp-tool-pin-check 0.2.2 (PyPI, MIT licence, "
            "Copyright (c) Digital Fortress) for crafted tool schemas, produced by running the "
            "real package with tests/core/build_mtpc_vectors.py. Only its output is stored. "
            "'toolpin' holds toolpin's lines where they differ on purpose, with 'why'."
        ),
        "cases": cases,
    }
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
