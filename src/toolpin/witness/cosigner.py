"""The ``add-checkpoint`` decision of a C2SP tlog-witness, without HTTP.

Request body (``c2sp.org/tlog-witness``)::

    old <size of the checkpoint the client believes the witness holds>
    <base64 consistency-proof hash>        (0 to 63 lines)
    <empty line>
    <the signed checkpoint>

Answers, in the order the specification checks them:

* 400 a malformed body, or an old size above the checkpoint's;
* 404 a checkpoint of an origin the witness does not know;
* 403 no signature of a key the witness trusts for that origin verifies;
* 409 (``text/x.tlog.size``, the size it holds) the old size is not the size of the
  latest checkpoint the witness cosigned for the log (0 if none); 409 too when the sizes
  are equal but the root hashes differ (kept as evidence);
* 422 the consistency proof does not verify (kept as evidence);
* 200 one cosignature/v1 line, after the new checkpoint is recorded.

Checking the old size and recording the new checkpoint happen under one cross-process
lock (:class:`~toolpin.witness.state.WitnessState`), so two concurrent requests can never
roll the record back or cosign two roots for one size. Answer texts are fixed words: no
byte of the request is echoed.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable
from dataclasses import dataclass

from toolpin.errors import LogError, StoreError
from toolpin.publog.checkpoint import MAX_TREE_SIZE, Checkpoint, parse_checkpoint_body
from toolpin.publog.cosignature import WitnessSigner, cosign
from toolpin.publog.merkle import EMPTY_ROOT, HASH_SIZE, verify_consistency
from toolpin.publog.note import NoteError, open_note, split_note
from toolpin.witness.logs import KnownLogs
from toolpin.witness.state import WitnessState

MAX_PROOF_LINES = 63
MAX_REQUEST_BYTES = 64 * 1024
"""The largest body accepted (an old size, 63 hashes and a checkpoint with its signatures
take a few KiB)."""
SIZE_TYPE = "text/x.tlog.size"
TEXT_TYPE = "text/plain; charset=utf-8"

__all__ = [
    "MAX_REQUEST_BYTES",
    "Answer",
    "Request",
    "RequestError",
    "Witness",
    "parse_request",
]


class RequestError(LogError):
    """An ``add-checkpoint`` body that is not well formed (HTTP 400)."""


@dataclass(frozen=True)
class Request:
    old_size: int
    proof: tuple[bytes, ...]
    note: bytes
    body: bytes  # the note's text: what a cosignature signs
    checkpoint: Checkpoint


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status, content type, body; ``event``: one line for the operator
    (fixed words, and only a configured log's origin), or None."""

    status: int
    body: bytes
    content_type: str = TEXT_TYPE
    event: str | None = None


def _size(text: str) -> int | None:
    if not text.isascii() or not text.isdigit() or (text != "0" and text.startswith("0")):
        return None
    if len(text) > 19 or int(text) > MAX_TREE_SIZE:
        return None
    return int(text)


def parse_request(data: bytes) -> Request:
    """Parse an ``add-checkpoint`` body; :class:`RequestError` names what is wrong."""
    if len(data) > MAX_REQUEST_BYTES:
        raise RequestError("the request body is too large")
    head, sep, rest = data.partition(b"\n")
    if not sep or not head.startswith(b"old "):
        raise RequestError("the body must start with an `old <size>` line")
    old = _size(head[4:].decode("ascii", "replace"))
    if old is None:
        raise RequestError("the old size is not a decimal tree size")
    proof: list[bytes] = []
    while True:
        line, sep, rest = rest.partition(b"\n")
        if not sep:
            raise RequestError("no empty line before the checkpoint")
        if not line:
            break
        if len(proof) == MAX_PROOF_LINES:
            raise RequestError(f"more than {MAX_PROOF_LINES} consistency proof lines")
        try:
            digest = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError):
            raise RequestError("a consistency proof line is not base64") from None
        if len(digest) != HASH_SIZE or base64.b64encode(digest) != line:
            raise RequestError("a consistency proof line is not one base64 SHA-256 hash")
        proof.append(digest)
    try:
        text, _ = split_note(rest)
        checkpoint = parse_checkpoint_body(text)
    except LogError:
        raise RequestError("the checkpoint is not a well-formed signed checkpoint") from None
    return Request(
        old_size=old,
        proof=tuple(proof),
        note=rest,
        body=text.encode("utf-8"),
        checkpoint=checkpoint,
    )


def _text(status: int, text: str, event: str | None = None) -> Answer:
    return Answer(status, (text + "\n").encode("utf-8"), TEXT_TYPE, event)


class Witness:
    """A witness: its key, the logs it knows, its state."""

    def __init__(
        self,
        signer: WitnessSigner,
        logs: KnownLogs,
        state: WitnessState,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.signer = signer
        self.logs = logs
        self.state = state
        self.clock = clock

    @property
    def name(self) -> str:
        return self.signer.name

    def add_checkpoint(self, data: bytes) -> Answer:
        try:
            request = parse_request(data)
        except RequestError as exc:
            return _text(400, exc.message)
        checkpoint = request.checkpoint
        origin = checkpoint.origin
        verifiers = self.logs.verifiers(origin)
        if not verifiers:
            return _text(404, "unknown log")
        try:
            open_note(request.note, verifiers)
        except NoteError:
            return _text(403, "the checkpoint is not signed by a key this witness trusts")
        if request.old_size > checkpoint.size:
            return _text(400, "the old size is larger than the checkpoint's size")
        try:
            return self._decide(request, data)
        except StoreError as exc:
            return _text(500, "the witness state is unusable", f"{origin}: {exc.message}")

    def _decide(self, request: Request, data: bytes) -> Answer:
        checkpoint = request.checkpoint
        origin = checkpoint.origin
        with self.state.locked():
            known = self.state.latest(origin, self.logs.verifiers(origin))
            known_size = known.size if known is not None else 0
            known_root = known.root if known is not None else EMPTY_ROOT
            if request.old_size != known_size:
                return Answer(409, f"{known_size}\n".encode("ascii"), SIZE_TYPE)
            if checkpoint.size == known_size and checkpoint.root != known_root:
                kept = self.state.keep_evidence(origin, "fork", data)
                return _text(
                    409,
                    "a different root hash was cosigned at this size",
                    f"{origin}: REFUSED a second root at size {known_size}"
                    + (f" (kept as {kept.name})" if kept else ""),
                )
            if not verify_consistency(
                known_size, checkpoint.size, known_root, checkpoint.root, request.proof
            ):
                kept = self.state.keep_evidence(origin, "inconsistent", data)
                return _text(
                    422,
                    "the consistency proof does not verify",
                    f"{origin}: REFUSED an inconsistent checkpoint from size {known_size} to"
                    f" {checkpoint.size}" + (f" (kept as {kept.name})" if kept else ""),
                )
            if known is None or checkpoint.size > known_size:
                self.state.record(origin, request.note)
            timestamp = int(self.clock())
            line = cosign(request.body, self.signer.name, self.signer.seed, timestamp)
        return Answer(
            200,
            line.encode("utf-8"),
            TEXT_TYPE,
            f"{origin}: cosigned size {checkpoint.size} (from {known_size})",
        )
