"""The composite GitHub Action's shell steps, run in order with a shell as a runner would."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integrations.conftest import REPO, Installed

pytestmark = pytest.mark.slow

ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
_EXPR = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")


def _inputs(**given: str) -> dict[str, str]:
    defaults = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    unknown = set(given) - set(defaults)
    assert not unknown, unknown
    return {**defaults, **given}


def _render(text: str, inputs: dict[str, str]) -> str:
    return _EXPR.sub(lambda m: inputs[m.group(1)], text)


def _runs(step: dict[str, Any], inputs: dict[str, str], failed: bool) -> bool:
    """The few `if:` forms the action uses, evaluated as Actions would."""
    cond = step.get("if")
    if cond is None:
        return not failed
    always = "always()" in cond
    for name, value in inputs.items():
        cond = cond.replace(f"inputs.{name}", json.dumps(value).replace('"', "'"))
    cond = cond.replace("always() && ", "").replace("always()", "true")
    cond = re.sub(r"hashFiles\([^)]*\) != ''", "true", cond)
    parts = [p.strip() for p in cond.split("&&")]
    ok = True
    for part in parts:
        if part == "true":
            continue
        left, op, right = re.match(r"(.+?)\s*(==|!=)\s*(.+)", part).groups()  # type: ignore[union-attr]
        ok = ok and ((left.strip() == right.strip()) == (op == "=="))
    return ok and (always or not failed)


def _run_action(
    project: Path, installed: Installed, **given: str
) -> tuple[dict[str, str], list[str]]:
    inputs = _inputs(**given)
    output = project / "github_output"
    output.write_text("")
    outcomes: dict[str, str] = {}
    ran: list[str] = []
    failed = False
    for step in ACTION["runs"]["steps"]:
        if "uses" in step:
            assert re.search(r"@v\d+$", step["uses"]), step["uses"]
            continue
        if not _runs(step, inputs, failed):
            continue
        env = installed.env(
            GITHUB_ACTION_PATH=str(REPO),
            GITHUB_OUTPUT=str(output),
            TOOLPIN_HOME=str(project / "home"),
            **{k: _render(str(v), inputs) for k, v in step.get("env", {}).items()},
        )
        for key, value in list(env.items()):
            if "${{ steps." in value:
                sid, field = re.search(r"steps\.([\w-]+)\.(\w+)", value).groups()  # type: ignore[union-attr]
                env[key] = outcomes.get(sid, "skipped") if field == "outcome" else ""
        done = subprocess.run(
            ["bash", "-e", "-c", _render(step["run"], inputs)],
            cwd=project, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        ran.append(step["name"])
        if "id" in step:
            outcomes[step["id"]] = "success" if done.returncode == 0 else "failure"
        failed = failed or done.returncode != 0
    results = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return results, ran


def _project(tmp_path: Path, installed: Installed) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    state = project / "demo-state"
    config = json.loads((REPO / "examples" / "mcp.json").read_text())
    config["mcpServers"]["demo"]["env"] = {"TOOLPIN_DEMO_STATE": str(state)}
    (project / ".mcp.json").write_text(json.dumps(config, indent=2))
    shutil.copy(REPO / "examples" / "tools-list.json", project / "tools-list.json")
    env = installed.env(TOOLPIN_HOME=str(project / "home"))
    for argv in (
        ["toolpin", "lock", "--definitions-only"],
        ["toolpin", "pin", "--listing", "tools-list.json", "--lock", "tools.lock.json"],
    ):
        subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True, timeout=300)
    state.write_text("0")  # the next lock --check is the server's first session again
    return project


def test_a_clean_project_passes(installed: Installed, tmp_path: Path) -> None:
    project = _project(tmp_path, installed)
    results, ran = _run_action(
        project, installed, listing="tools-list.json", **{"lock-args": "--definitions-only"}
    )
    assert results == {"result": "clean"}
    assert ran == ["Install toolpin", "toolpin lock --check", "toolpin check", "Result"]
    assert json.loads((project / "toolpin.sarif").read_text())["version"] == "2.1.0"


def test_drift_fails_and_still_writes_sarif(installed: Installed, tmp_path: Path) -> None:
    project = _project(tmp_path, installed)
    (project / "demo-state").write_text("1")  # the demo server now shows its changed tool
    shutil.copy(REPO / "examples" / "tools-list.changed.json", project / "tools-list.json")
    results, ran = _run_action(
        project, installed, listing="tools-list.json", **{"lock-args": "--definitions-only"}
    )
    assert results == {"result": "drift"}
    assert "toolpin check" in ran, "the offline check runs even after the lock check failed"
    sarif = json.loads((project / "toolpin.sarif").read_text())
    assert sarif["runs"][0]["results"], "the drift is in the SARIF report"


def test_the_lock_check_can_be_skipped(installed: Installed, tmp_path: Path) -> None:
    project = _project(tmp_path, installed)
    results, ran = _run_action(project, installed, config="", listing="tools-list.json")
    assert "toolpin lock --check" not in ran
    assert results == {"result": "clean"}
    assert os.path.exists(project / "toolpin.sarif")
