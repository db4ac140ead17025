"""``toolpin hash``: the hashes of the open spec for saved files, nothing else.

Unlike ``pin``, this follows the spec to the letter: a listing whose definitions share a
name still has a set hash (ties ordered by hash), and an unpaired surrogate has a
canonical form (a lowercase ``\\udxxx`` escape). Input with no canonical form (a repeated
member name, NaN, invalid UTF-8) or a listing with a definition that has no string name is
an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolpin.core.canonical import (
    EXPORT_DEPTH,
    MAX_DEPTH,
    JSONValue,
    deeper_than,
    definition_hash,
    instructions_hash,
    parse_json,
    set_hash,
    utf16_key,
)
from toolpin.core.snapshot import KINDS, Kind
from toolpin.errors import JSONError, ListingError
from toolpin.util.fs import read_input


@dataclass(frozen=True)
class HashGroup:
    """Hashes of one listing kind (``kind`` None: a single definition)."""

    kind: Kind | None
    items: tuple[tuple[str, str], ...]
    set_hash: str | None


@dataclass(frozen=True)
class HashReport:
    """Everything ``toolpin hash`` prints."""

    groups: tuple[HashGroup, ...]
    instructions_hash: str | None = None
    has_instructions: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form."""
        out: dict[str, Any] = {}
        for group in self.groups:
            if group.kind is None:
                out["definition"] = {"name": group.items[0][0], "hash": group.items[0][1]}
                continue
            key = group.kind.key_member
            out[group.kind.list_member] = {
                "items": [{key: k, "hash": h} for k, h in group.items],
                "setHash": group.set_hash,
            }
        if self.has_instructions:
            out["instructions"] = {"hash": self.instructions_hash}
        return out


def _read(path: Path) -> JSONValue:
    data = read_input(path)
    try:
        return parse_json(data, allow_bom=True, allow_lone_surrogates=True, max_depth=EXPORT_DEPTH)
    except JSONError as exc:
        raise JSONError(f"{path} has no canonical form: {exc.message}") from None


def _lists_of(doc: JSONValue) -> dict[Kind, list[JSONValue]] | None:
    if isinstance(doc, list):
        return {Kind.TOOL: list(doc)}
    if not isinstance(doc, dict):
        return None
    found: dict[Kind, list[JSONValue]] = {}
    result = doc.get("result")
    for kind in KINDS:
        for source in (result, doc):
            if isinstance(source, dict) and isinstance(source.get(kind.list_member), list):
                found[kind] = list(source[kind.list_member])
                break
    return found or None


def _instructions(doc: JSONValue) -> tuple[bool, str | None]:
    if not isinstance(doc, dict):
        return False, None
    for candidate in (doc.get("initialize"), doc.get("discover"), doc.get("result"), doc):
        if isinstance(candidate, dict) and isinstance(candidate.get("result"), dict):
            candidate = candidate["result"]
        if isinstance(candidate, dict) and "instructions" in candidate:
            value = candidate["instructions"]
            if value is not None and not isinstance(value, str):
                raise ListingError("instructions must be a string")
            return True, value
    return False, None


def _shallow_enough(definition: JSONValue, label: str) -> None:
    """The proxy's and ``pin``'s depth limit, counted the same way (core/snapshot.py)."""
    if deeper_than(definition, MAX_DEPTH):
        raise ListingError(
            f"a {label} is nested more than {MAX_DEPTH} levels deep (counted from the {label} "
            "itself)"
        )


def hash_files(paths: Sequence[Path]) -> HashReport:
    """Hash the pages of one listing, or one definition (a single non-listing object)."""
    docs = [_read(p) for p in paths]
    pages = [_lists_of(d) for d in docs]
    if len(docs) == 1 and pages[0] is None:
        doc = docs[0]
        if not isinstance(doc, dict):
            raise ListingError(f"{paths[0]} is neither a listing nor a definition object")
        key = next(
            (doc[k] for k in ("name", "uri", "uriTemplate") if isinstance(doc.get(k), str)), ""
        )
        _shallow_enough(doc, "definition")
        return HashReport(groups=(HashGroup(None, ((key, definition_hash(doc)),), None),))
    merged: dict[Kind, list[JSONValue]] = {}
    for path, page in zip(paths, pages, strict=True):
        if page is None:
            raise ListingError(f"{path} is not a page of a listing")
        for kind, items in page.items():
            merged.setdefault(kind, []).extend(items)
    groups = []
    for kind in KINDS:
        if kind not in merged:
            continue
        items = []
        for raw in merged[kind]:
            key = raw.get(kind.key_member) if isinstance(raw, dict) else None
            if not isinstance(key, str):
                raise ListingError(
                    f"a definition in the {kind.plural} listing has no string {kind.key_member}, "
                    "so the listing has no set hash"
                )
            _shallow_enough(raw, kind.value.replace("_", " "))
            items.append((key, definition_hash(raw)))
        ordered = sorted(items, key=lambda pair: (utf16_key(pair[0]), pair[1]))
        groups.append(HashGroup(kind, tuple(ordered), set_hash(items)))
    has, text = False, None
    for doc in docs:
        found, value = _instructions(doc)
        if found:
            has, text = True, value
    return HashReport(
        groups=tuple(groups), instructions_hash=instructions_hash(text), has_instructions=has
    )
