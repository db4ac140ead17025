"""A real second process for the lock and crash tests (run with PYTHONPATH=src).

    tlog_worker.py LOG KEYFILE append TAG BATCHES SIZE   append BATCHES batches of SIZE
    tlog_worker.py LOG KEYFILE kill-at N TAG START COUNT  append one batch; SIGKILL itself
                                                         inside the N-th file write
    tlog_worker.py LOG KEYFILE loop TAG SIZE             append batches until killed

Entries are ``{"tag": TAG, "i": i}`` in RFC 8785 form.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path

from toolpin.publog import tiles
from toolpin.publog.entries import encode_entry
from toolpin.publog.keys import load_signer


def entries(tag: str, start: int, count: int) -> list[bytes]:
    return [encode_entry({"tag": tag, "i": i}) for i in range(start, start + count)]


def main(argv: list[str]) -> int:
    log_dir, key_file, mode, *rest = argv
    signer = load_signer(key_file)
    log = tiles.TileLog.open(log_dir)
    if mode == "append":
        tag, batches, size = rest[0], int(rest[1]), int(rest[2])
        for b in range(batches):
            log.append(entries(tag, b * size, size), signer)
        return 0
    if mode == "kill-at":
        target, tag, start, count = int(rest[0]), rest[1], int(rest[2]), int(rest[3])
        real_write = tiles.atomic_write  # type: ignore[attr-defined]
        calls = 0

        def dying_write(path: Path, data: bytes, *, mode: int = 0o644) -> None:
            nonlocal calls
            calls += 1
            if calls == target:
                # die half-way through the write: a temp file with half the data exists
                fd, _ = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
                os.write(fd, data[: len(data) // 2])
                os.kill(os.getpid(), signal.SIGKILL)
            real_write(path, data, mode=mode)

        tiles.atomic_write = dying_write  # type: ignore[attr-defined]
        log.append(entries(tag, start, count), signer)
        print(f"completed after {calls} writes", flush=True)
        return 0
    if mode == "loop":
        tag, size = rest[0], int(rest[1])
        b = 0
        while True:
            log.append(entries(tag, b * size, size), signer)
            b += 1
    print(f"unknown mode {mode}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
