"""A server that gives no usable version: ``null`` in every JSON toolpin writes (never
the display text "(none)"), "(none)" only when shown, and an older lock's "(none)" read
back as no version."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from toolpin.core.drift import compare
from toolpin.core.snapshot import Identity, snapshot_from_export
from toolpin.core.wire import identity_from_initialize
from toolpin.lockfile.native import LockEntry, lock_from_json, read_lock, write_lock

TOOLS = [{"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}]


def test_no_version_is_none_and_shown_as_none() -> None:
    for info in ({"name": "srv"}, {"name": "srv", "version": ""}, {"name": "srv", "version": 3}):
        identity = identity_from_initialize({"serverInfo": info, "protocolVersion": "2025-06-18"})
        assert identity is not None and identity.version is None
        assert identity.to_json() == {
            "name": "srv",
            "version": None,
            "protocolVersion": "2025-06-18",
        }
        assert identity.label() == "srv (none) (protocol 2025-06-18)"


def test_a_lock_writes_null_and_reads_it_back(tmp_path: Path) -> None:
    snap = snapshot_from_export({"result": {"tools": TOOLS}}).snapshot
    snap = replace(snap, identity=Identity("srv", None, "2025-06-18"))
    lock = tmp_path / "toolpin.lock"
    write_lock(lock, {"srv": LockEntry(snapshot=snap)})
    doc = json.loads(lock.read_text(encoding="utf-8"))
    assert doc["servers"]["srv"]["server"]["version"] is None
    assert "(none)" not in lock.read_text(encoding="utf-8")
    back = read_lock(lock).servers["srv"].snapshot
    assert back.identity == Identity("srv", None, "2025-06-18")
    assert compare(snap, back).ok


def test_an_older_locks_none_text_is_no_version(tmp_path: Path) -> None:
    snap = snapshot_from_export({"result": {"tools": TOOLS}}).snapshot
    snap = replace(snap, identity=Identity("srv", None))
    lock = tmp_path / "toolpin.lock"
    write_lock(lock, {"srv": LockEntry(snapshot=snap)})
    doc = json.loads(lock.read_text(encoding="utf-8"))
    doc["servers"]["srv"]["server"]["version"] = "(none)"  # what earlier versions wrote
    old = lock_from_json(doc, path=lock).servers["srv"].snapshot
    assert old.identity == Identity("srv", None)
    assert not compare(old, snap).identity.version_changed
