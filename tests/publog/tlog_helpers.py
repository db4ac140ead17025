"""Helpers shared by the public log engine tests (imported as ``tlog_helpers``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from toolpin.publog.entries import encode_entry
from toolpin.publog.note import Signer

DATA = Path(__file__).parent / "data"
ORIGIN = "log.example/toolpin-test"
SRC = Path(__file__).resolve().parents[2] / "src"


def load_vectors(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name).read_text(encoding="utf-8"))
    return data


def seeded_signer(name: str = ORIGIN, label: str = "one") -> Signer:
    return Signer.from_seed(name, hashlib.sha256(label.encode()).digest())


def make_entries(count: int, start: int = 0, tag: str = "t") -> list[bytes]:
    return [encode_entry({"tag": tag, "i": i}) for i in range(start, start + count)]
