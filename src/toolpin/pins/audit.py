"""The local audit log: a hash chain of pin, drift, approve, forget and repair events.

One JSON object per line. Each entry is ``{seq, prev, at, event, ...}`` plus ``hash`` =
SHA-256 of the RFC 8785 form of the entry without ``hash``; ``prev`` is the previous
entry's hash (64 zeros for the first). Appends happen under a cross-process lock, are
fsynced, and happen *before* the pin file they explain is written, so a crash can leave
an event without its pin but never a pin without its event. ``toolpin verify`` walks the
chain. The log never holds server text: ids, labels, hashes, counts and label keys only.

A broken chain is never extended: :func:`append` verifies the log first and raises
:class:`~toolpin.errors.AuditChainBroken` when it does not verify, so a hand-edited line
stops every pin, drift, approve and forget until :func:`repair` (``toolpin verify
--repair``) keeps the broken file aside, rewrites the good prefix and records a ``repair``
entry. Verifying stays cheap: ``audit.log.verified`` remembers how many bytes were verified
last, their SHA-256 and the chain's head there, so an append re-hashes the prefix (memory
speed) and walks only the entries written since; any other change to the prefix means a
full walk. The file is a cache: deleting it costs one full walk.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolpin.core.canonical import canonical_bytes, normalize, parse_json
from toolpin.errors import AuditChainBroken, JSONError, StoreError
from toolpin.util.clock import utc_now
from toolpin.util.fs import atomic_write, locked, read_input

GENESIS: Final = "0" * 64
VERIFIED_SUFFIX: Final = ".verified"
"""Beside the log: the cache of what was verified last (see the module doc)."""
MAX_LOG_BYTES: Final = 1 << 30
"""The largest audit log ``verify`` and :func:`append` read (about three million entries)."""
MAX_ENTRY_BYTES: Final = 1 << 20
"""The longest audit entry: toolpin writes a few hundred bytes (ids, hashes, label keys);
a longer line is not one of its entries and is not parsed."""


def now_iso() -> str:
    """UTC time with milliseconds, ``2026-11-30T12:00:00.000Z``."""
    return utc_now(millis=True)


def _entry_hash(entry: Mapping[str, Any]) -> str:
    body = {k: v for k, v in entry.items() if k != "hash"}
    return hashlib.sha256(canonical_bytes(normalize(body))).hexdigest()


@dataclass(frozen=True)
class ChainReport:
    """Result of :func:`verify_chain`: ``good_bytes`` is where the verified prefix ends
    (after its last good line), ``head`` the hash of its last entry."""

    entries: int
    ok: bool
    problem: str | None = None
    line: int | None = None
    good_bytes: int = 0
    head: str = GENESIS


def _walk(data: bytes, start: int = 0, seq: int = 0, prev: str = GENESIS) -> ChainReport:
    """Verify the entries of ``data`` from byte ``start``, the chain standing at entry
    ``seq`` with head ``prev`` there: every line parses, links to its predecessor, has
    the next sequence number and matches its own hash. Blank lines are skipped."""
    number = 0  # lines since ``start`` (those before are counted only for a report)
    good = position = start
    count = seq
    size = len(data)
    while position < size:
        end = data.find(b"\n", position)
        end = size if end < 0 else end
        raw = data[position:end]
        number += 1
        position = end + 1
        if not raw.strip():
            continue
        problem, digest = _check(raw, prev, count)
        if problem is not None:
            number += data.count(b"\n", 0, start)
            return ChainReport(count, False, f"{problem} at line {number}", number, good, prev)
        prev = digest
        count += 1
        good = min(position, size)
    return ChainReport(count, True, None, None, good, prev)


def _check(raw: bytes, prev: str, seq: int) -> tuple[str | None, str]:
    """``(problem, hash)`` of one line read as the entry ``seq`` after ``prev``: the
    problem is None when the entry is good."""
    if len(raw) > MAX_ENTRY_BYTES:
        return "a line too long to be an entry", ""
    try:
        entry = parse_json(raw)
    except JSONError:
        return "invalid JSON", ""
    if not isinstance(entry, dict) or not isinstance(entry.get("hash"), str):
        return "not an audit entry", ""
    if entry.get("prev") != prev:
        return "broken link", ""
    if entry.get("seq") != seq:
        return "sequence gap", ""
    try:
        digest = _entry_hash(entry)
    except (ValueError, TypeError):
        return "not an audit entry", ""
    if digest != entry["hash"]:
        return "entry hash mismatch", ""
    return None, digest


def _read_log(path: Path) -> bytes:
    try:
        return read_input(path, cap=MAX_LOG_BYTES, error=StoreError)
    except StoreError:
        if not os.path.lexists(path):
            return b""
        raise


def _cache_path(path: Path) -> Path:
    return path.with_name(path.name + VERIFIED_SUFFIX)


def _remembered(path: Path, data: bytes) -> tuple[int, int, str, Any] | None:
    """``(offset, seq, head, sha256 of the prefix so far)`` of the last verification when
    the log still starts with exactly the bytes verified then; ``None`` otherwise (then
    everything is walked)."""
    try:
        cached = json.loads(_cache_path(path).read_bytes())
        offset, digest = int(cached["offset"]), str(cached["sha256"])
        seq, head = int(cached["seq"]), str(cached["head"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not 0 < offset <= len(data) or data[offset - 1 : offset] != b"\n":
        return None
    prefix = hashlib.sha256(memoryview(data)[:offset])
    if prefix.hexdigest() != digest:
        return None
    return offset, seq, head, prefix


def _remember(path: Path, offset: int, digest: str, seq: int, head: str) -> None:
    """Record a verified prefix (best effort: the cache only saves time)."""
    if not offset:
        return
    body = json.dumps({"offset": offset, "sha256": digest, "seq": seq, "head": head})
    # Rewritten in place, without fsync: a torn or lost write is JSON that does not parse
    # or an older state, and either only costs a full walk next time.
    with contextlib.suppress(OSError):
        fd = os.open(_cache_path(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, body.encode() + b"\n")
        finally:
            os.close(fd)


def _verified(path: Path, data: bytes) -> tuple[ChainReport, Any]:
    """The chain of ``data`` verified, incrementally from the remembered prefix if any,
    and a SHA-256 object fed with all of ``data`` (each byte is hashed once)."""
    known = _remembered(path, data)
    if known is None:
        return _walk(data), hashlib.sha256(data)
    offset, seq, head, prefix = known
    prefix.update(memoryview(data)[offset:])
    return _walk(data, offset, seq, head), prefix


def broken_error(path: Path, report: ChainReport) -> AuditChainBroken:
    """The one-line refusal to extend a broken chain."""
    return AuditChainBroken(
        f"the audit log {path} is broken ({report.problem}), so toolpin records nothing "
        "more in it; nothing was changed. Repair it with: toolpin verify --repair"
    )


def append(path: Path, event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Append one event (under the log's lock) and return the written entry.

    The log is verified first (incrementally): a broken chain raises
    :class:`~toolpin.errors.AuditChainBroken` and is left as it is."""
    with locked(path.with_name(path.name + ".lock")):
        data = _read_log(path)
        report, hashed = _verified(path, data)
        if not report.ok:
            raise broken_error(path, report)
        return _append_verified(path, data, hashed, report, event, fields)


def _append_verified(
    path: Path,
    data: bytes,
    hashed: Any,
    report: ChainReport,
    event: str,
    fields: Mapping[str, Any],
) -> dict[str, Any]:
    """Append after ``report`` (a verified chain ending ``data``); ``hashed``: SHA-256 of
    ``data`` so far, for the cache."""
    entry: dict[str, Any] = {
        "seq": report.entries,
        "prev": report.head,
        "at": now_iso(),
        "event": event,
    }
    entry.update(fields)
    entry["hash"] = _entry_hash(entry)
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    if data and not data.endswith(b"\n"):  # a last line saved without its line break
        line = b"\n" + line
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    hashed.update(line)
    _remember(path, len(data) + len(line), hashed.hexdigest(), report.entries + 1, entry["hash"])
    return entry


def verify_chain(path: Path) -> ChainReport:
    """Walk the whole chain (no cache): every line parses, links to its predecessor,
    has the next sequence number and matches its hash."""
    if not os.path.lexists(path):
        return ChainReport(entries=0, ok=True)
    data = read_input(path, cap=MAX_LOG_BYTES, error=StoreError)
    report = _walk(data)
    if report.ok and report.good_bytes == len(data) and data.endswith(b"\n"):
        _remember(path, len(data), hashlib.sha256(data).hexdigest(), report.entries, report.head)
    return report


@dataclass(frozen=True)
class Repair:
    """What :func:`repair` did: the broken file kept as ``kept_as``, ``entries`` good
    entries rewritten, the problem found, and the ``repair`` entry appended."""

    kept_as: Path
    entries: int
    problem: str
    entry: dict[str, Any]


def repair(path: Path, *, now: str | None = None) -> Repair | None:
    """Repair a broken chain (``toolpin verify --repair``); ``None`` when it verifies.

    Under the log's lock: the broken file is kept as ``audit.log.broken-<UTC time>``
    (a hard link, else a copy, made before anything is replaced), the log is replaced
    atomically by its good prefix (every line before the first bad one, byte for byte)
    and a ``repair`` entry naming the kept file, the problem and the broken file's
    SHA-256 is appended, so the new chain verifies and says what happened."""
    import shutil

    with locked(path.with_name(path.name + ".lock")):
        if not os.path.lexists(path):
            return None
        data = read_input(path, cap=MAX_LOG_BYTES, error=StoreError)
        report = _walk(data)
        if report.ok:
            return None
        stamp = (now or now_iso()).replace("-", "").replace(":", "").split(".")[0] + "Z"
        kept = path.with_name(f"{path.name}.broken-{stamp}")
        n = 1
        while os.path.lexists(kept):
            n += 1
            kept = path.with_name(f"{path.name}.broken-{stamp}-{n}")
        try:
            os.link(path, kept)
        except OSError:
            shutil.copyfile(path, kept)
        good = data[: report.good_bytes]
        if good and not good.endswith(b"\n"):
            good += b"\n"
        try:
            atomic_write(path, good, mode=0o600)
        except OSError:
            os.unlink(kept)
            raise
        fields = {
            "keptAs": kept.name,
            "problem": report.problem,
            "kept": report.entries,
            "brokenSha256": hashlib.sha256(data).hexdigest(),
        }
        prefix = ChainReport(report.entries, True, None, None, len(good), report.head)
        entry = _append_verified(path, good, hashlib.sha256(good), prefix, "repair", fields)
        return Repair(kept, report.entries, report.problem or "", entry)
