"""Helpers for the witness tests (imported as ``witness_helpers``): logs, witness keys,
real witness servers (in this process or as ``toolpin log witness serve`` processes) and
raw HTTP requests to them."""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolpin.publog.checkpoint import Checkpoint, sign_checkpoint
from toolpin.publog.cosignature import WitnessSigner
from toolpin.publog.entries import encode_entry
from toolpin.publog.merkle import MemoryTree
from toolpin.publog.note import Signer
from toolpin.witness.cosigner import Witness
from toolpin.witness.logs import parse_known_logs
from toolpin.witness.server import WitnessServer
from toolpin.witness.state import WitnessState

SRC = Path(__file__).resolve().parents[2] / "src"
ORIGIN = "log.example/witnessed"


def log_signer(label: str = "log", origin: str = ORIGIN) -> Signer:
    return Signer.from_seed(origin, hashlib.sha256(label.encode()).digest())


def witness_signer(label: str = "w1", name: str = "witness.example/w1") -> WitnessSigner:
    return WitnessSigner(name=name, seed=hashlib.sha256(b"witness " + label.encode()).digest())


def entries(count: int, tag: str = "t", start: int = 0) -> list[bytes]:
    return [encode_entry({"tag": tag, "i": i}) for i in range(start, start + count)]


class Fork:
    """A log history in memory: checkpoints at any size, proofs between sizes."""

    def __init__(self, leaves: list[bytes], signer: Signer) -> None:
        self.tree = MemoryTree.from_entries(leaves)
        self.signer = signer

    def note(self, size: int) -> str:
        cp = Checkpoint(self.signer.name, size, self.tree.root(size))
        return sign_checkpoint(cp, self.signer)

    def body(self, old: int, size: int, *, proof: list[bytes] | None = None) -> bytes:
        hashes = self.tree.consistency_proof(old, size) if proof is None and old else proof or []
        lines = [f"old {old}", *(base64.b64encode(h).decode() for h in hashes), ""]
        return ("\n".join(lines) + "\n" + self.note(size)).encode()


def logs_text(*signers: Signer) -> str:
    return "".join(f"log {s.verifier.text}\n" for s in signers)


def make_witness(state: Path, *signers: Signer, signer: WitnessSigner | None = None) -> Witness:
    return Witness(
        signer or witness_signer(),
        parse_known_logs(logs_text(*(signers or (log_signer(),)))),
        WitnessState.open(state),
    )


@contextmanager
def serving(witness: Witness) -> Iterator[WitnessServer]:
    server = WitnessServer(witness, "127.0.0.1", 0)
    server.start()
    try:
        yield server
    finally:
        server.close()


def post(
    port: int,
    body: bytes,
    *,
    path: str = "/add-checkpoint",
    headers: dict[str, str] | None = None,
    method: str = "POST",
) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        conn.close()


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC)}


def start_serve(
    key: Path, logs: Path, state: Path, *extra: str
) -> tuple[subprocess.Popen[str], int]:
    """``toolpin log witness serve`` in its own process on a free port: (process, port)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolpin", "log", "witness", "serve", "--key", str(key),
         "--logs", str(logs), "--state", str(state), "--listen", "127.0.0.1:0", *extra],
        env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    line = proc.stdout.readline()
    while not line and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        line = proc.stdout.readline()
    if "/add-checkpoint" not in line:
        proc.kill()
        raise AssertionError(
            f"the witness did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )
    port = int(line.rsplit(":", 1)[1].split("/")[0])
    return proc, port
