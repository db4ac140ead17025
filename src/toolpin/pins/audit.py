"""The local audit log: a hash chain of pin, drift, approve and forget events.

One JSON object per line. Each entry is ``{seq, prev, at, event, ...}`` plus ``hash`` =
SHA-256 of the RFC 8785 form of the entry without ``hash``; ``prev`` is the previous
entry's hash (64 zeros for the first). Appends happen under a cross-process lock, are
fsynced, and happen *before* the pin file they explain is written, so a crash can leave
an event without its pin but never a pin without its event. ``toolpin verify`` walks the
chain. The log never holds server text: ids, labels, hashes, counts and label keys only.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolpin.core.canonical import canonical_bytes, normalize, parse_json
from toolpin.errors import JSONError, StoreError
from toolpin.util.clock import utc_now
from toolpin.util.fs import locked, read_input

GENESIS: Final = "0" * 64
MAX_LOG_BYTES: Final = 1 << 30
"""The largest audit log ``verify`` reads (about three million entries)."""
MAX_ENTRY_BYTES: Final = 1 << 20
"""The longest audit entry: toolpin writes a few hundred bytes (ids, hashes, label keys)."""


def now_iso() -> str:
    """UTC time with milliseconds, ``2026-11-30T12:00:00.000Z``."""
    return utc_now(millis=True)


def _entry_hash(entry: Mapping[str, Any]) -> str:
    body = {k: v for k, v in entry.items() if k != "hash"}
    return hashlib.sha256(canonical_bytes(normalize(body))).hexdigest()


def _last_line(path: Path) -> bytes | None:
    """The last non-empty line of the log, reading only its own bytes from the end.

    Each chunk read backwards is searched once, so the cost is O(length of the last
    entry). A tail longer than :data:`MAX_ENTRY_BYTES` without a line break cannot be an
    entry toolpin wrote: it fails closed at once instead of scanning the whole file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        position = os.fstat(fd).st_size
        step = 64 * 1024
        chunks: list[bytes] = []
        scanned = 0
        started = False  # past the trailing newlines
        while position > 0:
            read = min(step, position)
            position -= read
            chunk = os.pread(fd, read, position)
            scanned += len(chunk)
            if not started:
                chunk = chunk.rstrip(b"\n")
                started = bool(chunk)
            if started:
                cut = chunk.rfind(b"\n")
                if cut >= 0:
                    chunks.append(chunk[cut + 1 :])
                    break
                chunks.append(chunk)
            if scanned > MAX_ENTRY_BYTES + 1:
                raise StoreError(
                    f"the audit log {path} ends with a corrupt line",
                    advice="Run `toolpin verify` to see where; restore the file from a backup.",
                )
    finally:
        os.close(fd)
    return b"".join(reversed(chunks)) or None


def append(path: Path, event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Append one event (under the log's lock) and return the written entry."""
    with locked(path.with_name(path.name + ".lock")):
        last = _last_line(path)
        seq, prev = 0, GENESIS
        if last is not None:
            try:
                previous = parse_json(last)
            except JSONError:
                raise StoreError(
                    f"the audit log {path} ends with a corrupt line",
                    advice="Run `toolpin verify` to see where; restore the file from a backup.",
                ) from None
            if not isinstance(previous, dict) or not isinstance(previous.get("hash"), str):
                raise StoreError(f"the audit log {path} ends with a corrupt entry")
            seq, prev = int(previous.get("seq", -1)) + 1, previous["hash"]
        entry: dict[str, Any] = {"seq": seq, "prev": prev, "at": now_iso(), "event": event}
        entry.update(fields)
        entry["hash"] = _entry_hash(entry)
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
    return entry


@dataclass(frozen=True)
class ChainReport:
    """Result of :func:`verify_chain`."""

    entries: int
    ok: bool
    problem: str | None = None
    line: int | None = None


def verify_chain(path: Path) -> ChainReport:
    """Walk the chain: every line parses, links to its predecessor and matches its hash."""
    if not os.path.lexists(path):
        return ChainReport(entries=0, ok=True)
    data = read_input(path, cap=MAX_LOG_BYTES, error=StoreError)
    prev = GENESIS
    count = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            entry = parse_json(raw)
        except JSONError as exc:
            return ChainReport(
                count, False, f"line {number} is not valid JSON ({exc.message})", number
            )
        if not isinstance(entry, dict) or not isinstance(entry.get("hash"), str):
            return ChainReport(count, False, f"line {number} is not an audit entry", number)
        if entry.get("prev") != prev:
            return ChainReport(count, False, f"broken link at line {number}", number)
        if entry.get("seq") != count:
            return ChainReport(count, False, f"sequence gap at line {number}", number)
        if _entry_hash(entry) != entry["hash"]:
            return ChainReport(count, False, f"entry hash mismatch at line {number}", number)
        prev = entry["hash"]
        count += 1
    return ChainReport(entries=count, ok=True)
