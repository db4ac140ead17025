"""Verified lookups of a digest in a published transparency log, with kept checkpoints.

Public API (see ``docs/transparency-log.md``, "Checking a digest against a published
log")::

    from toolpin.evidence import LogRef, look_up, describe, to_json, LogProblem

    found = look_up(LogRef(url, vkey_text), surface_digest, home=toolpin_home())
    print(describe(found))    # "publicly recorded since ..." / "never recorded in ..."

Modules: :mod:`.fetch` (guarded, capped HTTP), :mod:`.state` (the kept checkpoint and the
distrust marker per log), :mod:`.verify` (signature, consistency and inclusion proofs over
fetched tiles), :mod:`.lookup` (the lookup itself). Imported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolpin.evidence.errors import LogProblem
    from toolpin.evidence.lookup import (
        LogRef,
        NeverRecorded,
        Recorded,
        describe,
        look_up,
        to_json,
    )

_EXPORTS = {
    "LogProblem": "toolpin.evidence.errors",
    "LogRef": "toolpin.evidence.lookup",
    "NeverRecorded": "toolpin.evidence.lookup",
    "Recorded": "toolpin.evidence.lookup",
    "describe": "toolpin.evidence.lookup",
    "look_up": "toolpin.evidence.lookup",
    "to_json": "toolpin.evidence.lookup",
}

__all__ = ["LogProblem", "LogRef", "NeverRecorded", "Recorded", "describe", "look_up", "to_json"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolpin.evidence' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
