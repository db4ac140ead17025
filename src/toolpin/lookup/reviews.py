"""Servers of the local pin store whose last session was blocked, in closed vocabulary.

A blocked observation is stored as the pin file's ``pending`` member
(:meth:`toolpin.pins.store.PinStore.record_drift`). What leaves this module: the id, the
label reduced to the safe alphabet, the times, both surface hashes, the label keys of the
change (the fixed rules of ``toolpin review``) and the review command. Never the changed
definitions: reading them is ``toolpin review ID`` in a terminal, and approving stays there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolpin.lookup.vocab import HEX16, hex_or_none, label_keys, safe_name, time_or_none


def pending_reviews(home: Path | None = None) -> dict[str, Any]:
    """``{"count", "reviews": [...], "unreadable": [ids]}`` for the store at ``home``."""
    from toolpin.core.drift import compare
    from toolpin.errors import StoreError
    from toolpin.pins.store import PinRecord, PinStore

    store = PinStore(home)
    try:
        records = store.all()
    except StoreError:
        return {"count": 0, "reviews": [], "unreadable": [], "store": "unreadable"}
    reviews: list[dict[str, Any]] = []
    unreadable: list[str] = []
    for record in records:
        if not isinstance(record, PinRecord):
            unreadable.append(safe_name(record[0]))
            continue
        pending = record.pending
        if pending is None:
            continue
        server_id = hex_or_none(record.id, HEX16)
        if server_id is None:
            unreadable.append(safe_name(record.id))
            continue
        drift = compare(record.snapshot, pending.snapshot)
        keys: list[str] = [k for c in drift.changes for k in c.label_keys]
        if drift.instructions is not None:
            keys += [x.key for x in drift.instructions.labels]
        if drift.identity.name_changed:
            keys.append("server-name")
        reviews.append(
            {
                "id": server_id,
                "name": safe_name(record.label),
                "pinnedAt": time_or_none(record.pinned_at),
                "blockedAt": time_or_none(pending.observed_at),
                "midSession": pending.mid_session,
                "pinnedSurface": record.snapshot.surface_hash(),
                "blockedSurface": pending.digest,
                "changes": len(drift.changes)
                + (1 if drift.instructions is not None else 0)
                + (1 if drift.identity.name_changed else 0),
                "labels": label_keys(keys),
                "review": f"toolpin review {server_id}",
            }
        )
    reviews.sort(key=lambda r: (r["blockedAt"] or "", r["id"]), reverse=True)
    return {"count": len(reviews), "reviews": reviews, "unreadable": sorted(unreadable)}
