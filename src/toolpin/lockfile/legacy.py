"""Reading lockfiles written by mcp-tool-pin-check (a migration path; never written).

mcp-tool-pin-check 0.1 - 0.2.2 writes ``lockfile_version`` 1 locks in three shapes (v0.1:
no ``outputSchema``; v0.2.0: ``outputSchema`` always present; v0.2.1+: optional
``server`` identity). Its hash is not the RFC 8785 recipe: it normalises each tool to
``name``, ``description`` (``""`` when missing), ``inputSchema`` (``{}``), ``outputSchema``
(``null``) and ``annotations`` (only when present), then takes SHA-256 of Python's
``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)``, so numbers
keep Python's spelling and keys sort by code point. To verify those digests toolpin
parses such a lock, and the listing checked against it, with Python number semantics.

Checking a listing against such a lock gives the exit code mcp-tool-pin-check gives,
except where that tool crashes (invalid UTF-8, deep nesting, unpaired surrogates): toolpin
reports those as unusable input (exit 2).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolpin.core.canonical import JSONValue, normalize
from toolpin.core.drift import Drift, IdentityReport, compare_listings
from toolpin.core.snapshot import Definition, Identity, Kind
from toolpin.errors import ListingError, LockfileError

LEGACY_KEY: Final = "lockfile_version"
NOTE: Final = (
    "this lock was written by mcp-tool-pin-check: it pins only the name, description, "
    "inputSchema, outputSchema and annotations of tools; re-pin with `toolpin pin` to "
    "cover whole definitions, prompts, resources and instructions"
)


def looks_legacy(doc: JSONValue) -> bool:
    """Whether a parsed document is (trying to be) a mcp-tool-pin-check lock."""
    return isinstance(doc, dict) and (LEGACY_KEY in doc or isinstance(doc.get("tools"), list))


@dataclass(frozen=True)
class LegacyLock:
    """A verified mcp-tool-pin-check lock."""

    source: JSONValue
    pinned_at: JSONValue
    definitions: Mapping[str, tuple[dict[str, Any], str]]
    """Tool name -> (pinned normalised definition, its digest)."""
    identity: Identity | None


def normalize_tool(tool: JSONValue) -> dict[str, Any]:
    """mcp-tool-pin-check's normalised definition of one raw tool."""
    if not isinstance(tool, dict):
        raise ListingError("each tool must be a JSON object")
    name = tool.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ListingError("each tool needs a non-empty string name")
    description = tool.get("description")
    if description is None:
        description = ""
    elif not isinstance(description, str):
        raise ListingError("a tool's description must be a string")
    out: dict[str, Any] = {"name": name, "description": description}
    for member in ("inputSchema", "outputSchema", "annotations"):
        value = tool.get(member)
        if value is not None and not isinstance(value, dict):
            raise ListingError(f"a tool's {member} must be a JSON object")
    out["inputSchema"] = tool.get("inputSchema") if tool.get("inputSchema") is not None else {}
    out["outputSchema"] = tool.get("outputSchema")
    if tool.get("annotations") is not None:
        out["annotations"] = tool["annotations"]
    return out


def legacy_digest(definition: Mapping[str, Any]) -> str:
    """mcp-tool-pin-check's digest of a normalised definition."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise ListingError("a tool holds an unpaired surrogate") from None
    return hashlib.sha256(data).hexdigest()


def _identity(value: JSONValue, path: Path) -> Identity:
    if not isinstance(value, dict):
        raise LockfileError(f"{path} server identity must be a JSON object")
    fields: dict[str, str] = {}
    for key, label in (
        ("name", "server name"),
        ("version", "server version"),
        ("protocolVersion", "protocolVersion"),
    ):
        if key == "protocolVersion" and key not in value:
            continue
        item = value.get(key)
        if not isinstance(item, str) or not item:
            raise LockfileError(f"{path} {label} must be a non-empty string")
        if item != item.strip() or any(ord(c) < 0x20 for c in item):
            raise LockfileError(f"{path} {label} must be a single-line string")
        fields[key] = item
    return Identity(fields["name"], fields["version"], fields.get("protocolVersion"))


def read_legacy(doc: JSONValue, path: Path) -> LegacyLock:
    """Validate a lock parsed with Python number semantics, as mcp-tool-pin-check does."""
    if not isinstance(doc, dict):
        raise LockfileError(f"{path} is not a tool pin lockfile")
    if LEGACY_KEY in doc:
        version = doc[LEGACY_KEY]
        if type(version) is not int or version != 1:
            raise LockfileError(f"{path} is not a version-1 tool pin lockfile")
    tools = doc.get("tools")
    if not isinstance(tools, list):
        raise LockfileError(f"{path} is not a tool pin lockfile")
    definitions: dict[str, tuple[dict[str, Any], str]] = {}
    for position, entry in enumerate(tools, start=1):
        if not isinstance(entry, dict):
            raise LockfileError(f"{path} has a non-object tool entry")
        definition, name, digest = entry.get("definition"), entry.get("name"), entry.get("sha256")
        if (
            not isinstance(definition, dict)
            or not isinstance(name, str)
            or not isinstance(digest, str)
        ):
            raise LockfileError(f"{path} has an incomplete tool entry")
        try:
            actual = legacy_digest(definition)
        except ListingError:
            actual = ""
        if definition.get("name") != name or actual != digest:
            raise LockfileError(
                f"{path} hash mismatch for tool entry {position}",
                advice="The lock was edited by hand; re-create it.",
            )
        if name in definitions:
            raise LockfileError(f"{path} lists a tool more than once (entry {position})")
        definitions[name] = (definition, digest)
    identity = _identity(doc["server"], path) if "server" in doc else None
    return LegacyLock(
        source=doc.get("source"),
        pinned_at=doc.get("pinned_at"),
        definitions=definitions,
        identity=identity,
    )


def check_legacy(
    lock: LegacyLock, raw_tools: Sequence[JSONValue], current: Identity | None
) -> Drift:
    """Compare raw tools (parsed with Python number semantics) with a legacy lock."""
    old: dict[str, Definition] = {}
    for name, (definition, digest) in lock.definitions.items():
        old[name] = Definition(key=name, hash=digest, value=_js(definition))
    new: dict[str, Definition] = {}
    for tool in raw_tools:
        definition = normalize_tool(tool)
        name = definition["name"]
        pinned = lock.definitions.get(name)
        if (
            pinned is not None
            and "outputSchema" not in pinned[0]
            and definition["outputSchema"] is None
        ):
            # A v0.1 lock never recorded outputSchema; an absent one still matches.
            del definition["outputSchema"]
        new[name] = Definition(key=name, hash=legacy_digest(definition), value=_js(definition))
    changes, same = compare_listings(Kind.TOOL, old, new)
    return Drift(
        changes=tuple(changes),
        unchanged={Kind.TOOL: same},
        instructions=None,
        identity=IdentityReport(pinned=lock.identity, current=current),
        not_checked=(),
        compared=(Kind.TOOL,),
    )


def _js(value: dict[str, Any]) -> dict[str, Any]:
    # Explanations (schema diff, rendering) work on values with JavaScript numbers.
    result = normalize(value)
    assert isinstance(result, dict)
    return result
