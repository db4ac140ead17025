"""The checkpoint kept per log, and the distrust marker.

``TOOLPIN_HOME/logs/<sha256(origin)[:16]>.json`` holds, for one log origin::

    {"origin": "...", "checkpoint": "<the last verified signed checkpoint, verbatim>",
     "keptAt": "<ISO UTC>",
     "distrusted": null | {"kind": "fork" | "rollback", "at": "<ISO UTC>",
                           "checkpoint": "<the contradicting signed checkpoint>"}}

Every newer checkpoint must be proven consistent with the kept one before it replaces it.
A fork (same size, another root, or a newer tree whose prefix is not the kept tree) or a
rollback (a smaller tree) sets ``distrusted``, keeping the contradicting checkpoint as
evidence (two signed checkpoints that disagree prove the log misbehaved); from then on
every lookup refuses the log until :func:`reset` (``toolpin log trust --reset ORIGIN``).

Writes are atomic (:func:`toolpin.util.fs.atomic_write`, mode 0600) and made under a
cross-process lock (``<name>.lock`` beside the file), so two toolpin processes checking the
same log never lose each other's kept checkpoint.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from toolpin.errors import StoreError

LOGS_DIR: Final = "logs"
MAX_STATE_BYTES: Final = 64 << 10
LOCK_TIMEOUT: Final = 10.0


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def state_path(home: Path, origin: str) -> Path:
    key = hashlib.sha256(origin.encode("utf-8")).hexdigest()[:16]
    return home / LOGS_DIR / f"{key}.json"


@dataclass(frozen=True, slots=True)
class Distrust:
    kind: str
    at: str
    checkpoint: str


@dataclass(frozen=True, slots=True)
class Kept:
    """What is kept for one log: the last verified checkpoint note, and any distrust."""

    origin: str
    checkpoint: str | None
    kept_at: str | None
    distrusted: Distrust | None

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "checkpoint": self.checkpoint,
            "keptAt": self.kept_at,
            "distrusted": None
            if self.distrusted is None
            else {
                "kind": self.distrusted.kind,
                "at": self.distrusted.at,
                "checkpoint": self.distrusted.checkpoint,
            },
        }


def _corrupt(path: Path) -> StoreError:
    return StoreError(
        f"{path} is not a kept-checkpoint file toolpin wrote",
        advice="Remove it with `toolpin log trust --reset ORIGIN` after checking why it changed.",
    )


def load(home: Path, origin: str) -> Kept:
    """The kept state of ``origin`` (empty when nothing is kept). Fails closed on a file
    that cannot be read or is not one toolpin wrote."""
    path = state_path(home, origin)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_STATE_BYTES + 1)
    except FileNotFoundError:
        return Kept(origin, None, None, None)
    except OSError as exc:
        raise StoreError(f"{path} cannot be read ({exc.strerror})") from None
    if len(data) > MAX_STATE_BYTES:
        raise _corrupt(path)
    try:
        value = json.loads(data)
    except ValueError:
        raise _corrupt(path) from None
    if not isinstance(value, dict) or value.get("origin") != origin:
        raise _corrupt(path)
    note, kept_at, marker = value.get("checkpoint"), value.get("keptAt"), value.get("distrusted")
    if not isinstance(note, str | None) or not isinstance(kept_at, str | None):
        raise _corrupt(path)
    distrust = None
    if marker is not None:
        if not isinstance(marker, dict):
            raise _corrupt(path)
        kind, at, evidence = marker.get("kind"), marker.get("at"), marker.get("checkpoint")
        if kind not in ("fork", "rollback") or not isinstance(at, str):
            raise _corrupt(path)
        distrust = Distrust(kind, at, evidence if isinstance(evidence, str) else "")
    return Kept(origin, note, kept_at, distrust)


def _write(home: Path, kept: Kept) -> None:
    from toolpin.util.fs import write_private_json

    write_private_json(state_path(home, kept.origin), kept.to_json())


@contextlib.contextmanager
def locked_state(home: Path, origin: str, *, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the cross-process lock of ``origin``'s state file (``StoreError`` when another
    process holds it for more than ``timeout`` seconds)."""
    from toolpin.util.fs import ensure_private_dir, locked

    path = state_path(home, origin)
    try:
        ensure_private_dir(path.parent)
    except OSError as exc:
        raise StoreError(f"{path.parent} cannot be created ({exc.strerror})") from None
    with locked(path.with_suffix(".lock"), timeout=timeout):
        yield


def keep(home: Path, origin: str, note: str) -> None:
    """Keep ``note`` (verified, and consistent with what was kept) as the last checkpoint.
    Call under :func:`locked_state`."""
    current = load(home, origin)
    _write(home, Kept(origin, note, _now(), current.distrusted))


def distrust(home: Path, origin: str, kind: str, evidence: str) -> None:
    """Mark ``origin`` distrusted (``fork`` or ``rollback``), keeping the contradicting
    signed checkpoint. Call under :func:`locked_state`."""
    current = load(home, origin)
    _write(
        home, Kept(origin, current.checkpoint, current.kept_at, Distrust(kind, _now(), evidence))
    )


def reset(home: Path, origin: str) -> Kept | None:
    """Forget everything kept for ``origin`` (the next lookup trusts the checkpoint it
    gets, as on first use). Returns what was kept, or ``None`` when nothing was."""
    path = state_path(home, origin)
    if not path.parent.is_dir():
        return None
    with locked_state(home, origin):
        before = load(home, origin)
        if before.checkpoint is None and before.distrusted is None:
            return None
        try:
            path.unlink()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"{path} cannot be removed ({exc.strerror})") from None
        return before


__all__ = ["Distrust", "Kept", "distrust", "keep", "load", "locked_state", "reset", "state_path"]
