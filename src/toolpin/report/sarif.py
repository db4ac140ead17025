"""SARIF 2.1.0 output of a drift, for code-scanning dashboards.

One rule per kind of result: an item added / removed / changed (per definition kind), a
schema finding class (``schema-property-added``, ``schema-type-broadened``, ...), changed
instructions and a changed server name. One result per item and per schema finding. An
item's level follows its most severe label (high: error, medium: warning, low: note); a
schema finding is a warning when it widens, else a note. Names from the server are shown
with unsafe characters made visible. Locations point at the listing file (line 1: a saved
export has no useful line numbers) plus a logical location naming the definition.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, Final
from urllib.parse import quote

from toolpin import __version__
from toolpin.core.drift import CHANGED, Drift, ItemChange
from toolpin.core.labels import HIGH, MEDIUM
from toolpin.core.render import visible

SCHEMA_URI: Final = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL: Final = {HIGH: "error", MEDIUM: "warning"}


def _level(severity: str) -> str:
    return _LEVEL.get(severity, "note")


class _Rules:
    """The run's rules, in first-use order; results refer to them by id and index."""

    def __init__(self) -> None:
        self.rules: dict[str, dict[str, Any]] = {}

    def use(self, rule_id: str, text: str, level: str) -> tuple[str, int]:
        if rule_id not in self.rules:
            self.rules[rule_id] = {
                "id": rule_id,
                "name": rule_id.replace("-", " ").title().replace(" ", ""),
                "shortDescription": {"text": text},
                "defaultConfiguration": {"level": level},
            }
        return rule_id, list(self.rules).index(rule_id)


def artifact_uri(path: str) -> str:
    """A URI reference for a path as typed (forward slashes, percent-encoded)."""
    return quote(PurePath(path).as_posix(), safe="/:")


def _location(artifact: str, name: str, kind: str) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": artifact},
            "region": {"startLine": 1},
        },
        "logicalLocations": [
            {"name": name, "fullyQualifiedName": f"{kind}/{name}", "kind": "member"}
        ],
    }


def _result(
    rules: _Rules, rule: tuple[str, str, str], text: str, location: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    rule_id, description, level = rule
    rule_id, index = rules.use(rule_id, description, level)
    return {
        "ruleId": rule_id,
        "ruleIndex": index,
        "level": level,
        "message": {"text": text},
        "locations": [location],
        **extra,
    }


def _item_results(rules: _Rules, change: ItemChange, artifact: str) -> list[dict[str, Any]]:
    kind = change.kind.value.replace("_", "-")
    noun = kind.replace("-", " ")
    name = visible(change.key)
    location = _location(artifact, name, kind)
    digest = change.new.hash if change.new is not None else "gone"
    labels = "; ".join(x.text for x in change.labels)
    out = [
        _result(
            rules,
            (f"{kind}-{change.status}", f"A {noun} was {change.status}", _level(change.level)),
            f"{noun} {name} {change.status}: {labels}",
            location,
            partialFingerprints={"toolpinItem/v1": f"{kind}:{name}:{digest}"},
            properties={
                "labels": [x.key for x in change.labels],
                "widened": change.widened,
                "outputWidened": change.output_widened,
            },
        )
    ]
    if change.status != CHANGED:
        return out
    for direction, findings in (
        ("input", change.input_findings),
        ("output", change.output_findings),
    ):
        where = "inputSchema" if direction == "input" else "outputSchema"
        for finding in findings:
            level = "warning" if finding.widened else "note"
            text = f"{noun} {name}: {where} {visible(finding.path)}: {finding.kind}"
            out.append(
                _result(
                    rules,
                    (finding.cls, f"JSON Schema change: {finding.cls}", level),
                    text + (" (widened)" if finding.widened else ""),
                    location,
                    partialFingerprints={
                        "toolpinFinding/v1": f"{kind}:{name}:{where}{visible(finding.pointer)}:"
                        f"{finding.kind}:{digest}"
                    },
                    properties={
                        "pointer": f"/{where}{finding.pointer}",
                        "kind": finding.kind,
                        "widened": finding.widened,
                        "direction": direction,
                    },
                )
            )
    return out


def sarif_log(drift: Drift, *, artifact: str, lock: str) -> dict[str, Any]:
    """The SARIF document of ``drift`` (``artifact``: listing path, ``lock``: lock path)."""
    rules = _Rules()
    uri = artifact_uri(artifact)
    results: list[dict[str, Any]] = []
    for change in drift.changes:
        results.extend(_item_results(rules, change, uri))
    if drift.instructions is not None:
        labels = drift.instructions.labels
        level = _level(labels[0].severity if labels else "low")
        results.append(
            _result(
                rules,
                ("instructions-changed", "The server's instructions changed", level),
                "server instructions changed: " + "; ".join(x.text for x in labels),
                _location(uri, "instructions", "server"),
                properties={"labels": [x.key for x in labels]},
            )
        )
    if drift.identity.name_changed:
        results.append(
            _result(
                rules,
                ("server-name-changed", "The server reports another name", "error"),
                "the server name changed behind the same pin",
                _location(uri, "serverInfo", "server"),
            )
        )
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "toolpin",
                        "version": __version__,
                        "rules": list(rules.rules.values()),
                    }
                },
                "results": results,
                "properties": {"lock": lock},
            }
        ],
    }
