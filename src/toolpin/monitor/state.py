"""The monitor's state file: where the last pass stopped, kept atomically under a lock.

One JSON object (mode 0600, at most :data:`MAX_STATE_BYTES`)::

    {"v": 1, "origin": "<log origin>",
     "checkpoint": "<the last checkpoint every entry of which was checked, verbatim>" | null,
     "target": "<the checkpoint an interrupted pass was checking towards>" | null,
     "next": <the first entry the interrupted pass had not checked yet> | null,
     "recent": [<the last MAX_RECENT reported events, oldest first>]}

``target``/``next`` make a pass resumable: after an interruption the next pass first
proves that the log's new checkpoint extends ``target`` and goes on from ``next``.
Nothing in the file is trusted beyond what it says about this machine's own earlier
passes: every checkpoint in it is opened with the pinned key again before use.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from toolpin.errors import StoreError

STATE_VERSION: Final = 1
MAX_STATE_BYTES: Final = 4 << 20
MAX_RECENT: Final = 100
"""How many reported events the state keeps for the Atom feed."""
LOCK_TIMEOUT: Final = 5.0


@dataclass(slots=True)
class MonitorState:
    origin: str
    checkpoint: str | None = None
    target: str | None = None
    next: int | None = None
    recent: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "v": STATE_VERSION,
            "origin": self.origin,
            "checkpoint": self.checkpoint,
            "target": self.target,
            "next": self.next,
            "recent": self.recent[-MAX_RECENT:],
        }


def _corrupt(path: Path, why: str) -> StoreError:
    return StoreError(
        f"{path} is not a monitor state file toolpin wrote ({why})",
        advice="Move it away to start over from the log's first entry.",
    )


def load(path: Path, origin: str) -> MonitorState:
    """The state kept in ``path`` (a fresh one when the file does not exist)."""
    from toolpin.util.fs import read_input

    if not path.exists() and not path.is_symlink():
        return MonitorState(origin)
    data = read_input(path, what=f"the monitor state {path}", cap=MAX_STATE_BYTES, error=StoreError)
    try:
        value = json.loads(data)
    except ValueError:
        raise _corrupt(path, "not JSON") from None
    if not isinstance(value, dict) or value.get("v") != STATE_VERSION:
        raise _corrupt(path, "unknown format")
    if value.get("origin") != origin:
        raise StoreError(
            f"{path} is the monitor state of another log",
            advice="Give each log its own --state file.",
        )
    note, target, nxt, recent = (
        value.get("checkpoint"),
        value.get("target"),
        value.get("next"),
        value.get("recent"),
    )
    if not isinstance(note, str | None) or not isinstance(target, str | None):
        raise _corrupt(path, "bad checkpoint")
    if nxt is not None and (type(nxt) is not int or nxt < 0):
        raise _corrupt(path, "bad resume point")
    if (target is None) != (nxt is None):
        raise _corrupt(path, "half a resume point")
    if not isinstance(recent, list) or not all(isinstance(e, dict) for e in recent):
        raise _corrupt(path, "bad recent events")
    return MonitorState(origin, note, target, nxt, recent[-MAX_RECENT:])


def save(path: Path, state: MonitorState) -> None:
    """Write ``state`` atomically (call under :func:`locked_state`)."""
    from toolpin.util.fs import write_private_json

    write_private_json(path, state.to_json())


@contextlib.contextmanager
def locked_state(path: Path, *, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the state's cross-process lock (``<state>.lock``) for a whole pass: two
    monitors of one state file never run at once (the second stops with exit 2)."""
    from toolpin.util.fs import locked

    if not path.parent.is_dir():
        raise StoreError(f"the folder of the monitor state {path} does not exist")
    with locked(path.with_name(path.name + ".lock"), timeout=timeout):
        yield


__all__ = ["MAX_RECENT", "MonitorState", "load", "locked_state", "save"]
