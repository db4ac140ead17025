"""toolpin: make MCP tool definitions tamper-evident.

A person approves an MCP server once; toolpin records what was approved as hashes
(RFC 8785 JSON + SHA-256) and blocks, or fails CI, when the server later says
something else to the model.

Quick start (library)::

    from toolpin.core.snapshot import snapshot_from_export
    from toolpin.core.canonical import parse_json

    snap = snapshot_from_export(parse_json(open("tools-list.json", "rb").read()))
    print(snap.tools.set_hash)

The command line is ``toolpin`` (see ``toolpin --help``).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
