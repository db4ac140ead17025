"""Log entries: one RFC 8785 (JCS) JSON object per entry, at most 65,535 bytes.

The entry bundle format of tlog-tiles prefixes each entry with a big-endian uint16 length,
so an entry cannot exceed 65,535 bytes; large content (full definition lists) goes into the
content-addressed blob store and the entry refers to it with a top-level member
``"blob": "sha256:<64 lower-case hex>"`` (:data:`BLOB_MEMBER`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, NoReturn

import orjson
import rfc8785

from toolpin.core.canonical import canonical_parsed, unique_members
from toolpin.errors import JSONError, LogError
from toolpin.publog.tilepaths import MAX_ENTRY_BYTES

BLOB_MEMBER = "blob"
BLOB_REF = re.compile(r"sha256:[0-9a-f]{64}")

__all__ = [
    "BLOB_MEMBER",
    "MAX_ENTRY_BYTES",
    "EntryError",
    "blob_reference",
    "decode_entry",
    "encode_entry",
]


class EntryError(LogError):
    """An observation record that cannot be a log entry."""


def encode_entry(record: Mapping[str, Any]) -> bytes:
    """The RFC 8785 bytes of ``record``; refuses anything over 65,535 bytes."""
    if not isinstance(record, Mapping):
        raise EntryError("a log entry must be a JSON object")
    try:
        data = rfc8785.dumps(dict(record))
    except rfc8785.CanonicalizationError as exc:
        raise EntryError(f"the record cannot be canonicalised: {type(exc).__name__}") from None
    except TypeError:
        raise EntryError("the record holds a value that is not JSON") from None
    if len(data) > MAX_ENTRY_BYTES:
        raise EntryError(
            f"the record is {len(data):,} bytes once canonicalised; "
            f"a log entry holds at most {MAX_ENTRY_BYTES:,}",
            advice='Store large content with BlobStore.put and reference it as "blob".',
        )
    blob_reference(record)
    return data


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _canonical_value(data: bytes) -> dict[str, Any] | None:
    """The entry's value when ``data`` is certainly a canonical JSON object, else ``None``.

    ``orjson`` parses (it refuses what the strict parser refuses but keeps the last of
    repeated member names), then the canonical form of the value must give ``data`` back
    byte for byte: a text with a repeated name, a non-canonical number or any other
    spelling cannot. Then the value is exactly what :func:`json.loads` returns."""
    try:
        value = orjson.loads(data)
    except ValueError:  # orjson.JSONDecodeError
        return None
    if type(value) is not dict:
        return None
    try:
        same = canonical_parsed(value) == data
    except JSONError:
        return None
    return value if same else None


def decode_entry(data: bytes, *, canonical: bool = True) -> dict[str, Any]:
    """Parse a log entry: a strict JSON object, in RFC 8785 canonical form unless
    ``canonical`` is false (the writer checks the form; the audit only needs the value).

    Without ``canonical``, the entries the writer wrote (canonical ones) take a fast path
    that proves it (:func:`_canonical_value`); any other bytes are parsed strictly."""
    if not canonical:
        fast = _canonical_value(data)
        if fast is not None:
            return fast
    try:
        text = data.decode("utf-8")
        value = json.loads(text, object_pairs_hook=unique_members, parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError):
        raise EntryError("the entry is not strict UTF-8 JSON") from None
    if not isinstance(value, dict):
        raise EntryError("the entry is not a JSON object")
    if not canonical:
        return value
    try:
        expected = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        raise EntryError("the entry holds a number outside RFC 8785's range") from None
    if expected != data:
        raise EntryError("the entry is not in RFC 8785 canonical form")
    return value


def blob_reference(record: Mapping[str, Any]) -> str | None:
    """The ``"blob"`` reference of a record (``"sha256:<hex>"``), or ``None``."""
    if BLOB_MEMBER not in record:
        return None
    ref = record[BLOB_MEMBER]
    if not isinstance(ref, str) or not BLOB_REF.fullmatch(ref):
        raise EntryError('the "blob" member is not "sha256:<64 lower-case hex>"')
    return ref
