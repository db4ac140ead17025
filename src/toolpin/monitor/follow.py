"""One monitoring pass over a log: from the checkpoint kept last time to the one it serves now.

A pass:

1. takes the state file's lock (another pass on the same state stops with exit 2);
2. fetches the log's ``checkpoint``, opened with the pinned key only, and, with a policy,
   checks that its cosignatures make the policy's quorum;
3. proves that it extends the checkpoint kept last time (RFC 9162 consistency proof from
   the served tiles), and the checkpoint an interrupted pass was heading for: a smaller
   tree is a rollback, the same size with another root or a tree that does not extend the
   kept one is a fork;
4. reads every new entry bundle, one at a time, and proves each whole bundle included in
   the signed checkpoint (the root of its 256 leaf hashes, with a path of subtree hashes
   from the tiles) before reading any entry of it;
5. reports each proven entry that records a watched server (by name or server id) or
   whose change carries one of the watched labels (computed from the two versions'
   definitions, each read from its blob and checked against its digest and the entry);
6. keeps the new checkpoint (and, during a long pass, how far it got, so an interrupted
   pass resumes where it stopped).

Memory is bounded: one bundle, the upper tiles (``n / 65536`` of them) and a small cache
of subtree hashes. Any proof that fails stops the pass with exit 3 and writes both
checkpoints (the kept one and the served one) to the evidence folder; nothing is kept
from that pass beyond what was proven before it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolpin.errors import InputError, LogError, StoreError
from toolpin.evidence.errors import LogProblem
from toolpin.evidence.fetch import Fetcher
from toolpin.evidence.verify import (
    RemoteTree,
    check_against_kept,
    entry_value,
    fetch_bundle,
    fetch_checkpoint,
)
from toolpin.monitor import state as mstate
from toolpin.monitor.source import open_source, renew
from toolpin.publog.checkpoint import Checkpoint, open_checkpoint
from toolpin.publog.merkle import (
    MemoryTree,
    inclusion_proof,
    leaf_hash,
    perfect_root,
    subtree_hash,
    verify_inclusion,
)
from toolpin.publog.note import Verifier
from toolpin.publog.tiles import TILE_WIDTH, entries_path

if TYPE_CHECKING:
    from toolpin.core.snapshot import Snapshot
    from toolpin.publog.policy import Policy

SAVE_EVERY: Final = 64
"""A long pass writes how far it got every this many bundles (16,384 entries)."""
MAX_BLOB_BYTES: Final = 64 << 20
MAX_NODE_CACHE: Final = 4096
MAX_BUNDLE_CACHE: Final = 4
MAX_TEXT: Final = 128
Emit = Callable[[dict[str, Any]], None]
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Watch:
    """What to report: servers by name or server id, and change labels (label keys)."""

    servers: frozenset[str] = frozenset()
    labels: frozenset[str] = frozenset()


@dataclass
class PassResult:
    """What one pass did. ``exit_code``: 0 nothing to report, 1 reported entries,
    3 an inconsistency (``problem`` says which; ``evidence`` holds the files)."""

    exit_code: int
    origin: str
    size: int = 0
    since: int | None = None
    checked: int = 0
    reported: int = 0
    problem: dict[str, Any] | None = None
    evidence: list[str] = field(default_factory=list)
    kept_note: str | None = None
    served_note: str | None = None


class _Blocks:
    """The tree of a checkpoint seen one level per entry bundle: block ``n``'s hash is the
    root of bundle ``n``'s leaves (the last one possibly partial). RFC 9162's tree over
    these block hashes is the same tree as over the leaves, so a block's inclusion path
    is the path of its leaves above the bundle. Subtree hashes come from the tiles (they
    are only inputs to a proof against the signed root) and are cached, bounded."""

    def __init__(self, tree: RemoteTree) -> None:
        self.tree = tree
        self.count = -(-tree.size // TILE_WIDTH)
        self._cache: dict[tuple[int, int], bytes] = {}

    def node(self, level: int, index: int) -> bytes:
        key = (level, index)
        found = self._cache.get(key)
        if found is None:
            start = (index << level) * TILE_WIDTH
            end = min(((index + 1) << level) * TILE_WIDTH, self.tree.size)
            found = subtree_hash(self.tree, start, end)
            if len(self._cache) >= MAX_NODE_CACHE:
                self._cache.clear()
            self._cache[key] = found
        return found

    def proven(self, index: int, hashes: Sequence[bytes]) -> bool:
        """Whether bundle ``index`` with these leaf hashes is in the signed tree."""
        root = perfect_root(hashes) if len(hashes) == TILE_WIDTH else MemoryTree(hashes).root()
        try:
            path = inclusion_proof(self, index, self.count)
        except (LogError, ValueError):
            return False
        return verify_inclusion(root, index, self.count, path, self.tree.checkpoint.root)


class _Pass:
    def __init__(
        self,
        fetcher: Fetcher,
        tree: RemoteTree,
        watch: Watch,
        emit: Emit,
        st: mstate.MonitorState,
    ) -> None:
        self.fetcher = fetcher
        self.tree = tree
        self.blocks = _Blocks(tree)
        self.watch = watch
        self.emit = emit
        self.state = st
        self.reported = 0
        self._bundles: dict[int, list[bytes]] = {}

    def bundle(self, n: int) -> list[bytes]:
        """Entry bundle ``n`` of the tree, proven whole (else ``tampered``)."""
        cached = self._bundles.get(n)
        if cached is not None:
            return cached
        size = self.tree.size
        width = min(TILE_WIDTH, size - n * TILE_WIDTH)
        rel = entries_path(n, width)
        renew(self.fetcher)
        _, entries = fetch_bundle(self.fetcher, rel, width)
        if not self.blocks.proven(n, [leaf_hash(e) for e in entries]):
            raise LogProblem(
                "tampered", f"{rel} or the tiles above it do not match the signed checkpoint"
            )
        if len(self._bundles) >= MAX_BUNDLE_CACHE:
            self._bundles.pop(next(iter(self._bundles)))
        self._bundles[n] = entries
        return entries

    def entry(self, index: int) -> dict[str, Any]:
        n, offset = divmod(index, TILE_WIDTH)
        return entry_value(self.bundle(n)[offset])

    def look_at(self, index: int, value: dict[str, Any]) -> None:
        server = value.get("server")
        server = server if isinstance(server, dict) else {}
        sid, name = server.get("id"), server.get("name")
        matched: list[str] = []
        if self.watch.servers and (sid in self.watch.servers or name in self.watch.servers):
            matched.append("server")
        change = value.get("change")
        labels: list[str] | None = None
        if self.watch.labels or matched:
            labels = self.labels(index, value)
            if labels and self.watch.labels.intersection(labels):
                matched.append("labels")
        if not matched:
            return
        event = _event(self.tree.checkpoint, index, value, labels, matched, change)
        self.reported += 1
        self.state.recent.append(event)
        del self.state.recent[: -mstate.MAX_RECENT]
        self.emit(event)

    def labels(self, index: int, value: dict[str, Any]) -> list[str]:
        """The change's label keys (``new-server`` for a first entry), from the two
        versions' definitions; ``unknown`` when they cannot be read and checked."""
        previous = value.get("previous")
        if type(previous) is not int:
            return ["new-server"]
        if not 0 <= previous < index:
            return ["unknown"]
        try:
            old_value = self.entry(previous)
            old_snap = self.snapshot(old_value)
            new_snap = self.snapshot(value)
        except _Unreadable:
            return ["unknown"]
        if old_snap is None or new_snap is None:
            return ["unknown"]
        from toolpin.core.drift import change_keys, compare

        keys = sorted(
            {k for item in change_keys(compare(old_snap, new_snap)) for k in item["kinds"]}
        )
        return keys or ["package"]

    def snapshot(self, value: dict[str, Any]) -> Snapshot | None:
        """The definitions an entry records, read from its blob and checked against the
        blob's digest and the entry's surface digest (``None``: the entry has none)."""
        ref, digests = value.get("blob"), value.get("digests")
        if not isinstance(ref, str) or not isinstance(digests, dict):
            return None
        from toolpin.publog.entries import BLOB_REF

        if not BLOB_REF.fullmatch(ref):
            return None
        hexdigest = ref.removeprefix("sha256:")
        renew(self.fetcher)
        try:
            data = self.fetcher.get(f"blob/sha256/{hexdigest}", MAX_BLOB_BYTES, what="a blob")
        except LogProblem as exc:
            if exc.kind == "unreachable":
                raise _Unreadable from None
            raise
        if hashlib.sha256(data).hexdigest() != hexdigest:
            raise LogProblem("tampered", "a blob does not match its digest")
        import json

        from toolpin.lockfile.native import entry_from_json

        try:
            raw = json.loads(data)
            entry = entry_from_json(raw, path=Path(ref), name="a blob")
        except (ValueError, InputError):
            raise _Unreadable from None
        if not isinstance(raw, dict) or raw.get("surfaceHash") != digests.get("surface"):
            raise LogProblem("tampered", "a blob does not hold the definitions its entry names")
        return entry.snapshot


class _Unreadable(Exception):
    """Definitions that cannot be read (no labels for that change)."""


def _text(value: object) -> str | None:
    from toolpin.core.render import clip, visible

    return clip(visible(value), MAX_TEXT) if isinstance(value, str) else None


def _event(
    checkpoint: Checkpoint,
    index: int,
    value: dict[str, Any],
    labels: list[str] | None,
    matched: list[str],
    change: object,
) -> dict[str, Any]:
    from toolpin.evidence.lookup import entry_time

    server = value.get("server")
    server = server if isinstance(server, dict) else {}
    digests = value.get("digests")
    surface = digests.get("surface") if isinstance(digests, dict) else None
    previous = value.get("previous")
    return {
        "event": "entry",
        "origin": checkpoint.origin,
        "index": index,
        "checkpoint_size": checkpoint.size,
        "server_id": _text(server.get("id")),
        "server_name": _text(server.get("name")),
        "change": change
        if change in ("new", "definitions", "package")
        else ("definitions" if type(previous) is int else "new"),
        "observed_at": entry_time(value),
        "surface": surface if isinstance(surface, str) and len(surface) == 64 else None,
        "previous": previous if type(previous) is int else None,
        "labels": labels,
        "matched": matched,
    }


def default_state(home: Path, origin: str) -> Path:
    """``TOOLPIN_HOME/monitor/<sha256(origin)[:16]>.json``."""
    key = hashlib.sha256(origin.encode("utf-8")).hexdigest()[:16]
    return home / "monitor" / f"{key}.json"


def monitor(
    log: str,
    verifier: Verifier,
    *,
    state_path: Path,
    watch: Watch,
    emit: Emit,
    policy: Policy | None = None,
    evidence_dir: Path | None = None,
    atom: Path | None = None,
    timeout: float = 10.0,
    allow_private: bool = False,
    progress: Progress | None = None,
) -> PassResult:
    """One pass (see the module). Raises :class:`~toolpin.errors.ToolpinError` (exit 2)
    for unusable input, an unreachable log or a state file in use; a log that
    contradicts itself or its signed checkpoint is a :class:`PassResult` with exit 3
    (its problem is emitted too). ``atom``: write the feed of the last reported events."""
    with (
        open_source(log, timeout=timeout, allow_private=allow_private) as fetcher,
        mstate.locked_state(state_path),
    ):
        st = mstate.load(state_path, verifier.name)
        result = _run(fetcher, verifier, st, state_path, watch, emit, policy, progress)
        if result.problem is not None:
            _evidence(result, st, evidence_dir, state_path)
            st.recent.append(result.problem)
            del st.recent[: -mstate.MAX_RECENT]
            mstate.save(state_path, st)
            emit(result.problem)
        if atom is not None:
            from toolpin.monitor.report import write_atom

            write_atom(atom, verifier.name, st.recent)
        return result


def _run(
    fetcher: Fetcher,
    verifier: Verifier,
    st: mstate.MonitorState,
    state_path: Path,
    watch: Watch,
    emit: Emit,
    policy: Policy | None,
    progress: Progress | None,
) -> PassResult:
    kept = _open_kept(st.checkpoint, verifier, state_path)
    target = _open_kept(st.target, verifier, state_path)
    result = PassResult(0, verifier.name, since=kept.size if kept else None)
    result.kept_note = st.target or st.checkpoint
    try:
        checkpoint, served = fetch_checkpoint(fetcher, verifier)
        result.served_note = served
        result.size = checkpoint.size
        if policy is not None:
            from toolpin.publog.policy import PolicyError

            try:
                policy.check(served.encode("utf-8"), verifier)
            except PolicyError as exc:
                return _problem(result, "policy", exc.message)
        tree = RemoteTree(fetcher, checkpoint)
        for reference, note in ((kept, st.checkpoint), (target, st.target)):
            verdict = check_against_kept(tree, reference)
            if verdict is not None:
                result.kept_note = note
                return _problem(result, verdict[0], verdict[1])
        run = _Pass(fetcher, tree, watch, emit, st)
        start = (
            st.next
            if target is not None and st.next is not None
            else (kept.size if kept is not None else 0)
        )
        try:
            _scan(run, start, st, state_path, served, result, progress)
        finally:
            result.reported = run.reported
    except LogProblem as problem:
        if problem.kind == "unreachable" or (
            problem.kind == "bad-signature" and kept is None and target is None
        ):
            mstate.save(state_path, st)
            raise
        return _problem(result, problem.kind, problem.message)
    except LogError as exc:  # a malformed tree or entry the proofs could not use
        return _problem(result, "tampered", exc.message)
    result.exit_code = 1 if result.reported else 0
    return result


def _problem(result: PassResult, kind: str, message: str) -> PassResult:
    result.exit_code = 3
    result.problem = {
        "event": "inconsistency",
        "origin": result.origin,
        "kind": kind,
        "message": message,
        "kept_size": _size_of(result.kept_note),
        "served_size": result.size if result.served_note is not None else None,
        "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return result


def _size_of(note: str | None) -> int | None:
    from toolpin.publog.checkpoint import read_unverified

    if note is None:
        return None
    try:
        return read_unverified(note).size
    except LogError:
        return None


def _scan(
    run: _Pass,
    start: int,
    st: mstate.MonitorState,
    state_path: Path,
    served_note: str,
    result: PassResult,
    progress: Progress | None,
) -> None:
    size = run.tree.size
    first = start // TILE_WIDTH
    for done, n in enumerate(range(first, -(-size // TILE_WIDTH)), start=1):
        entries = run.bundle(n)
        for offset in range(max(start - n * TILE_WIDTH, 0), len(entries)):
            index = n * TILE_WIDTH + offset
            run.look_at(index, entry_value(entries[offset]))
            result.checked += 1
        if progress is not None:
            progress(n * TILE_WIDTH + len(entries), size)
        if done % SAVE_EVERY == 0 and n * TILE_WIDTH + len(entries) < size:
            st.target, st.next = served_note, n * TILE_WIDTH + len(entries)
            mstate.save(state_path, st)
    st.checkpoint, st.target, st.next = served_note, None, None
    mstate.save(state_path, st)


def _open_kept(note: str | None, verifier: Verifier, path: Path) -> Checkpoint | None:
    if note is None:
        return None
    try:
        return open_checkpoint(note, verifier)
    except LogError:
        raise StoreError(
            f"the checkpoint kept in {path} is not signed by this key",
            advice="Give the log's own key, or move the state file away to start over.",
        ) from None


def _evidence(
    result: PassResult, st: mstate.MonitorState, folder: Path | None, state_path: Path
) -> None:
    """Write the kept and the served checkpoint of an inconsistent pass as evidence."""
    from toolpin.util.fs import atomic_write

    assert result.problem is not None
    folder = folder or state_path.with_name(state_path.name + ".evidence")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    kind = result.problem["kind"]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for what, note in (("kept", result.kept_note), ("served", result.served_note)):
            if note is not None:
                path = folder / f"{stamp}-{kind}-{what}.checkpoint"
                atomic_write(path, note.encode("utf-8"), mode=0o600)
                result.evidence.append(str(path))
    except OSError as exc:
        raise StoreError(
            f"the evidence folder {folder} cannot be written ({exc.strerror})"
        ) from None
    result.problem["evidence"] = list(result.evidence)


__all__ = ["PassResult", "Watch", "default_state", "monitor"]
