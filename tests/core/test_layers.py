"""The pure core stays pure: no I/O layer, no I/O module, no third-party import but the
JSON codecs rfc8785 and orjson.

``toolpin.core`` (canonical hashing, the snapshot model, schema diff, labels, rendering and
reports) is what every layer builds on; it must not import the proxy, the store, the
probe, lockfiles, clients, packages, the crawler or the log, and it performs no I/O.
The check reads the source with ``ast``, so a lazy import inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "src" / "toolpin" / "core"
ALLOWED_TOOLPIN = ("toolpin.core", "toolpin.errors")
ALLOWED_OTHERS = {
    "__future__", "collections", "dataclasses", "decimal", "difflib", "enum", "fractions",
    "functools", "gc", "hashlib", "itertools", "json", "math", "re", "typing", "unicodedata",
    "types", "urllib", "rfc8785", "orjson",
}  # fmt: skip
IO_CALLS = {"open", "print", "input"}


def _modules() -> list[Path]:
    return sorted(CORE.glob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.name)
def test_core_module_imports_only_core_and_pure_modules(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names = [node.module]
        for name in names:
            if name.startswith("toolpin"):
                assert name.startswith(ALLOWED_TOOLPIN), f"{path.name} imports {name}"
            else:
                assert name.split(".")[0] in ALLOWED_OTHERS, f"{path.name} imports {name}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.name)
def test_core_module_performs_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in IO_CALLS, f"{path.name} calls {node.func.id}()"


def test_the_check_sees_every_core_module() -> None:
    names = {p.stem for p in _modules()}
    assert {"canonical", "snapshot", "schemadiff", "labels", "render", "drift"} <= names
