"""What a witness remembers: the latest checkpoint it cosigned, per log.

One file per log, ``<state>/logs/<sha256(origin) hex>``, holding that checkpoint's signed
note verbatim. It is read back through the log's keys every time, so a hand-edited or
damaged file is refused (the witness then cosigns nothing for that log) rather than
trusted; the note also says the origin in clear for the operator.

Every check-then-update runs inside :meth:`WitnessState.locked`, a cross-process lock
(``fcntl.flock`` on ``<state>/.lock``, exclusive between threads too, since each holder
opens its own descriptor); the file is replaced atomically (temporary file, fsync,
rename, fsync of the folder), so a witness killed mid-write keeps the old record or the
new one, and the record is on disk before any cosignature for it leaves the witness.

Refused requests that prove misbehaviour of a known log (a valid signature but a
different root at a size already cosigned, or a consistency proof that fails) are kept in
``<state>/evidence/`` (at most :data:`MAX_EVIDENCE` files).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from toolpin.errors import LogError, StoreError, StoreWriteError
from toolpin.publog.checkpoint import Checkpoint, parse_checkpoint_body
from toolpin.publog.note import MAX_NOTE_BYTES, Verifier, open_note
from toolpin.util.fs import atomic_write, ensure_private_dir, locked, read_input

MAX_EVIDENCE = 1000
LOCK_TIMEOUT = 10.0

__all__ = ["MAX_EVIDENCE", "WitnessState"]


def _slot(origin: str) -> str:
    return hashlib.sha256(origin.encode("utf-8")).hexdigest()


class WitnessState:
    """The witness's state folder."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    @classmethod
    def open(cls, directory: str | Path) -> WitnessState:
        """Create the folder (0700) if needed and check it can be used."""
        root = Path(directory)
        if root.exists() and not root.is_dir():
            raise StoreError(f"the witness state {root} is not a directory")
        try:
            ensure_private_dir(root / "logs")
        except OSError as exc:
            raise StoreError(f"cannot create the witness state {root}: {exc.strerror}") from None
        return cls(root)

    @contextlib.contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        with locked(self.directory / ".lock", timeout=timeout):
            yield

    def path(self, origin: str) -> Path:
        return self.directory / "logs" / _slot(origin)

    def latest(self, origin: str, verifiers: Sequence[Verifier]) -> Checkpoint | None:
        """The latest cosigned checkpoint of ``origin``, verified with its keys; None when
        the witness never cosigned one. Call it with the lock held."""
        target = self.path(origin)
        if not target.exists() and not target.is_symlink():
            return None
        data = read_input(
            target, what="the witness's record of a log", cap=MAX_NOTE_BYTES, error=StoreError
        )
        try:
            opened = open_note(data, verifiers)
            checkpoint = parse_checkpoint_body(opened.text)
        except LogError:
            raise StoreError(
                f"the witness's record of {origin} does not verify with its configured keys",
                advice=f"Restore {target} from a good copy; nothing is cosigned for this log.",
            ) from None
        if checkpoint.origin != origin:
            raise StoreError(f"the witness's record of {origin} is for another log")
        return checkpoint

    def record(self, origin: str, note: bytes) -> None:
        """Make ``note`` the latest cosigned checkpoint of ``origin`` (lock held)."""
        try:
            atomic_write(self.path(origin), note, mode=0o600)
        except OSError as exc:
            raise StoreWriteError(
                f"cannot write the witness state ({exc.strerror or type(exc).__name__})"
            ) from None

    def keep_evidence(self, origin: str, kind: str, request: bytes) -> Path | None:
        """Keep a refused request that shows a known log misbehaving; None when the
        evidence folder is full or cannot be written (the refusal stands either way)."""
        folder = self.directory / "evidence"
        try:
            ensure_private_dir(folder)
            if len(os.listdir(folder)) >= MAX_EVIDENCE:
                return None
            name = f"{_slot(origin)[:16]}-{kind}-{time.time_ns()}.txt"
            target = folder / name
            atomic_write(target, request, mode=0o600)
        except OSError:
            return None
        return target
