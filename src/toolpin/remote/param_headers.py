"""The 2026-07-28 ``Mcp-Param-{Name}`` headers of a ``tools/call`` over Streamable HTTP.

MCP 2026-07-28, *Streamable HTTP*, section "Request Metadata" / "Custom Headers from Tool
Parameters": a tool may mark a property of its ``inputSchema`` with ``x-mcp-header``; an
HTTP client **must** then mirror the argument at that property's path into the header
``Mcp-Param-{x-mcp-header}`` (omitted when the argument is absent or ``null``; strings as
they are, integers in decimal, booleans as ``true``/``false``; a value that is not a plain
ASCII header value goes in the ``=?base64?...?=`` sentinel), and **must** treat a tool
whose annotation breaks the rules as unusable: the name must be an RFC 9110 token,
case-insensitively unique in the schema, on a ``string``/``integer``/``boolean`` property
reached from the root through ``properties`` keys only (never through ``items``,
``oneOf``/``anyOf``/``allOf``/``not``, ``if``/``then``/``else``, ``$defs`` or the like).

toolpin pins the listing exactly as the server sent it, so an invalid tool is not
removed from it; a call to one is refused by the relay (fail closed: no conforming
request can be made). Standard library only: this is on the proxy's path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from toolpin.remote.wire import header_value

KEY: Final = "x-mcp-header"
PREFIX: Final = "Mcp-Param-"
_TOKEN: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_TYPES: Final = frozenset({"string", "integer", "boolean"})
_SAFE_INTEGER: Final = (1 << 53) - 1
# JSON Schema 2020-12 keywords whose value is a schema, a list of schemas or a map of
# schemas. Instance data (default, examples, const, enum) is never entered.
_ONE: Final = frozenset(
    {
        "items", "contains", "additionalProperties", "propertyNames", "unevaluatedItems",
        "unevaluatedProperties", "not", "if", "then", "else", "contentSchema",
    }
)  # fmt: skip
_LIST: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP: Final = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})
_MAX_NODES: Final = 100_000

HeaderMap = dict[tuple[str, ...], str]
"""Property path (``properties`` keys from the root) -> the ``x-mcp-header`` name."""


def _positions(root: object) -> Iterator[tuple[tuple[str, ...] | None, Mapping[str, Any]]]:
    """Every schema position: its ``properties`` path, or ``None`` once another
    keyword was crossed."""
    stack: list[tuple[tuple[str, ...] | None, object]] = [((), root)]
    seen = 0
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        seen += 1
        if seen > _MAX_NODES:
            return
        yield path, node
        for keyword, value in node.items():
            if keyword == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    stack.append((None if path is None else (*path, str(name)), sub))
            elif keyword in _ONE:
                stack.append((None, value))
            elif keyword in _LIST and isinstance(value, list):
                stack.extend((None, sub) for sub in value)
            elif keyword in _MAP and isinstance(value, dict):
                stack.extend((None, sub) for sub in value.values())


def header_map(input_schema: object) -> HeaderMap | str:
    """The ``Mcp-Param-*`` map of a tool's ``inputSchema``, or why it is invalid (fixed
    text, never the schema's own)."""
    found: HeaderMap = {}
    names: set[str] = set()
    for path, schema in _positions(input_schema):
        if KEY not in schema:
            continue
        if not path:
            return f"an {KEY} annotation outside the schema's plain properties"
        name = schema[KEY]
        if not isinstance(name, str) or not _TOKEN.match(name):
            return f"an {KEY} annotation that is not an HTTP header name"
        if schema.get("type") not in _TYPES:
            return f"an {KEY} annotation on a property that is not a string, integer or boolean"
        if name.lower() in names:
            return f"two {KEY} annotations with the same name"
        names.add(name.lower())
        found[path] = name
    return found


def param_headers(mapping: HeaderMap, arguments: object) -> dict[str, str] | str:
    """The headers of a call with ``arguments``, or why none can be sent (a string)."""
    out: dict[str, str] = {}
    for path, name in mapping.items():
        value: object = arguments
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            continue  # absent or null: the header is omitted
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            if abs(value) > _SAFE_INTEGER:
                return f"the argument for {PREFIX}{name} is outside the safe integer range"
            text = str(value)
        elif isinstance(value, float | str):
            text = str(value)
        else:
            continue  # not a primitive: nothing the annotation can mirror
        out[PREFIX + name] = header_value(text)
    return out


__all__ = ["HeaderMap", "header_map", "param_headers"]
