"""Where the log comes from, and the only way its data reaches an answer: verified.

A directory is audited with :func:`toolpin.publog.verify.verify_log`, the function behind
``toolpin log verify``: the checkpoint must be signed by the pinned key and every entry it
covers must hash into its root. A URL is first mirrored into a cache directory (tiles,
entry bundles and blobs are immutable, so each is fetched once; only ``checkpoint`` is
fetched again) through the SSRF guard of :mod:`toolpin.probe.ssrf`, with a timeout per
request, a deadline per refresh and size caps; then the mirror is audited the same way.
Every audit is made against the last checkpoint this process (or, for a URL, this cache)
verified, so a log rolled back or forked since fails.

A URL given with ``home`` (``toolpin lookup`` passes ``TOOLPIN_HOME``) is also held to the
rules of :mod:`toolpin.evidence`, the ones ``toolpin run --log`` and ``toolpin log lookup``
follow: its checkpoint is checked against the one kept for that log in ``TOOLPIN_HOME``
(a consistency proof from its tiles) and kept in its place, and a log found forked or
rolled back is marked distrusted there and answers nothing (``distrusted``) until a
person runs ``toolpin log trust --reset ORIGIN``. The mirror must then hold exactly the
checkpoint so checked.

Without a log, without a key, or when the audit fails, :meth:`LogSource.state` says so
with a fixed reason key and holds no data at all: answers never come from an unverified
log.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Final, Literal

from toolpin.errors import LogError, ProbeError, ToolpinError
from toolpin.lookup.history import ChangeLabeller, ServerHistory, index_servers
from toolpin.publog.blobs import BlobStore
from toolpin.publog.checkpoint import Checkpoint, open_checkpoint
from toolpin.publog.entries import blob_reference, decode_entry
from toolpin.publog.note import Verifier
from toolpin.publog.tiles import (
    CHECKPOINT_FILE,
    TILE_WIDTH,
    decode_bundle,
    entries_path,
    max_file_bytes,
    read_bounded,
    tiles_for_size,
)
from toolpin.util.fs import atomic_write, ensure_private_dir

Reason = Literal[
    "verified",
    "not-configured",
    "no-verifier-key",
    "unverified",
    "unreachable",
    "too-large",
    "distrusted",
]

REFRESH_SECONDS: Final = 300.0
"""How long a verified remote checkpoint is answered from before it is fetched again."""
REQUEST_TIMEOUT: Final = 15.0
REFRESH_DEADLINE: Final = 120.0
MAX_MIRROR_BYTES: Final = 512 << 20
MAX_BLOB_BYTES: Final = 32 << 20
MAX_ENTRIES: Final = 5_000_000
USER_AGENT: Final = "toolpin-lookup"


@dataclass(frozen=True)
class LogState:
    """The log as the last check found it. Data only when ``reason == "verified"``."""

    reason: Reason
    kind: Literal["directory", "url"] | None = None
    checkpoint: Checkpoint | None = None
    checked_at: str | None = None
    modified_at: str | None = None
    """When the checkpoint was written (file time or HTTP Last-Modified; not signed)."""
    servers: dict[str, ServerHistory] = field(default_factory=dict)
    labeller: ChangeLabeller | None = None

    @property
    def verified(self) -> bool:
        return self.reason == "verified"

    @property
    def newest_entry_at(self) -> str | None:
        times = [h.observations[-1].observed_at for h in self.servers.values()]
        return max(times) if times else None


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _now() -> str:
    return _iso(datetime.now(UTC))


def read_entries(root: Path, size: int) -> Iterator[tuple[int, Any]]:
    """The decoded entries ``0..size-1`` of an audited log (the files the audit read)."""
    full, last = divmod(size, TILE_WIDTH)
    for n in range(full + (1 if last else 0)):
        width = TILE_WIDTH if n < full else last
        rel = entries_path(n, width)
        bundle = decode_bundle(read_bounded(root / rel, max_file_bytes(rel)))
        for offset, raw in enumerate(bundle):
            yield n * TILE_WIDTH + offset, decode_entry(raw, canonical=False)


class LogSource:
    """A log directory or URL plus the pinned verifier key; thread-safe."""

    def __init__(
        self,
        location: str | None,
        verifier: Verifier | None,
        *,
        cache_dir: Path | None = None,
        allow_private: bool = False,
        refresh_seconds: float = REFRESH_SECONDS,
        home: Path | None = None,
    ) -> None:
        self.location = location
        self.home = home
        """``TOOLPIN_HOME``: the kept checkpoint and distrust marker of a URL log."""
        self.allow_private = allow_private
        self.verifier = verifier
        self.is_url = location is not None and location.startswith(("http://", "https://"))
        self.refresh_seconds = refresh_seconds
        self._lock = threading.Lock()
        self._state: LogState | None = None
        self._checked = 0.0
        self._kept: bytes | None = None
        self._mirror: Mirror | None = None
        if self.is_url and location is not None and verifier is not None:
            base = cache_dir if cache_dir is not None else _default_cache()
            key = hashlib.sha256(location.encode("utf-8")).hexdigest()[:16]
            self._mirror = Mirror(location, base / key, allow_private=allow_private)

    @property
    def kind(self) -> Literal["directory", "url"] | None:
        if self.location is None:
            return None
        return "url" if self.is_url else "directory"

    def state(self) -> LogState:
        """The current verified state (re-checked when the log may have moved on)."""
        with self._lock:
            if self.location is None:
                return LogState("not-configured")
            if self.verifier is None:
                return LogState("no-verifier-key", self.kind)
            if self._mirror is not None:
                fresh = time.monotonic() - self._checked < self.refresh_seconds
                if self._state is not None and fresh:
                    return self._state
                self._state = self._check_url(self._mirror, self.verifier)
                self._checked = time.monotonic()
                return self._state
            return self._check_directory(Path(self.location), self.verifier)

    # ------------------------------------------------------------------ directory

    def _check_directory(self, root: Path, verifier: Verifier) -> LogState:
        try:
            note = read_bounded(root / CHECKPOINT_FILE, max_file_bytes(CHECKPOINT_FILE))
            mtime = (root / CHECKPOINT_FILE).stat().st_mtime
        except (OSError, LogError):
            return LogState("unreachable", "directory", checked_at=_now())
        if self._state is not None and self._state.verified and note == self._kept:
            return self._state
        modified = _iso(datetime.fromtimestamp(mtime, UTC))
        self._state = self._audit(root, verifier, "directory", modified, BlobStore(root).get)
        if self._state.verified:
            self._kept = note
        return self._state

    def _audit(
        self,
        root: Path,
        verifier: Verifier,
        kind: Literal["directory", "url"],
        modified: str | None,
        read_blob: Any,
    ) -> LogState:
        from toolpin.publog.verify import verify_log

        result = verify_log(root, verifier, since=self._kept)
        checked = _now()
        if not result.ok or result.checkpoint is None:
            return LogState("unverified", kind, checked_at=checked)
        checkpoint = result.checkpoint
        if checkpoint.size > MAX_ENTRIES:
            return LogState("too-large", kind, checked_at=checked)
        try:
            servers = index_servers(read_entries(root, checkpoint.size))
        except (OSError, LogError):
            return LogState("unverified", kind, checked_at=checked)
        return LogState(
            "verified",
            kind,
            checkpoint=checkpoint,
            checked_at=checked,
            modified_at=modified,
            servers=servers,
            labeller=ChangeLabeller(root, read_blob),
        )

    # ------------------------------------------------------------------------ url

    def _kept_check(self, verifier: Verifier) -> tuple[int, bytes] | LogState | None:
        """The log's checkpoint checked against the one kept in ``home`` (kept, or the log
        distrusted), as ``(size, root)``; a :class:`LogState` when that fails; ``None``
        without a ``home``."""
        if self.home is None or self.location is None:
            return None
        from toolpin.evidence import LogProblem
        from toolpin.evidence.fetch import Fetcher
        from toolpin.evidence.lookup import refuse_distrusted, verified_tree
        from toolpin.evidence.state import load

        try:
            refuse_distrusted(load(self.home, verifier.name))
            with Fetcher(
                self.location, timeout=REQUEST_TIMEOUT, allow_private=self.allow_private
            ) as fetcher:
                tree = verified_tree(fetcher, verifier, self.home)
        except LogProblem as exc:
            if exc.kind in ("fork", "rollback", "distrusted"):
                return LogState("distrusted", "url", checked_at=_now())
            if exc.kind == "unreachable":
                if self._state is not None and self._state.verified:
                    return self._state
                return LogState("unreachable", "url", checked_at=_now())
            return LogState("unverified", "url", checked_at=_now())
        except (ToolpinError, OSError):  # a kept state this machine cannot read, a bad key
            return LogState("unverified", "url", checked_at=_now())
        return tree.checkpoint.size, tree.checkpoint.root

    def _check_url(self, mirror: Mirror, verifier: Verifier) -> LogState:
        kept = self._kept_check(verifier)
        if isinstance(kept, LogState):
            return kept
        if self._kept is None:
            self._kept = mirror.kept()
        try:
            modified = mirror.refresh(verifier)
        except TooLarge:
            return LogState("too-large", "url", checked_at=_now())
        except LogError:
            # A checkpoint not signed by the pinned key, a malformed file, a blob that
            # does not match its digest: the remote log is bad, and nothing is kept of it.
            mirror.discard()
            return LogState("unverified", "url", checked_at=_now())
        except (ProbeError, OSError):
            # A refused checkpoint, a network failure or a cap: keep the last verified
            # state only if there is one (it is still a verified answer, and says its time).
            if self._state is not None and self._state.verified:
                return self._state
            return LogState("unreachable", "url", checked_at=_now())
        state = self._audit(mirror.root, verifier, "url", modified, BlobStore(mirror.root).get)
        if state.verified and kept is not None and state.checkpoint is not None:
            mirrored = (state.checkpoint.size, state.checkpoint.root)
            if mirrored != kept:
                # The log moved between the two reads: the mirrored checkpoint must pass
                # the same check against the kept one before it is answered from.
                again = self._kept_check(verifier)
                if isinstance(again, LogState) and again.reason == "distrusted":
                    mirror.discard()
                    return again
                if again != mirrored:
                    return LogState("unreachable", "url", checked_at=_now())
        if state.verified:
            note = (mirror.root / CHECKPOINT_FILE).read_bytes()
            mirror.keep(note)
            self._kept = note
        else:
            mirror.discard()
        return state


def _default_cache() -> Path:
    from toolpin.util.fs import toolpin_cache

    return toolpin_cache() / "lookup"


class TooLarge(LogError):
    """The remote log is bigger than the mirror's caps."""


class Mirror:
    """A local copy of a remote tlog-tiles log, fetched under the SSRF guard."""

    def __init__(
        self,
        url: str,
        directory: Path,
        *,
        allow_private: bool = False,
        max_bytes: int = MAX_MIRROR_BYTES,
        timeout: float = REQUEST_TIMEOUT,
        deadline: float = REFRESH_DEADLINE,
    ) -> None:
        self.base = url if url.endswith("/") else url + "/"
        self.directory = directory
        self.root = directory / "log"
        self.allow_private = allow_private
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.deadline = deadline

    def kept(self) -> bytes | None:
        """The last checkpoint verified from this cache (for rollback detection)."""
        try:
            return read_bounded(self.directory / "kept-checkpoint", max_file_bytes(CHECKPOINT_FILE))
        except (OSError, LogError):
            return None

    def keep(self, note: bytes) -> None:
        atomic_write(self.directory / "kept-checkpoint", note, mode=0o600)

    def discard(self) -> None:
        """Forget the mirrored files (a failed audit must not poison the next one)."""
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)

    def refresh(self, verifier: Verifier) -> str | None:
        """Fetch the checkpoint and every file it needs that the mirror lacks.

        The checkpoint's signature is checked before anything else is fetched, and the
        checkpoint is written last. Returns its ``Last-Modified`` time, if the server sent
        one. Raises :class:`~toolpin.errors.ProbeError` (network, guard, HTTP status) or
        :class:`~toolpin.errors.LogError` (a refused checkpoint, a cap).
        """
        from toolpin.probe.ssrf import AddressPolicy, GuardedClient

        ensure_private_dir(self.directory.parent)
        ensure_private_dir(self.directory)
        self.root.mkdir(exist_ok=True)
        ends = time.monotonic() + self.deadline
        budget = [self.max_bytes]
        policy = AddressPolicy(allow_private=self.allow_private)
        with GuardedClient(policy, timeout=self.timeout, user_agent=USER_AGENT) as client:
            note, modified = self._get(client, CHECKPOINT_FILE, ends, budget)
            checkpoint = open_checkpoint(note, verifier)
            if checkpoint.size > MAX_ENTRIES:
                raise TooLarge("the log has more entries than the lookup mirrors")
            for ref in tiles_for_size(checkpoint.size):
                rels = [ref.path] + ([ref.entries_path] if ref.level == 0 else [])
                for rel in rels:
                    if not (self.root / rel).is_file():
                        data, _ = self._get(client, rel, ends, budget)
                        self._store(rel, data)
            for blob in self._blob_refs(checkpoint.size):
                rel = "blob/sha256/" + blob.removeprefix("sha256:")
                if not (self.root / rel).is_file():
                    data, _ = self._get(client, rel, ends, budget, limit=MAX_BLOB_BYTES)
                    if "sha256:" + hashlib.sha256(data).hexdigest() != blob:
                        raise LogError("a blob does not match its digest")
                    self._store(rel, data)
        self._store(CHECKPOINT_FILE, note)
        return modified

    def _blob_refs(self, size: int) -> list[str]:
        refs: dict[str, None] = {}
        for _, value in read_entries(self.root, size):
            ref = blob_reference(value)
            if ref is not None:
                refs[ref] = None
        return list(refs)

    def _store(self, rel: str, data: bytes) -> None:
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, data)

    def _get(
        self,
        client: Any,
        rel: str,
        ends: float,
        budget: list[int],
        *,
        limit: int | None = None,
    ) -> tuple[bytes, str | None]:
        cap = max_file_bytes(rel) if limit is None else limit
        remaining = ends - time.monotonic()
        if remaining <= 0:
            raise ProbeError("the log took too long to fetch")
        with client.stream(
            "GET",
            self.base + rel,
            headers={"Accept": "application/octet-stream, text/plain"},
            timeout=min(self.timeout, remaining),
        ) as response:
            if response.status_code != 200:
                raise ProbeError(f"the log answered HTTP {response.status_code}")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > cap:
                    raise LogError("a log file is larger than any valid file of its kind")
                if size > budget[0]:
                    raise TooLarge("the log is larger than the lookup mirrors")
                if time.monotonic() > ends:
                    raise ProbeError("the log took too long to fetch")
                chunks.append(chunk)
            budget[0] -= size
            return b"".join(chunks), _last_modified(response.headers.get("last-modified"))


def _last_modified(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return _iso(parsedate_to_datetime(value))
    except (TypeError, ValueError):
        return None


__all__ = ["LogSource", "LogState", "Mirror", "read_entries"]
