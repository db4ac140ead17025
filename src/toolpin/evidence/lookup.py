"""``look_up``: is this digest publicly recorded? Verified end to end on this machine.

One lookup:

1. the kept state of the log (named by the key's origin) is read; a distrusted log is
   refused before anything is fetched;
2. the ``checkpoint`` is fetched and opened with the pinned key; under the state's lock it
   is checked against the kept checkpoint (:func:`~toolpin.evidence.verify.check_against_kept`)
   and kept, or the log is marked distrusted (fork, rollback);
3. the digest index bucket ``api/v1/digests/<first d hex>.json`` is fetched: an untrusted
   hint. ``d`` is the prefix length the site publishes in ``api/v1/digests/index.json``
   (no such file: the old layout, 3), read once and kept in the bundle cache
   (:data:`DIGITS_MARK`), so a warm lookup asks nothing more than before; it is read again
   only when the kept length finds no bucket (the site moved to a longer prefix as its
   log grew) or a bucket of another length. A length longer than the rule of
   :mod:`toolpin.core.digestindex` allows for the verified tree's size is refused: it
   would tell the host more of the digest. The bucket's ``prefix`` must be the one asked
   for, and the checkpoint it names must be a prefix of the verified tree (consistency
   proof);
4. each entry the bucket lists for the digest is fetched from its entry bundle, proven
   included in the verified checkpoint, decoded, and counted only if its own
   ``digests.<kind>`` is the digest. A bucket that lists an entry recording another
   digest is not believed for that entry. A proven entry bundle is kept in
   ``TOOLPIN_HOME/cache/logs/`` (:func:`bundle_cache`) and read from there next time,
   proven again each time;
5. the server's earlier versions are read by following the recording entry's
   ``previous`` links (each entry proven the same way).

A miss (``NeverRecorded``) is only as complete as the index: a site that leaves a digest
out of its bucket makes it look unrecorded. A lying ``index.json`` can do no more: it
sends the lookup to a bucket that is missing (a problem, not a miss) or that omits the
digest, the same as a lying bucket, and a hit is proven from the entry whatever the
index says. Anyone can audit both against the log (``toolpin log verify``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolpin.core import digestindex
from toolpin.errors import LogError
from toolpin.evidence import state
from toolpin.evidence.errors import LogProblem
from toolpin.evidence.fetch import Fetcher, private_allowed
from toolpin.evidence.verify import (
    RemoteTree,
    bucket_consistent,
    check_against_kept,
    entry_value,
    fetch_raw_checkpoint,
    open_fetched,
)
from toolpin.publog.checkpoint import Checkpoint, open_checkpoint, read_unverified
from toolpin.publog.note import Verifier
from toolpin.util.closing import Closing

if TYPE_CHECKING:
    from toolpin.publog.policy import Policy

BUCKET_DIR: Final = "api/v1/digests"
INDEX: Final = f"{BUCKET_DIR}/index.json"
"""The site's prefix length, ``{"prefix_digits": d}``; absent: the old layout, 3 digits."""
MAX_INDEX_BYTES: Final = 1024
DIGITS_MARK: Final = "digest-prefix"
"""In the bundle cache: the prefix length last read from the log's ``index.json`` (one
digit). A hint like the index itself; deleting it costs the next lookup one request."""
MAX_BUCKET_BYTES: Final = 1 << 20
MAX_CHECKED_ENTRIES: Final = 64
"""At most this many entries of one digest are fetched and proven per lookup."""
MAX_VERSION_HOPS: Final = 32
"""How far back the ``previous`` links are followed for the server's other versions."""
DIGEST: Final = re.compile(r"[0-9a-f]{64}")
DIGEST_PREFIX: Final = re.compile(r"[0-9a-f]{1,64}")
VERSION: Final = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_~-]{0,63}")
TIME: Final = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
KIND_MEMBERS: Final = {"surface": "surface", "tools": "tools"}


@dataclass(frozen=True, slots=True)
class LogRef:
    url: str
    """Base URL of the published site/log."""
    vkey: str
    """The verifier key text (note format, as ``toolpin log`` keys are)."""
    policy: str | None = None
    """A witness policy file (:mod:`toolpin.publog.policy`): every checkpoint fetched must
    carry its quorum's cosignatures, else the log is not believed (``bad-signature``)."""


@dataclass(frozen=True, slots=True)
class Recorded:
    origin: str
    checkpoint_size: int
    entry_index: int
    recorded_at: str
    """ISO UTC of the first entry that recorded this digest ("" if that entry has no
    well-formed time)."""
    versions: tuple[tuple[str | None, str], ...]
    """(server version, first recorded ISO) of this server's other, earlier versions."""


@dataclass(frozen=True, slots=True)
class NeverRecorded:
    origin: str
    checkpoint_size: int


def normalise_digest(digest: str) -> str:
    """64 lower-case hex digits (a ``sha256:`` prefix is accepted); else LogError."""
    text = digest.strip().lower().removeprefix("sha256:")
    if not DIGEST.fullmatch(text):
        raise LogError("a digest is 64 hex digits (SHA-256), optionally prefixed sha256:")
    return text


def verifier_of(vkey: str) -> Verifier:
    try:
        return Verifier.from_text(vkey.strip())
    except LogError as exc:
        raise LogError(f"unusable verifier key: {exc.message}") from None


def look_up(
    log: LogRef,
    digest: str,
    *,
    kind: str = "surface",
    home: Path,
    timeout: float = 3.0,
    allow_private: bool | None = None,
) -> Recorded | NeverRecorded:
    """Whether the log records ``digest`` (a surface or tools-set digest), verified.

    ``allow_private``: admit loopback and private addresses (default: only when
    ``TOOLPIN_LOG_ALLOW_PRIVATE=1``). Raises :class:`LogProblem` when the log cannot give
    a verified answer, :class:`~toolpin.errors.LogError` for a bad digest or key."""
    if kind not in KIND_MEMBERS:
        raise LogError("the digest kind is surface or tools")
    normalise_digest(digest)
    with Lookup(log, home=home, timeout=timeout, allow_private=allow_private) as lookup:
        return lookup.find(digest, kind=kind)


class Lookup(Closing):
    """One :func:`look_up` in two steps, so the part that needs no digest can run early.

    Building it reads the key and the kept state (a distrusted log is refused here) and
    makes the guarded client; :meth:`prepare` fetches the log's checkpoint and checks it
    against the kept one (steps 1 and 2); :meth:`find` does the rest for one digest
    (``prepare`` first if it was not done). The proxy prepares while the server boots,
    so after the listing only the bucket and the entry (with its proof) are fetched.
    Every check is the same as one :func:`look_up` makes; :meth:`find` gets its own
    deadline, so a server that boots slowly does not eat the lookup's time.
    """

    def __init__(
        self,
        log: LogRef,
        *,
        home: Path,
        timeout: float = 3.0,
        allow_private: bool | None = None,
    ) -> None:
        self.verifier = verifier_of(log.vkey)
        self.origin = self.verifier.name
        self.home = home
        self.policy = policy_of(log)
        refuse_distrusted(state.load(home, self.origin))
        self._fetcher = Fetcher(
            log.url, timeout=timeout, allow_private=private_allowed(allow_private)
        )
        self._tree: RemoteTree | None = None
        self._digits: int | None = None
        """The prefix length this lookup used (read from the cache or the index)."""

    def close(self) -> None:
        self._fetcher.close()

    def prepare(self, *, warm: bool = False) -> None:
        """Fetch the checkpoint and check it against the kept one (kept, or distrusted).
        With ``warm``, also import now what :meth:`find` will need (the entry decoder,
        the cache writer): nothing of it depends on the digest."""
        if self._tree is None:
            self._tree = verified_tree(self._fetcher, self.verifier, self.home, self.policy)
        if warm:
            import toolpin.publog.entries
            import toolpin.util.fs  # noqa: F401

    def find(self, digest: str, *, kind: str = "surface") -> Recorded | NeverRecorded:
        """Whether the prepared checkpoint's log records ``digest`` (as :func:`look_up`)."""
        if kind not in KIND_MEMBERS:
            raise LogError("the digest kind is surface or tools")
        wanted = normalise_digest(digest)
        f = self._fetcher
        if self._tree is not None:
            f.restart()  # prepared earlier: the digest's requests get a deadline of their own
        self.prepare()
        tree = self._tree
        assert tree is not None
        try:
            size, listed = self._bucket_of(wanted)
        except _IndexAhead:
            # The site was rebuilt between the two requests: look at its new checkpoint.
            tree = self._tree = verified_tree(f, self.verifier, self.home, self.policy)
            try:
                size, listed = self._bucket_of(wanted)
            except _IndexAhead:
                raise LogProblem(
                    "tampered",
                    "the log's digest index names a checkpoint newer than the log serves",
                ) from None
        indices = listed.get((wanted, kind), [])
        member = KIND_MEMBERS[kind]
        confirmed: list[tuple[int, dict[str, Any]]] = []
        for index in indices[:MAX_CHECKED_ENTRIES]:
            value = entry_value(tree.entry(index))
            digests = value.get("digests")
            if isinstance(digests, dict) and digests.get(member) == wanted:
                confirmed.append((index, value))
        if not confirmed:
            return NeverRecorded(origin=self.origin, checkpoint_size=size)
        first_index, first = confirmed[0]
        return Recorded(
            origin=self.origin,
            checkpoint_size=tree.size,
            entry_index=first_index,
            recorded_at=entry_time(first) or "",
            versions=_other_versions(tree, confirmed[-1][1]),
        )

    def _bucket_of(self, wanted: str) -> tuple[int, dict[tuple[str, str], list[int]]]:
        """The bucket of ``wanted`` at the site's prefix length: the kept one first; the
        index is read (again) when none is kept or when the kept one finds no bucket of
        its length, and the bucket fetched once more only if the index changed it."""
        tree = self._tree
        assert tree is not None
        cache = bundle_cache(self.home, self.origin)
        digits = self._digits or _kept_digits(cache, tree.size)
        fresh = digits is None
        if digits is None:
            digits = _published_digits(self._fetcher, tree)
        try:
            found = _bucket(self._fetcher, tree, wanted[:digits])
        except _NoBucket as absent:
            if fresh:
                raise absent.problem from None
            again = _published_digits(self._fetcher, tree)
            if again == digits:
                raise absent.problem from None
            digits = again
            try:
                found = _bucket(self._fetcher, tree, wanted[:digits])
            except _NoBucket as still:
                raise still.problem from None
        if digits != self._digits:
            self._digits = digits
            _keep_digits(cache, digits)
        return found


def _published_digits(fetcher: Fetcher, tree: RemoteTree) -> int:
    """The prefix length the site's ``index.json`` gives (3 when it has none), refused
    when it is not a length the rule allows for the verified tree's size."""
    raw = fetcher.get_if_present(INDEX, MAX_INDEX_BYTES, what="the digest index's prefix length")
    if raw is None:
        return digestindex.LEGACY_DIGITS
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        value = None
    digits = value.get("prefix_digits") if isinstance(value, dict) else None
    if not isinstance(value, dict) or set(value) != {"prefix_digits"} or type(digits) is not int:
        raise LogProblem("tampered", "the log's digest index prefix length is malformed")
    if not digestindex.MIN_DIGITS <= digits <= digestindex.most_digits(tree.size):
        raise LogProblem(
            "tampered",
            f"the log's digest index asks for a prefix of {digits} hex digits, more than "
            f"a log of {tree.size} entries needs",
        )
    return digits


def _kept_digits(cache: Path, size: int) -> int | None:
    """The prefix length kept in the bundle cache, if it is one a log of ``size`` entries
    may use (else ``None``: read the index)."""
    try:
        with (cache / DIGITS_MARK).open("rb") as handle:
            text = handle.read(2)
    except OSError:
        return None
    if len(text) != 1 or not text.isdigit():
        return None
    digits = int(text)
    return digits if digestindex.MIN_DIGITS <= digits <= digestindex.most_digits(size) else None


def _keep_digits(cache: Path, digits: int) -> None:
    """Keep the prefix length for the next lookup (best effort: without it the index is
    read again)."""
    from toolpin.util.fs import atomic_write

    try:
        cache.mkdir(parents=True, exist_ok=True)
        atomic_write(cache / DIGITS_MARK, str(digits).encode("ascii"), mode=0o600, sync=False)
    except OSError:
        pass


def refuse_distrusted(kept: state.Kept) -> None:
    if kept.distrusted is not None:
        raise LogProblem(
            "distrusted",
            f"the log {kept.origin} is distrusted: a {kept.distrusted.kind} was detected "
            f"on {kept.distrusted.at[:10]}",
            advice=f"After finding out why, run `toolpin log trust --reset {kept.origin}`.",
        )


class _IndexAhead(Exception):
    """The bucket names a checkpoint newer than the one verified."""


class _NoBucket(Exception):
    """No bucket at this prefix length: the file is absent, or its ``prefix`` has another
    length (``problem``: what to raise if the index does not name another length)."""

    def __init__(self, problem: LogProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def verified_tree(
    fetcher: Fetcher, verifier: Verifier, home: Path, policy: Policy | None = None
) -> RemoteTree:
    """The log's current checkpoint, checked against the kept one and kept in its place.

    Fetched and checked under the state's lock, so two processes never compare a
    checkpoint with one the other kept after it was fetched (that would look like a
    rollback of a log that only grew). With a witness ``policy``, a checkpoint without
    its quorum's cosignatures is refused (``bad-signature``) before anything is kept."""
    origin = verifier.name
    cache = bundle_cache(home, origin)
    with state.locked_state(home, origin, timeout=fetcher.deadline + 1.0):
        raw = fetch_raw_checkpoint(fetcher)
        if policy is None:
            same = _same_as_verified(raw, state.load(home, origin), verifier, cache)
            if same is not None:
                return RemoteTree(fetcher, same, cache=cache)
        checkpoint, note = open_fetched(raw, verifier)
        if policy is not None:
            try:
                policy.check(note, verifier)
            except LogError as exc:
                raise LogProblem(
                    "bad-signature",
                    f"the log's checkpoint is not witnessed as the policy requires: {exc.message}",
                    advice="Ask the log's operator why its witnesses did not cosign it.",
                ) from None
        tree = RemoteTree(fetcher, checkpoint, cache=cache)
        kept = state.load(home, origin)
        refuse_distrusted(kept)
        old = _kept_checkpoint(kept, verifier)
        verdict = check_against_kept(tree, old)
        if verdict is not None:
            problem, message = verdict
            raise distrusted(home, origin, problem, note, message)
        if old is None or (old.size, old.root) != (checkpoint.size, checkpoint.root):
            state.keep(home, origin, note)
        if state.load(home, origin).checkpoint == note:
            _mark_verified(cache, verifier, note)
    return tree


VERIFIED_MARK: Final = "verified-checkpoint"
"""In the bundle cache: SHA-256 of the verifier key's text and the kept checkpoint note
that key verified. Deleting it only makes the next lookup verify the note again."""


def _mark_text(verifier: Verifier, note: str) -> bytes:
    import hashlib

    return hashlib.sha256(f"{verifier.text}\n{note}".encode()).hexdigest().encode("ascii")


def _same_as_verified(
    raw: bytes, kept: state.Kept, verifier: Verifier, cache: Path
) -> Checkpoint | None:
    """The fetched checkpoint when its bytes are exactly the kept checkpoint's and this
    machine verified that note with this key before (the mark says so); else ``None``
    (then it is verified in full). A distrusted log is refused here too."""
    refuse_distrusted(kept)
    if kept.checkpoint is None or raw != kept.checkpoint.encode("utf-8"):
        return None
    try:
        with (cache / VERIFIED_MARK).open("rb") as handle:
            mark = handle.read(65)
    except OSError:
        return None
    if mark != _mark_text(verifier, kept.checkpoint):
        return None
    try:
        checkpoint = read_unverified(kept.checkpoint)
    except LogError:
        return None
    return checkpoint if checkpoint.origin == verifier.name else None


def _mark_verified(cache: Path, verifier: Verifier, note: str) -> None:
    """Write the mark for ``note`` (best effort: without it the note is verified again)."""
    from toolpin.util.fs import atomic_write

    mark = _mark_text(verifier, note)
    target = cache / VERIFIED_MARK
    try:
        with target.open("rb") as handle:
            if handle.read(65) == mark:
                return
    except OSError:
        pass
    try:
        cache.mkdir(parents=True, exist_ok=True)
        atomic_write(target, mark, mode=0o600, sync=False)
    except OSError:
        pass


def distrusted(home: Path, origin: str, kind: str, note: str, message: str) -> LogProblem:
    """Mark the log ``origin`` distrusted (a ``fork`` or ``rollback`` seen in ``note``; the
    caller holds the state's lock) and return the problem to raise."""
    state.distrust(home, origin, kind, note)
    return LogProblem(
        "fork" if kind == "fork" else "rollback",
        message,
        advice="The log is distrusted from now on; "
        f"`toolpin log trust --reset {origin}` after finding out why.",
    )


def policy_of(log: LogRef) -> Policy | None:
    """The witness policy ``log`` names (``None``: no policy, nothing changes)."""
    if log.policy is None:
        return None
    from toolpin.publog.policy import load_policy

    return load_policy(log.policy)


def bundle_cache(home: Path, origin: str) -> Path:
    """The folder of a log's proven entry bundles: ``TOOLPIN_HOME/cache/logs/<key>/``
    (the key as the kept state's file name; anything there may be deleted)."""
    return home / "cache" / state.LOGS_DIR / state.state_path(home, origin).stem


def _kept_checkpoint(kept: state.Kept, verifier: Verifier) -> Checkpoint | None:
    if kept.checkpoint is None:
        return None
    try:
        return open_checkpoint(kept.checkpoint, verifier)
    except LogError:
        raise LogProblem(
            "bad-signature",
            f"the checkpoint kept for {kept.origin} is not signed by this key",
            advice=f"If the log changed its key, run `toolpin log trust --reset {kept.origin}`.",
        ) from None


def _bucket(
    fetcher: Fetcher, tree: RemoteTree, prefix: str
) -> tuple[int, dict[tuple[str, str], list[int]]]:
    """The bucket's checkpoint size and ``(digest, kind) -> entries`` (checked shape)."""
    rel = f"{BUCKET_DIR}/{prefix}.json"
    what = f"the digest index bucket {prefix}"
    raw = fetcher.get_if_present(rel, MAX_BUCKET_BYTES, what=what)
    if raw is None:
        raise _NoBucket(LogProblem("unreachable", f"the log has no digest index bucket {prefix}"))
    bad = LogProblem("tampered", f"the digest index bucket {prefix} is malformed")
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise bad from None
    if not isinstance(value, dict):
        raise bad
    named = value.get("prefix")
    if isinstance(named, str) and len(named) != len(prefix) and DIGEST_PREFIX.fullmatch(named):
        raise _NoBucket(bad)
    if named != prefix:
        raise bad
    cp, digests = value.get("checkpoint"), value.get("digests")
    if not isinstance(cp, dict) or not isinstance(digests, list):
        raise bad
    size, root_text = cp.get("size"), cp.get("root")
    if cp.get("origin") != tree.checkpoint.origin:
        raise LogProblem("tampered", f"the digest index bucket {prefix} is for another log")
    if type(size) is not int or not isinstance(root_text, str) or size < 0:
        raise bad
    if size > tree.size:
        raise _IndexAhead
    root = _root(root_text)
    if root is None or not bucket_consistent(tree, size, root):
        raise LogProblem(
            "tampered",
            f"the digest index bucket {prefix} names a checkpoint that is not in this log",
        )
    listed: dict[tuple[str, str], list[int]] = {}
    for row in digests:
        if not isinstance(row, dict):
            raise bad
        digest, kind, entries = row.get("digest"), row.get("kind"), row.get("entries")
        if not isinstance(digest, str) or not isinstance(entries, list):
            raise bad
        if not DIGEST.fullmatch(digest) or not digest.startswith(prefix):
            raise bad
        if kind not in KIND_MEMBERS:
            raise bad
        if any(type(i) is not int or not 0 <= i < size for i in entries):
            raise bad
        listed.setdefault((digest, kind), []).extend(entries)
    return size, {key: sorted(set(v)) for key, v in listed.items()}


def _root(text: str) -> bytes | None:
    import base64
    import binascii

    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None
    return raw if len(raw) == 32 else None


def entry_time(value: dict[str, Any]) -> str | None:
    observed = value.get("observedAt")
    return observed if isinstance(observed, str) and TIME.fullmatch(observed) else None


def _version(value: dict[str, Any]) -> str | None:
    """The entry's server version (package version, else serverInfo's), if it is a plain
    version string; anything else is not shown (it is the server's or registry's text)."""
    server = value.get("server")
    package = server.get("package") if isinstance(server, dict) else None
    info = value.get("serverInfo")
    for source in (package, info):
        if isinstance(source, dict):
            text = source.get("version")
            if isinstance(text, str) and VERSION.fullmatch(text):
                return text
    return None


def _server_id(value: dict[str, Any]) -> str | None:
    server = value.get("server")
    sid = server.get("id") if isinstance(server, dict) else None
    return sid if isinstance(sid, str) else None


def _other_versions(tree: RemoteTree, value: dict[str, Any]) -> tuple[tuple[str | None, str], ...]:
    """Earlier versions of the recording entry's server, oldest first, by ``previous``."""
    mine = _version(value)
    sid = _server_id(value)
    first_seen: dict[str | None, str] = {}
    current = value
    for _ in range(MAX_VERSION_HOPS):
        previous = current.get("previous")
        if type(previous) is not int or not 0 <= previous < tree.size:
            break
        current = entry_value(tree.entry(previous))
        if sid is None or _server_id(current) != sid:
            break
        at = entry_time(current)
        version = _version(current)
        if at is not None and version != mine:
            first_seen[version] = min(at, first_seen.get(version, at))
    return tuple(sorted(first_seen.items(), key=lambda item: item[1]))


def describe(found: Recorded | NeverRecorded) -> str:
    """One line in toolpin's words (versions only when they are plain version strings)."""
    if isinstance(found, NeverRecorded):
        return (
            f"never recorded in {found.origin} (checked against checkpoint {found.checkpoint_size})"
        )
    since = f" since {found.recorded_at[:10]}" if found.recorded_at else ""
    line = (
        f"publicly recorded{since} (entry {found.entry_index}, "
        f"verified against checkpoint {found.checkpoint_size} of {found.origin})"
    )
    if found.versions:
        shown = ", ".join(
            f"{version or 'an unnamed version'} on {at[:10]}" for version, at in found.versions[-5:]
        )
        line += f"; earlier versions recorded: {shown}"
    return line


def to_json(found: Recorded | NeverRecorded) -> dict[str, Any]:
    """Stable keys for ``--json``."""
    if isinstance(found, NeverRecorded):
        return {
            "recorded": False,
            "origin": found.origin,
            "checkpoint_size": found.checkpoint_size,
        }
    return {
        "recorded": True,
        "origin": found.origin,
        "checkpoint_size": found.checkpoint_size,
        "entry_index": found.entry_index,
        "recorded_at": found.recorded_at,
        "versions": [{"version": v, "first_recorded": at} for v, at in found.versions],
    }


def problem_json(problem: LogProblem) -> dict[str, Any]:
    """A :class:`LogProblem` for ``--json``."""
    return {"problem": problem.kind, "message": problem.message}


__all__ = [
    "LogRef",
    "Lookup",
    "NeverRecorded",
    "Recorded",
    "bundle_cache",
    "describe",
    "distrusted",
    "look_up",
    "normalise_digest",
    "problem_json",
    "to_json",
]
