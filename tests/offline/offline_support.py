"""Shared helpers of the offline CLI tests: running toolpin, reading the scenario table,
and reading findings out of ``check --json`` output (strictly, and tolerantly as the
hidden mtpc-compat bar does)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
DATA = REPO / "tests" / "data"
MTPC = DATA / "mtpc"
GOLDEN = Path(__file__).resolve().parent / "golden"
SOURCE = "mtpc-compat"
PINNED_AT = "2026-10-08T00:00:00Z"
PIN_ARGS = ["--source", SOURCE, "--pinned-at", PINNED_AT]


@dataclass(frozen=True)
class Run:
    """One toolpin invocation."""

    exit: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    def assert_clean_failure(self, code: int = 2) -> str:
        """Exit ``code`` with exactly one ``toolpin: ...`` line (plus optional advice)."""
        assert self.exit == code, (self.exit, self.stdout, self.stderr)
        assert "Traceback" not in self.stderr and "Traceback" not in self.stdout, self.stderr
        lines = self.stderr.splitlines()
        assert 1 <= len(lines) <= 2, self.stderr
        assert lines[0].startswith("toolpin: ") or lines[0].startswith("Usage:"), self.stderr
        if lines[0].startswith("toolpin: "):
            assert len(lines[0]) > len("toolpin: ") + 5, self.stderr
        return lines[0]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLPIN_COLOR", "TOOLPIN_DEBUG")}
    env["PYTHONPATH"] = str(SRC)
    env["NO_COLOR"] = "1"
    return env


def run_process(argv: Sequence[str], cwd: Path, *, home: Path | None = None) -> Run:
    """``python -m toolpin`` in a real process (PYTHONPATH=src)."""
    env = _env()
    if home is not None:
        env["TOOLPIN_HOME"] = str(home)
    proc = subprocess.run(
        [sys.executable, "-m", "toolpin", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=60,
    )
    return Run(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))


@contextlib.contextmanager
def _chdir(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def run_inprocess(argv: Sequence[str], cwd: Path) -> Run:
    """The same entry point (``toolpin.cli.main``) in this process, for speed."""
    from toolpin.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    with _chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as exc:
            code = exc.code
    if code is None:
        code = 0
    assert isinstance(code, int), code
    return Run(code, out.getvalue(), err.getvalue())


def scenarios() -> list[dict[str, Any]]:
    doc = json.loads((MTPC / "scenarios.json").read_text(encoding="utf-8"))
    return list(doc["scenarios"])


def by_name() -> dict[str, dict[str, Any]]:
    return {sc["name"]: sc for sc in scenarios()}


# ------------------------------------------------------------------------------ findings


def findings(doc: Any) -> dict[str, Any]:
    """Findings from a ``check --json`` document in mcp-tool-pin-check's shape."""
    changed = doc["changed"]
    return {
        "added": sorted(doc["added"]),
        "removed": sorted(doc["removed"]),
        "changed": sorted(c["name"] for c in changed),
        "widened": sorted(c["name"] for c in changed if c["widened"]),
        "output_widened": sorted(c["name"] for c in changed if c["output_widened"]),
        "name_changed": bool(doc["server"]["name_changed"]),
    }


_FILLER = {"tool", "tools", "is", "was", "were", "the", "a", "an", "names", "name", "list", "new"}
_ADDED = {"added", "add", "new"}
_REMOVED = {"removed", "remove", "deleted", "missing", "gone"}
_CHANGED = {"changed", "modified", "changes", "drifted"}


def _words(label: str) -> set[str]:
    split = re.sub(r"([a-z])([A-Z])", r"\1 \2", label)
    return {w for w in re.split(r"[^A-Za-z]+", split.lower()) if w}


def _qualifies(label: str, vocabulary: set[str]) -> bool:
    words = _words(label)
    return bool(words & vocabulary) and not (words - vocabulary - _FILLER)


def _labels_for(doc: Any, name: str) -> set[str]:
    """Every label the bar's matcher could attach to an occurrence of ``name``."""
    labels: set[str] = set()

    def visit(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == name:
                    labels.update(path)
                if value == name:
                    labels.update(path)
                    labels.add(key)
                    for sib_key, sib in node.items():
                        if sib is True:
                            labels.add(sib_key)
                        elif isinstance(sib, str) and re.fullmatch(r"[A-Za-z_\-]+", sib):
                            labels.add(sib)
                visit(value, (*path, key))
        elif isinstance(node, list):
            for item in node:
                if item == name:
                    labels.update(path)
                visit(item, path)

    visit(doc, ())
    return labels


def _pairs(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _pairs(value, (*path, key))
    elif isinstance(node, list):
        for item in node:
            yield from _pairs(item, path)
    else:
        yield path, node


def tolerant_findings(doc: Any, names: Sequence[str]) -> dict[str, Any]:
    """Findings as a shape-tolerant matcher reads them (the hidden bar's rules, restated)."""
    out: dict[str, Any] = {
        "added": [],
        "removed": [],
        "changed": [],
        "widened": [],
        "output_widened": [],
    }
    entries = _entries(doc)
    for name in sorted(set(names)):
        labels = _labels_for(doc, name)
        if any(_qualifies(x, _ADDED) for x in labels):
            out["added"].append(name)
        if any(_qualifies(x, _REMOVED) for x in labels):
            out["removed"].append(name)
        entry = entries.get(name)
        if entry is None:
            continue
        if any(_qualifies(x, _CHANGED) for x in labels) or any(
            isinstance(v, list) and v and "schema" in k for k, v in entry.items()
        ):
            out["changed"].append(name)
        widened = output_widened = False
        for path, value in _pairs(entry):
            text = " ".join(path).lower()
            if value is True and "widen" in path[-1].lower():
                if "output" in text:
                    output_widened = True
                else:
                    widened = True
            elif (
                isinstance(value, str)
                and "widen" in value.lower()
                and path[-1] != "description_diff"
            ):
                if "output" in text or "output" in value.lower():
                    output_widened = True
                else:
                    widened = True
        if widened:
            out["widened"].append(name)
        if output_widened:
            out["output_widened"].append(name)
    return out


def _entries(doc: Any) -> dict[str, Any]:
    """Per tool, the object that describes its change (the bar scopes flags to it)."""
    found: dict[str, Any] = {}

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            name = node.get("name")
            if isinstance(name, str) and any(
                isinstance(v, (list, bool)) for k, v in node.items() if k != "name"
            ):
                found.setdefault(name, node)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    for key in ("changed",):
        visit(doc.get(key, []))
    return found


def all_tool_names(*docs: Any) -> list[str]:
    names: set[str] = set()
    for doc in docs:
        names.update(doc["added"])
        names.update(doc["removed"])
        names.update(doc["unchanged"])
        names.update(c["name"] for c in doc["changed"])
    return sorted(names)
