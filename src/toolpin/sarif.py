"""SARIF 2.1.0 output of a drift, for code-scanning dashboards.

One rule per kind of result: an item added / removed / changed (per definition kind), a
schema finding class (``schema-property-added``, ``schema-type-broadened``, ...), changed
instructions and a changed server name. One result per item and per schema finding. The
level follows the item's most severe label (high: error, medium: warning, low: note).
Names from the server are shown with unsafe characters made visible.
"""

from __future__ import annotations

from typing import Any, Final

from toolpin import __version__
from toolpin.core.drift import CHANGED, Drift, ItemChange
from toolpin.core.labels import HIGH, MEDIUM
from toolpin.core.render import visible

SCHEMA_URI: Final = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL: Final = {HIGH: "error", MEDIUM: "warning"}


def _level(severity: str) -> str:
    return _LEVEL.get(severity, "note")


class _Rules:
    def __init__(self) -> None:
        self.rules: dict[str, dict[str, Any]] = {}

    def use(self, rule_id: str, text: str, level: str) -> str:
        if rule_id not in self.rules:
            self.rules[rule_id] = {
                "id": rule_id,
                "name": rule_id.replace("-", " ").title().replace(" ", ""),
                "shortDescription": {"text": text},
                "defaultConfiguration": {"level": level},
                "helpUri": "https://github.com/toolpin/toolpin#readme",
            }
        return rule_id


def _location(artifact: str, change_name: str, kind: str) -> dict[str, Any]:
    return {
        "physicalLocation": {"artifactLocation": {"uri": artifact}},
        "logicalLocations": [
            {"name": change_name, "fullyQualifiedName": f"{kind}/{change_name}", "kind": "member"}
        ],
    }


def _item_result(rules: _Rules, change: ItemChange, artifact: str) -> dict[str, Any]:
    kind = change.kind.value.replace("_", "-")
    rule = rules.use(
        f"{kind}-{change.status}",
        f"A {kind.replace('-', ' ')} was {change.status}",
        _level(change.level),
    )
    name = visible(change.key)
    labels = "; ".join(x.text for x in change.labels)
    return {
        "ruleId": rule,
        "level": _level(change.level),
        "message": {"text": f"{kind.replace('-', ' ')} {name} {change.status}: {labels}"},
        "locations": [_location(artifact, name, kind)],
        "partialFingerprints": {
            "toolpinItem/v1": f"{kind}:{change.key}:{change.new.hash if change.new else 'gone'}"
        },
        "properties": {
            "labels": [x.key for x in change.labels],
            "widened": change.widened,
            "outputWidened": change.output_widened,
        },
    }


def sarif_log(drift: Drift, *, artifact: str, lock: str) -> dict[str, Any]:
    """The SARIF document of ``drift`` (``artifact``: listing path, ``lock``: lock path)."""
    rules = _Rules()
    results: list[dict[str, Any]] = []
    for change in drift.changes:
        results.append(_item_result(rules, change, artifact))
        if change.status != CHANGED:
            continue
        kind = change.kind.value.replace("_", "-")
        for direction, findings in (
            ("input", change.input_findings),
            ("output", change.output_findings),
        ):
            for finding in findings:
                severity = "warning" if finding.widened else "note"
                rule = rules.use(finding.cls, f"JSON Schema change: {finding.cls}", severity)
                where = "inputSchema" if direction == "input" else "outputSchema"
                results.append(
                    {
                        "ruleId": rule,
                        "level": severity,
                        "message": {
                            "text": f"{kind} {visible(change.key)}: {where} "
                            f"{visible(finding.path)}: {finding.kind}"
                            + (" (widened)" if finding.widened else "")
                        },
                        "locations": [_location(artifact, visible(change.key), kind)],
                        "properties": {
                            "pointer": f"/{where}{finding.pointer}",
                            "kind": finding.kind,
                            "widened": finding.widened,
                            "direction": direction,
                        },
                    }
                )
    if drift.instructions is not None:
        severity = drift.instructions.labels[0].severity if drift.instructions.labels else "low"
        rule = rules.use(
            "instructions-changed", "The server's instructions changed", _level(severity)
        )
        results.append(
            {
                "ruleId": rule,
                "level": _level(severity),
                "message": {
                    "text": "server instructions changed: "
                    + "; ".join(x.text for x in drift.instructions.labels)
                },
                "locations": [_location(artifact, "instructions", "server")],
                "properties": {"labels": [x.key for x in drift.instructions.labels]},
            }
        )
    if drift.identity.name_changed:
        rule = rules.use("server-name-changed", "The server reports another name", "error")
        results.append(
            {
                "ruleId": rule,
                "level": "error",
                "message": {"text": "the server name changed behind the same pin"},
                "locations": [_location(artifact, "serverInfo", "server")],
            }
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
                        "informationUri": "https://github.com/toolpin/toolpin",
                        "rules": list(rules.rules.values()),
                    }
                },
                "results": results,
                "properties": {"lock": lock},
            }
        ],
    }
