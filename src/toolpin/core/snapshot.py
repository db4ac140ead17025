"""Everything one MCP server tells the model, as hashed, immutable records.

A :class:`Snapshot` holds up to four listings (tools, prompts, resources, resource
templates), the server's instructions, and the server's self-reported identity. The
identity is kept apart from every hash: ``serverInfo`` is self-reported and never decides
anything except the one rule carried over from mcp-tool-pin-check (a changed server name
is drift).

Definitions are hashed whole, exactly as the server sent them (docs/hash-spec.md).
Listings are keyed by ``name`` (tools, prompts), ``uri`` (resources) and ``uriTemplate``
(resource templates); a listing with a missing or repeated key is an error.

:func:`snapshot_from_export` reads every export shape mcp-tool-pin-check accepts, plus
pages, the 2026-07-28 ``server/discover`` result and toolpin's own export form. This module
is part of the pure core: it parses values, it never reads files.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from toolpin.core.acyclic import collector_paused
from toolpin.core.canonical import (
    EMPTY_SET_HASH,
    EXPORT_DEPTH,
    MAX_DEPTH,
    JSONValue,
    canonical_many_parsed,
    canonical_parsed,
    deeper_than,
    instructions_hash,
    parse_json_around,
    set_hash_of_sorted,
    utf16_key,
)
from toolpin.errors import ListingError

_Encoded = Mapping[int, bytes]
"""Canonical bytes of definitions, by ``id`` of each parsed definition."""


class Kind(enum.Enum):
    """The four kinds of definition a server lists."""

    TOOL = "tool"
    PROMPT = "prompt"
    RESOURCE = "resource"
    TEMPLATE = "resource_template"

    @property
    def key_member(self) -> str:
        """The member that names a definition of this kind."""
        return _NAMES[self].key_member

    @property
    def list_member(self) -> str:
        """The array member of the ``*/list`` result (``tools``, ``resourceTemplates``...)."""
        return _NAMES[self].list_member

    @property
    def field(self) -> str:
        """The :class:`Snapshot` field, also used as a snake_case JSON key
        (``tools``, ``prompts``, ``resources``, ``resource_templates``)."""
        return _NAMES[self].field

    @property
    def method(self) -> str:
        """The MCP method that lists this kind."""
        return _NAMES[self].method

    @property
    def plural(self) -> str:
        """Human plural: "tools", "prompts", "resources", "resource templates"."""
        return _NAMES[self].plural


class _Names(NamedTuple):
    key_member: str
    list_member: str
    field: str
    method: str
    plural: str


_NAMES: Final = {
    Kind.TOOL: _Names("name", "tools", "tools", "tools/list", "tools"),
    Kind.PROMPT: _Names("name", "prompts", "prompts", "prompts/list", "prompts"),
    Kind.RESOURCE: _Names("uri", "resources", "resources", "resources/list", "resources"),
    Kind.TEMPLATE: _Names(
        "uriTemplate",
        "resourceTemplates",
        "resource_templates",
        "resources/templates/list",
        "resource templates",
    ),
}
"""Each kind's names, in the order of :class:`_Names`."""
KINDS: Final = (Kind.TOOL, Kind.PROMPT, Kind.RESOURCE, Kind.TEMPLATE)

SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"


@dataclass(frozen=True, slots=True)
class Definition:
    """One tool, prompt, resource or resource template, exactly as the server sent it."""

    key: str
    hash: str
    value: dict[str, JSONValue] = field(repr=False, compare=False)

    @classmethod
    def of(cls, kind: Kind, value: Mapping[str, JSONValue]) -> Definition:
        """Hash a parsed definition. Raises :class:`ListingError` if it has no usable key."""
        key = value.get(kind.key_member)
        if not isinstance(key, str):
            raise ListingError(
                f"each {kind.value.replace('_', ' ')} needs a string {kind.key_member}"
            )
        data = canonical_parsed(value)
        _check_nesting(kind, [value], [data])
        digest = hashlib.sha256(data).hexdigest()
        if cls is Definition:
            return _definition(key, digest, dict(value))
        return cls(key=key, hash=digest, value=dict(value))


def _check_nesting(
    kind: Kind, values: Sequence[Mapping[str, JSONValue]], encodings: Sequence[bytes]
) -> None:
    """One depth limit on every path: :data:`MAX_DEPTH` levels, counted from the
    definition itself (a definition cannot nest deeper than it has brackets, so only a
    definition with that many is walked)."""
    for value, data in zip(values, encodings, strict=True):
        if data.count(b"{") + data.count(b"[") > MAX_DEPTH and deeper_than(value, MAX_DEPTH):
            label = kind.value.replace("_", " ")
            raise ListingError(
                f"a {label} is nested more than {MAX_DEPTH} levels deep "
                f"(counted from the {label} itself)"
            )


_NEW = object.__new__
_SET_KEY = Definition.__dict__["key"].__set__  # the slots' own descriptors
_SET_HASH = Definition.__dict__["hash"].__set__
_SET_VALUE = Definition.__dict__["value"].__set__


def _definition(key: str, digest: str, value: dict[str, JSONValue]) -> Definition:
    """``Definition(key, digest, value)`` for a listing's thousands of items: the same
    object, its three slots filled directly (the frozen ``__init__`` costs more than the
    hash it stores)."""
    item: Definition = _NEW(Definition)
    _SET_KEY(item, key)
    _SET_HASH(item, digest)
    _SET_VALUE(item, value)
    return item


@dataclass(frozen=True, slots=True)
class Listing:
    """All definitions of one kind, across every page, sorted by key (UTF-16 order)."""

    kind: Kind
    items: tuple[Definition, ...]
    set_hash: str

    @classmethod
    def of(cls, kind: Kind, definitions: Iterable[Definition]) -> Listing:
        """Build a listing; a repeated key is an error (the names are listed, sorted)."""
        items = list(definitions)
        keys = [d.key for d in items]
        if "".join(keys).isascii():  # code points and UTF-16 code units sort alike
            items.sort(key=lambda d: d.key)
        else:
            items.sort(key=lambda d: utf16_key(d.key))
        repeated: set[str] = set()
        if len(set(keys)) != len(keys):
            seen: set[str] = set()
            for key in keys:
                if key in seen:
                    repeated.add(key)
                seen.add(key)
        if repeated:
            count = len(repeated)
            raise ListingError(
                f"{count} {kind.key_member} value{'s' if count > 1 else ''} "
                f"appear{'' if count > 1 else 's'} more than once in the {kind.plural} listing",
                advice=f"Every {kind.value.replace('_', ' ')} needs its own {kind.key_member}; "
                "this listing cannot be pinned as it is.",
            )
        # sorted by key and every key distinct: the set hash's own order
        digest = set_hash_of_sorted([(d.key, d.hash) for d in items]) if items else EMPTY_SET_HASH
        return cls(kind=kind, items=tuple(items), set_hash=digest)

    @classmethod
    def parse(cls, kind: Kind, raw_items: Iterable[JSONValue]) -> Listing:
        """Hash raw definitions (already parsed JSON) into a listing."""
        with collector_paused():  # definitions hold only JSON trees (core/acyclic.py)
            return cls._parse(kind, raw_items)

    @classmethod
    def _parse(
        cls, kind: Kind, raw_items: Iterable[JSONValue], encoded: _Encoded | None = None
    ) -> Listing:
        label = kind.value.replace("_", " ")
        values = list(raw_items)
        key_member = kind.key_member
        for raw in values:
            if not isinstance(raw, dict):
                raise ListingError(f"each {label} must be a JSON object")
            if not isinstance(raw.get(key_member), str):
                raise ListingError(f"each {label} needs a string {key_member}")
        return cls._parse_checked(kind, values, encoded)

    @classmethod
    def _parse_checked(
        cls, kind: Kind, values: list[dict[str, JSONValue]], encoded: _Encoded | None = None
    ) -> Listing:
        # every value is a dict with a string key member (checked by the caller);
        # ``encoded``: the canonical bytes of each value, by id, of values that
        # export_from_bytes parsed itself (nobody else holds them: they are not copied)
        key_member = kind.key_member
        sha256 = hashlib.sha256
        if encoded is None:
            datas = canonical_many_parsed(values)
            _check_nesting(kind, values, datas)
            definitions = [
                _definition(raw[key_member], sha256(data).hexdigest(), dict(raw))
                for raw, data in zip(values, datas, strict=True)
            ]
        else:
            _check_nesting(kind, values, [encoded[id(raw)] for raw in values])
            definitions = [
                _definition(raw[key_member], sha256(encoded[id(raw)]).hexdigest(), raw)
                for raw in values
            ]
        return cls.of(kind, definitions)

    def by_key(self) -> dict[str, Definition]:
        """Definitions indexed by key."""
        return {d.key: d for d in self.items}

    def __len__(self) -> int:
        return len(self.items)


@dataclass(frozen=True, slots=True)
class Identity:
    """What the server says it is. Self-reported: shown, never trusted for identity."""

    name: str
    version: str | None
    """None when the server gave no usable version (written as ``null``)."""
    protocol_version: str | None = None

    def shown_version(self) -> str:
        """The version for a person: ``(none)`` when the server gave none."""
        return self.version if self.version is not None else "(none)"

    def label(self) -> str:
        """``name version`` plus `` (protocol p)`` when known."""
        text = f"{self.name} {self.shown_version()}"
        if self.protocol_version is not None:
            text += f" (protocol {self.protocol_version})"
        return text

    def to_json(self) -> dict[str, str | None]:
        """The lockfile form (``"version": null`` when the server gave none)."""
        out: dict[str, str | None] = {"name": self.name, "version": self.version}
        if self.protocol_version is not None:
            out["protocolVersion"] = self.protocol_version
        return out


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything the model reads from one server.

    A listing that is ``None`` was not observed (the server does not offer it, or the
    export does not contain it): it is *unknown*, which is different from *empty*.
    ``instructions_known`` is False when the source could not say whether the server has
    instructions (a tools-only export); ``instructions`` is then ``None`` and ignored.
    """

    tools: Listing | None = None
    prompts: Listing | None = None
    resources: Listing | None = None
    resource_templates: Listing | None = None
    instructions: str | None = None
    instructions_known: bool = False
    identity: Identity | None = None

    @classmethod
    def of_listings(
        cls,
        listings: Mapping[Kind, Listing],
        *,
        instructions: str | None = None,
        instructions_known: bool = False,
        identity: Identity | None = None,
    ) -> Snapshot:
        """A snapshot of the given listings (a kind that is missing is unknown)."""
        return cls(
            tools=listings.get(Kind.TOOL),
            prompts=listings.get(Kind.PROMPT),
            resources=listings.get(Kind.RESOURCE),
            resource_templates=listings.get(Kind.TEMPLATE),
            instructions=instructions,
            instructions_known=instructions_known,
            identity=identity,
        )

    def listing(self, kind: Kind) -> Listing | None:
        """The listing of ``kind``, or ``None`` when unknown."""
        if kind is Kind.TOOL:
            return self.tools
        if kind is Kind.PROMPT:
            return self.prompts
        if kind is Kind.RESOURCE:
            return self.resources
        return self.resource_templates

    def listings(self) -> list[Listing]:
        """The known listings, in kind order."""
        return [x for x in (self.listing(k) for k in KINDS) if x is not None]

    @property
    def instructions_hash(self) -> str | None:
        """SHA-256 of the instructions, ``None`` when there are none (or unknown)."""
        return instructions_hash(self.instructions) if self.instructions_known else None

    def surface_hash(self) -> str:
        """One digest over everything the model reads (toolpin extension of the spec).

        SHA-256 of the UTF-8 lines ``instructions:<hash|none|unknown>``,
        ``prompts:<set hash|unknown>``, ``resource_templates:...``, ``resources:...``,
        ``tools:...`` joined by ``\\n`` (sorted by the part name, no trailing newline).
        """
        parts = {}
        for kind in KINDS:
            listing = self.listing(kind)
            parts[kind.field] = listing.set_hash if listing is not None else "unknown"
        if not self.instructions_known:
            parts["instructions"] = "unknown"
        else:
            parts["instructions"] = self.instructions_hash or "none"
        text = "\n".join(f"{name}:{value}" for name, value in sorted(parts.items()))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def counts(self) -> dict[str, int]:
        """Number of definitions per known listing (``tools``, ``prompts``, ...)."""
        return {x.kind.field: len(x) for x in self.listings()}


# ------------------------------------------------------------------------ reading exports


def _single_line(value: JSONValue, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ListingError(f"{what} must be a non-empty string")
    if value != value.strip() or any(ord(ch) < 0x20 for ch in value):
        raise ListingError(f"{what} must be a single-line string")
    return value


def _identity_from(
    obj: Mapping[str, JSONValue], *, allow_protocol_only: bool = False
) -> Identity | None:
    has_info = "serverInfo" in obj
    has_protocol = "protocolVersion" in obj
    if not has_info and not has_protocol:
        return None
    if not has_info:
        if allow_protocol_only:
            return None
        raise ListingError("protocolVersion was set without serverInfo")
    info = obj["serverInfo"]
    if not isinstance(info, dict):
        raise ListingError("serverInfo must be a JSON object")
    name = _single_line(info.get("name"), "serverInfo.name")
    version = _single_line(info.get("version"), "serverInfo.version")
    protocol = None
    if has_protocol:
        protocol = _single_line(obj["protocolVersion"], "protocolVersion")
    return Identity(name=name, version=version, protocol_version=protocol)


def _unwrap_result(obj: JSONValue) -> JSONValue:
    if isinstance(obj, dict) and isinstance(obj.get("result"), dict):
        return obj["result"]
    return obj


def _identity_from_initialize(value: JSONValue) -> Identity:
    if not isinstance(value, dict):
        raise ListingError("initialize must be a JSON object")
    inner = value
    if isinstance(value.get("result"), dict) and (
        "serverInfo" in value["result"] or "protocolVersion" in value["result"]
    ):
        inner = value["result"]
    found = _identity_from(inner)
    if found is None:
        raise ListingError("initialize has no serverInfo")
    return found


def _identity_from_meta(result: Mapping[str, JSONValue]) -> Identity | None:
    meta = result.get("_meta")
    if not isinstance(meta, dict) or SERVER_INFO_META not in meta:
        return None
    info = meta[SERVER_INFO_META]
    if not isinstance(info, dict):
        raise ListingError("the _meta serverInfo must be a JSON object")
    name = _single_line(info.get("name"), "serverInfo.name")
    version = _single_line(info.get("version"), "serverInfo.version")
    return Identity(name=name, version=version, protocol_version=None)


def _is_discover_result(obj: Mapping[str, JSONValue]) -> bool:
    return "supportedVersions" in obj and "capabilities" in obj


@dataclass
class _Parts:
    items: dict[Kind, list[JSONValue]] = field(default_factory=dict)
    instructions: list[JSONValue] = field(default_factory=list)
    identities: list[Identity] = field(default_factory=list)
    next_cursor: str | None = None

    arrays: list[list[JSONValue]] = field(default_factory=list)
    """Each array of definitions read, as it is in the document."""

    def add_items(self, kind: Kind, value: JSONValue) -> None:
        if not isinstance(value, list):
            raise ListingError(f"{kind.list_member} must be a JSON array")
        self.items.setdefault(kind, []).extend(value)
        self.arrays.append(value)

    def add_discover(self, result: JSONValue, what: str) -> None:
        if not isinstance(result, dict):
            raise ListingError(f"{what} must be a JSON object")
        found = _identity_from_meta(result)
        if found is not None:
            self.identities.append(found)
        self.instructions.append(result.get("instructions"))


def _read_page(doc: JSONValue, parts: _Parts) -> None:
    if isinstance(doc, list):
        parts.add_items(Kind.TOOL, doc)
        return
    if not isinstance(doc, dict):
        raise ListingError("listing must be a JSON object or a list of tools")
    result = doc.get("result")
    sources: list[Mapping[str, JSONValue]] = [result, doc] if isinstance(result, dict) else [doc]
    for kind in KINDS:
        # As in mcp-tool-pin-check: result.<list> wins over a top-level <list>.
        for source in sources:
            if kind.list_member in source:
                parts.add_items(kind, source[kind.list_member])
                break
    for source in sources:
        cursor = source.get("nextCursor")
        if isinstance(cursor, str) and cursor != "":
            parts.next_cursor = cursor
    # An initialize result (or its JSON-RPC envelope) beside the lists.
    if "initialize" in doc:
        parts.identities.append(_identity_from_initialize(doc["initialize"]))
        init = _unwrap_result(doc["initialize"])
        if isinstance(init, dict):
            parts.instructions.append(init.get("instructions"))
    # A 2026-07-28 server/discover result (or envelope) beside the lists, or as the page.
    for key in ("discover", "server/discover"):
        if key in doc:
            parts.add_discover(_unwrap_result(doc[key]), key)
    for source in sources:
        if _is_discover_result(source):
            parts.add_discover(source, "the discover result")
            continue
        # identity beside the lists (mcp-tool-pin-check), or in a 2026 result's _meta
        for found in (_identity_from(source), _identity_from_meta(source)):
            if found is not None:
                parts.identities.append(found)
        if "instructions" in source:
            parts.instructions.append(source["instructions"])


@dataclass(frozen=True, slots=True)
class Export:
    """A snapshot read from exported files, plus what the reader noticed."""

    snapshot: Snapshot
    partial: bool
    """True when the last page still had a ``nextCursor``: pages are missing."""


def snapshot_from_export(pages: JSONValue | Sequence[JSONValue], *, paged: bool = False) -> Export:
    """Read a saved listing (one document, or several pages of one listing).

    With ``paged=False`` ``pages`` is one parsed document; with ``paged=True`` it is a
    sequence of parsed documents, the pages of one listing in any order.
    """
    with collector_paused():  # definitions hold only JSON trees (core/acyclic.py)
        return _export(pages, paged=paged)


def export_from_bytes(documents: Sequence[bytes], *, allow_bom: bool = False) -> Export | None:
    """``snapshot_from_export([parse_json(d) for d in documents], paged=True)``, parsed and
    hashed in one pass (each definition's strictness is read off the encoding it is
    hashed by: :func:`toolpin.core.canonical.parse_json_around`), or None when that cannot
    be had this way: then take that path, which words every error.

    The same export in every field, definitions, numbers and hashes included (a
    property test compares the two on generated documents, errors included).
    """
    with collector_paused():  # definitions hold only JSON trees (core/acyclic.py)
        docs: list[JSONValue] = []
        encoded: dict[int, bytes] = {}
        try:
            for data in documents:
                found = parse_json_around(
                    data, _definition_arrays, allow_bom=allow_bom, max_depth=EXPORT_DEPTH
                )
                if found is None:
                    return None
                docs.append(found[0])
                encoded.update(found[1])
            return _export(docs, paged=True, encoded=encoded)
        except (ListingError, KeyError):  # the other path words it
            return None


def _definition_arrays(doc: JSONValue) -> list[list[JSONValue]]:
    parts = _Parts()
    _read_page(doc, parts)
    return parts.arrays


def _export(
    pages: JSONValue | Sequence[JSONValue], *, paged: bool, encoded: _Encoded | None = None
) -> Export:
    docs: Sequence[JSONValue] = pages if paged else [pages]
    parts = _Parts()
    for doc in docs:
        parts.next_cursor = None
        _read_page(doc, parts)
    if Kind.TOOL not in parts.items:
        # as mcp-tool-pin-check: an export without tools/list is not the listing asked for
        raise ListingError(
            "listing has no tools array (expected result.tools, tools, or a bare list)"
        )
    identity = _merge_identities(parts.identities)
    instructions, known = _merge_instructions(parts.instructions)
    listings: dict[Kind, Listing] = {}
    for kind, raw in parts.items.items():
        if kind is Kind.TOOL:
            _validate_tools(raw)  # stricter than Listing.parse's own checks
            listings[kind] = Listing._parse_checked(kind, raw, encoded)
        else:
            listings[kind] = Listing._parse(kind, raw, encoded)
    snap = Snapshot.of_listings(
        listings, instructions=instructions, instructions_known=known, identity=identity
    )
    return Export(snapshot=snap, partial=parts.next_cursor is not None)


def _merge_identities(found: list[Identity]) -> Identity | None:
    if not found:
        return None
    first = found[0]
    for other in found[1:]:
        if other.name != first.name or other.version != first.version:
            raise ListingError("listing contains conflicting server identity")
        if (
            other.protocol_version is not None
            and first.protocol_version is not None
            and other.protocol_version != first.protocol_version
        ):
            raise ListingError("listing contains conflicting server identity")
        if first.protocol_version is None and other.protocol_version is not None:
            first = other
    return first


def _merge_instructions(found: list[JSONValue]) -> tuple[str | None, bool]:
    if not found:
        return None, False
    first = found[0]
    for value in found:
        if value is not None and not isinstance(value, str):
            raise ListingError("instructions must be a string")
        if value != first:
            raise ListingError("listing contains conflicting server instructions")
    return (first if isinstance(first, str) else None), True


def _validate_tools(raw: list[JSONValue]) -> None:
    # The member types mcp-tool-pin-check insists on; the hash still covers every member.
    for tool in raw:
        if not isinstance(tool, dict):
            raise ListingError("each tool must be a JSON object")
        name = tool.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ListingError("each tool needs a non-empty string name")
        get = tool.get
        description = get("description")
        if description is not None and not isinstance(description, str):
            raise ListingError("a tool's description must be a string")
        for member in ("inputSchema", "outputSchema", "annotations"):
            value = get(member)
            if value is not None and not isinstance(value, dict):
                raise ListingError(f"a tool's {member} must be a JSON object")


def snapshot_from_results(
    results: Mapping[Kind, Sequence[Mapping[str, Any]]],
    *,
    instructions: str | None = None,
    instructions_known: bool = True,
    identity: Identity | None = None,
) -> Snapshot:
    """Build a snapshot from collected ``*/list`` pages (each page a parsed result object).

    Used by the proxy and the probe, which have already drained every page.
    """
    listings: dict[Kind, Listing] = {}
    for kind, pages in results.items():
        raw: list[JSONValue] = []
        for page in pages:
            items = page.get(kind.list_member)
            if not isinstance(items, list):
                raise ListingError(f"a {kind.method} page has no {kind.list_member} array")
            raw.extend(items)
        listings[kind] = Listing.parse(kind, raw)
    return Snapshot.of_listings(
        listings,
        instructions=instructions,
        instructions_known=instructions_known,
        identity=identity,
    )
