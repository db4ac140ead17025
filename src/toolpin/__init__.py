"""toolpin: make MCP tool definitions tamper-evident.

A person approves an MCP server once; toolpin records what was approved as hashes
(RFC 8785 JSON + SHA-256) and blocks, or fails CI, when the server later says
something else to the model.

The public Python API is the names in ``__all__``; everything else (every submodule) is
internal and may change between releases. Names are imported on first use, so
``import toolpin`` stays cheap::

    import toolpin

    export = toolpin.snapshot_from_export(toolpin.parse_json(open("tools.json", "rb").read()))
    print(export.snapshot.tools.set_hash)

    result = toolpin.check([Path("tools.json")], Path("toolpin.lock"))   # CI gate
    drift = toolpin.compare(pinned_snapshot, observed_snapshot)           # two snapshots

The command line is ``toolpin`` (see ``toolpin --help``).
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = [
    "ToolpinError",
    "__version__",
    "check",
    "compare",
    "hash_files",
    "parse_json",
    "pin",
    "snapshot_from_export",
]

_LAZY = {
    "ToolpinError": "toolpin.errors",
    "check": "toolpin.offline.check",
    "compare": "toolpin.core.drift",
    "hash_files": "toolpin.offline.hash",
    "parse_json": "toolpin.core.canonical",
    "pin": "toolpin.offline.check",
    "snapshot_from_export": "toolpin.core.snapshot",
}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from toolpin.core.canonical import parse_json
    from toolpin.core.drift import compare
    from toolpin.core.snapshot import snapshot_from_export
    from toolpin.errors import ToolpinError
    from toolpin.offline.check import check, pin
    from toolpin.offline.hash import hash_files


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolpin' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
