"""The log's side of the witness protocol: ``toolpin log witness push``.

For each configured witness (its cosignature key and its submission URL) the log's
current checkpoint is sent to ``<url>/add-checkpoint`` with a consistency proof from the
size that witness last cosigned (remembered in a small file outside the log, 0 for a
witness never asked). A ``409`` names the size the witness holds: the proof is rebuilt
from there and the request sent again (at most :data:`MAX_ATTEMPTS` times), unless that
size is beyond the log's checkpoint, or equal to it with another root: then the witness
has seen another history of this log, which is reported as a conflict and never retried.

Every answer is verified before use: a ``200``'s lines are appended to the checkpoint
and checked with :func:`~toolpin.publog.cosignature.verify_cosignatures` against that
witness's key; only its own valid lines are kept. The checkpoint file is then rewritten
(under the log's lock, atomically) with the cosignatures appended, replacing older lines
of the same witnesses, as long as the checkpoint is still the one that was sent. Log
verifiers ignore lines of keys they do not know, so every existing verifier still
accepts the cosigned checkpoint.

Failures are fixed words per witness: nothing a witness sent is printed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolpin.errors import LogError
from toolpin.publog.checkpoint import Checkpoint, open_checkpoint
from toolpin.publog.cosignature import (
    WitnessKey,
    is_of,
    parse_cosignature_lines,
    verify_cosignatures,
)
from toolpin.publog.note import MAX_SIGNATURES, NoteSignature, Verifier, split_note
from toolpin.publog.proof import proof_hashes
from toolpin.publog.tiles import CHECKPOINT_FILE, LOCK_FILE, MAX_CHECKPOINT_BYTES, TileLog
from toolpin.util.fs import atomic_write, ensure_private_dir, locked, read_input

MAX_ATTEMPTS: Final = 3
MAX_ANSWER_BYTES: Final = 64 * 1024
USER_AGENT: Final = "toolpin-witness-push"

__all__ = [
    "PushOutcome",
    "WitnessResult",
    "WitnessTarget",
    "add_cosignatures",
    "default_state_path",
    "push_checkpoint",
]


@dataclass(frozen=True)
class WitnessTarget:
    key: WitnessKey
    url: str  # the submission prefix; the request goes to <url>/add-checkpoint


@dataclass(frozen=True)
class WitnessResult:
    witness: str
    url: str
    cosigned: bool
    old_size: int | None = None  # the size the accepted proof started from
    timestamp: int | None = None
    reason: str | None = None
    conflict: bool = False  # the witness holds another history of this log

    def as_json(self) -> dict[str, Any]:
        return {
            "witness": self.witness,
            "url": self.url,
            "cosigned": self.cosigned,
            "old_size": self.old_size,
            "timestamp": self.timestamp,
            "reason": self.reason,
            "conflict": self.conflict,
        }


@dataclass(frozen=True)
class PushOutcome:
    checkpoint: Checkpoint
    results: tuple[WitnessResult, ...]
    published: bool

    @property
    def cosigned(self) -> int:
        return sum(1 for r in self.results if r.cosigned)

    @property
    def exit_code(self) -> int:
        if any(r.conflict for r in self.results):
            return 3
        return 0 if all(r.cosigned for r in self.results) else 1


class _Memory:
    """The size each witness last cosigned, per log: a hint that saves a round trip."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.sizes: dict[str, int] = {}
        if path is None or not path.exists():
            return
        from toolpin.core.canonical import parse_json

        data = read_input(path, what=f"the witness push state {path}", cap=1 << 20, error=LogError)
        try:
            doc = parse_json(data)
        except Exception:
            doc = None
        sizes = doc.get("sizes") if isinstance(doc, dict) and doc.get("version") == 1 else None
        if not isinstance(sizes, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in sizes.values()
        ):
            raise LogError(
                f"the witness push state {path} is damaged",
                advice="Delete it: the next push asks each witness for its size again.",
            )
        self.sizes = dict(sizes)

    @staticmethod
    def slot(origin: str, key: WitnessKey) -> str:
        return f"{origin} {key.name}+{key.key_id.hex()}"

    def save(self) -> None:
        if self.path is None:
            return
        ensure_private_dir(self.path.parent)
        doc = {"version": 1, "sizes": dict(sorted(self.sizes.items()))}
        with locked(self.path.with_name(self.path.name + ".lock")):
            atomic_write(self.path, (json.dumps(doc, indent=1) + "\n").encode(), mode=0o600)


def _request_body(log: TileLog, old: int, note: str) -> bytes:
    proof = log.consistency_proof(old) if old else []
    lines = [f"old {old}", *proof_hashes(proof), ""]
    return ("\n".join(lines) + "\n").encode("ascii") + note.encode("utf-8")


def _parse_size(data: bytes) -> int | None:
    text = data.decode("ascii", "replace")
    if not text.endswith("\n"):
        return None
    digits = text[:-1]
    if not digits.isdigit() or len(digits) > 19 or (digits != "0" and digits.startswith("0")):
        return None
    return int(digits)


def _ask(
    client: Any, target: WitnessTarget, log: TileLog, note: str, start: int
) -> WitnessResult | tuple[list[NoteSignature], int]:
    """One witness, with its 409 retries: a failed result, or (its lines, old size)."""
    import httpx2

    from toolpin.util.net import read_capped

    checkpoint = log.checkpoint
    assert checkpoint is not None
    name, url = target.key.name, target.url

    def failed(reason: str, *, conflict: bool = False) -> WitnessResult:
        return WitnessResult(name, url, False, reason=reason, conflict=conflict)

    old = start if start <= checkpoint.size else 0
    for _ in range(MAX_ATTEMPTS):
        body = _request_body(log, old, note)
        try:
            with client.stream(
                "POST",
                url.rstrip("/") + "/add-checkpoint",
                content=body,
                headers={"Content-Type": "text/plain; charset=utf-8"},
            ) as response:
                data = read_capped(response.iter_bytes(), MAX_ANSWER_BYTES, _TooLarge)
                status = response.status_code
                kind = response.headers.get("Content-Type", "")
        except _TooLarge:
            return failed("the witness's answer is too large")
        except httpx2.TimeoutException:
            return failed("the witness did not answer in time")
        except (httpx2.HTTPError, OSError):
            return failed("the witness cannot be reached")
        if status == 200:
            return _cosignatures(target, note, data, old)
        if status != 409:
            return failed(_STATUS.get(status, f"the witness answered HTTP {status}"))
        is_size = kind.split(";")[0].strip().lower() == "text/x.tlog.size"
        held = _parse_size(data) if is_size else None
        if old == checkpoint.size and held in (None, old):
            return failed(f"the witness cosigned another root at size {old}", conflict=True)
        if held is None or held == old:
            return failed("the witness's 409 answer names no other tree size")
        if held > checkpoint.size:
            return failed(
                f"the witness cosigned size {held}, beyond this log's {checkpoint.size}",
                conflict=True,
            )
        old = held
    return failed("the witness's size kept changing")


_STATUS: Final = {
    400: "the witness refused the request as malformed (400)",
    403: "the witness does not trust this log's key (403)",
    404: "the witness does not know this log (404)",
    422: "the witness refused the consistency proof (422)",
    500: "the witness failed (500)",
}


class _TooLarge(Exception):
    pass


def _cosignatures(
    target: WitnessTarget, note: str, data: bytes, old: int
) -> WitnessResult | tuple[list[NoteSignature], int]:
    name, url = target.key.name, target.url
    try:
        mine = [s for s in parse_cosignature_lines(data) if is_of(s, target.key)]
        cosigned = note + "".join(s.line for s in mine)
        found = verify_cosignatures(cosigned.encode("utf-8"), [target.key])
    except LogError:
        return WitnessResult(name, url, False, reason="the witness's cosignature does not verify")
    if name not in found:
        return WitnessResult(name, url, False, reason="the witness sent no cosignature of its key")
    return mine, old


def add_cosignatures(
    log_dir: str | Path,
    verifier: Verifier,
    body: str,
    signatures: Sequence[NoteSignature],
    keys: Sequence[WitnessKey],
) -> bool:
    """Append the cosignature lines ``signatures`` (of ``keys``) to the log's checkpoint if
    its text is still ``body``, replacing earlier lines of those keys; False when the
    checkpoint changed meanwhile. The result must open with ``verifier`` and its
    cosignatures verify, or nothing is written."""
    root = Path(log_dir)
    with locked(root / LOCK_FILE):
        raw = read_input(
            root / CHECKPOINT_FILE,
            what="the log's checkpoint",
            cap=MAX_CHECKPOINT_BYTES,
            error=LogError,
        )
        open_checkpoint(raw, verifier)
        text, existing = split_note(raw)
        if text != body:
            return False
        kept = [s for s in existing if not any(is_of(s, k) for k in keys)]
        merged = kept + list(signatures)
        if len(merged) > MAX_SIGNATURES:
            raise LogError(f"a checkpoint carries at most {MAX_SIGNATURES} signatures")
        note = text + "\n" + "".join(s.line for s in merged)
        open_checkpoint(note, verifier)
        verify_cosignatures(note.encode("utf-8"), list(keys))
        atomic_write(root / CHECKPOINT_FILE, note.encode("utf-8"))
    return True


def push_checkpoint(
    log_dir: str | Path,
    verifier: Verifier,
    targets: Sequence[WitnessTarget],
    *,
    state: Path | None = None,
    timeout: float = 10.0,
) -> PushOutcome:
    """Ask every witness in ``targets`` to cosign the log's checkpoint; publish what they
    gave. ``state``: the file remembering each witness's size (None: remember nothing)."""
    import httpx2

    from toolpin.util.net import tls_context

    if not targets:
        raise LogError("no witness to push to")
    for target in targets:
        if not target.url.startswith(("http://", "https://")):
            raise LogError("a witness URL must start with http:// or https://")
    log = TileLog.open(log_dir, verifier)
    checkpoint = log.checkpoint
    note = log.checkpoint_note
    if checkpoint is None or note is None:
        raise LogError(f"{log_dir} has no checkpoint")
    body = checkpoint.body()
    memory = _Memory(state)
    results: list[WitnessResult] = []
    gathered: list[NoteSignature] = []
    got: list[WitnessKey] = []
    with httpx2.Client(
        timeout=timeout,
        trust_env=True,
        verify=tls_context(),
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT},
    ) as client:
        for target in targets:
            slot = _Memory.slot(checkpoint.origin, target.key)
            answer = _ask(client, target, log, note, memory.sizes.get(slot, 0))
            if isinstance(answer, WitnessResult):
                results.append(answer)
                continue
            lines, old = answer
            cosigned = note + "".join(s.line for s in lines)
            found = verify_cosignatures(cosigned.encode("utf-8"), [target.key])
            memory.sizes[slot] = checkpoint.size
            gathered.extend(lines)
            got.append(target.key)
            results.append(
                WitnessResult(
                    target.key.name,
                    target.url,
                    True,
                    old_size=old,
                    timestamp=found[target.key.name],
                )
            )
    published = bool(gathered) and add_cosignatures(log_dir, verifier, body, gathered, got)
    memory.save()
    return PushOutcome(checkpoint=checkpoint, results=tuple(results), published=published)


def default_state_path(origin: str) -> Path:
    from toolpin.util.fs import toolpin_home

    slot = hashlib.sha256(origin.encode("utf-8")).hexdigest()[:16]
    return toolpin_home() / "witness-push" / f"{slot}.json"
