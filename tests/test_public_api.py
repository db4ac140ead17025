"""The public API: a few names, imported lazily, each the documented object."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import toolpin


def test_every_public_name_resolves() -> None:
    for name in toolpin.__all__:
        assert getattr(toolpin, name) is not None, name
    assert sorted(dir(toolpin)) == sorted(toolpin.__all__)


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        toolpin.nothing_here  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "nothing_here" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_import_toolpin_loads_nothing_else() -> None:
    code = "import sys, toolpin; print(sorted(m for m in sys.modules if m.startswith('toolpin')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['toolpin']"


def test_the_api_pins_and_checks_an_export(tmp_path: Path) -> None:
    listing = tmp_path / "tools.json"
    listing.write_text(json.dumps({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}))
    lock = tmp_path / "tools.lock"
    toolpin.pin([listing], lock)
    result = toolpin.check([listing], lock)
    assert result.drift.ok
    export = toolpin.snapshot_from_export(toolpin.parse_json(listing.read_bytes()))
    assert toolpin.compare(export.snapshot, export.snapshot).ok
    assert issubclass(toolpin.ToolpinError, Exception)
    assert toolpin.hash_files([listing]) is not None
