"""The witness's state: it survives restarts and SIGKILL at any moment, it is shared
safely by concurrent requests and processes (never two roots cosigned for one size, never
a rollback), and a damaged record makes the witness refuse, not forget."""

from __future__ import annotations

import base64
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from witness_helpers import (
    Fork,
    entries,
    env,
    log_signer,
    logs_text,
    make_witness,
    post,
    serving,
    start_serve,
    witness_signer,
)

from toolpin.publog.cosignature import verify_cosignatures
from toolpin.witness.state import WitnessState

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and flock semantics")
WORKER = Path(__file__).with_name("witness_worker.py")


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    key = tmp_path / "keys" / "w1.key"
    key.parent.mkdir()
    key.write_text(witness_signer().text + "\n")
    logs = tmp_path / "logs.policy"
    logs.write_text(logs_text(log_signer()))
    return key, logs, tmp_path / "state"


def _held(port: int, fork: Fork) -> int:
    status, kind, body = post(port, fork.body(0, 1))
    assert status == 409 and kind == "text/x.tlog.size", (status, body)
    return int(body)


def test_the_state_survives_a_restart(files: tuple[Path, Path, Path]) -> None:
    key, logs, state = files
    fork = Fork(entries(30), log_signer())
    proc, port = start_serve(key, logs, state)
    try:
        assert post(port, fork.body(0, 20))[0] == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    proc, port = start_serve(key, logs, state)
    try:
        assert _held(port, fork) == 20
        assert post(port, fork.body(20, 30))[0] == 200
    finally:
        proc.kill()
        proc.wait()


def test_a_damaged_or_foreign_record_is_refused_not_forgotten(tmp_path: Path) -> None:
    fork = Fork(entries(30), log_signer())
    witness = make_witness(tmp_path / "state")
    assert witness.add_checkpoint(fork.body(0, 10)).status == 200
    record = witness.state.path(fork.signer.name)
    good = record.read_bytes()
    other = Fork(entries(10), log_signer("x", "log.example/other"))
    for damaged in (
        good.replace(b"\n10\n", b"\n11\n"),  # the log's signature no longer verifies
        good[:-5] + b"\n",
        b"",
        other.note(10).encode(),  # a valid checkpoint of another log, moved here
    ):
        record.write_bytes(damaged)
        answer = witness.add_checkpoint(fork.body(10, 20))
        assert answer.status == 500 and b"state" in answer.body
        assert record.read_bytes() == damaged  # nothing written, nothing cosigned
    record.unlink()
    record.mkdir()  # not even a file
    assert witness.add_checkpoint(fork.body(0, 5)).status == 500
    record.rmdir()
    record.write_bytes(good)
    assert witness.add_checkpoint(fork.body(10, 20)).status == 200


def test_sigkill_at_any_moment_keeps_every_cosigned_size(tmp_path: Path) -> None:
    """A worker cosigns sizes 1, 2, 3... on the shared state; it is killed at random
    moments (mostly inside writes: that is where it spends its time) and restarted. The
    record always verifies and is never behind a size that was cosigned."""
    state = tmp_path / "state"
    # More sizes than 25 short lives can cosign on a quiet machine, so every run makes
    # all 25 kills (with 400, a fast machine cosigned them all after 21 and stopped).
    sizes = 4000
    fork = Fork(entries(sizes), log_signer())
    rng = random.Random(27)
    acknowledged = 0
    kills = 0
    while kills < 25 and acknowledged < sizes:
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(state), "t", str(sizes)],
            env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        first = proc.stdout.readline()  # it runs: now kill it somewhere in its loop
        time.sleep(rng.uniform(0.0, 0.15))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        kills += 1
        for line in [first, *out.splitlines()]:
            if line.startswith("ok "):
                acknowledged = max(acknowledged, int(line.split()[1]))
            else:
                assert line.startswith("held ") or not line, (line, err)
        held = WitnessState(state).latest(fork.signer.name, [fork.signer.verifier])
        assert held is not None and held.size >= acknowledged
        assert held.root == fork.tree.root(held.size)
    assert kills == 25 and acknowledged > 25


def test_concurrent_requests_across_processes_never_fork_or_roll_back(
    files: tuple[Path, Path, Path],
) -> None:
    """Three witness processes share one state. In each round eight threads, released
    together, send checkpoints of two histories (equal for 8 entries, then different)
    from the size the witness holds, spread over the three processes: at most one of them
    may be cosigned per round, every cosigned checkpoint beyond 8 is of one history, one
    root per size, and the record ends at the largest size cosigned."""
    key, logs, state = files
    shared = entries(8, tag="shared")
    forks = [Fork(shared + entries(92, tag=t, start=8), log_signer()) for t in ("a", "b")]
    servers = [start_serve(key, logs, state) for _ in range(3)]
    got: list[tuple[int, bytes, bytes]] = []
    held = 0

    def client(
        n: int, old: int, round_: int, barrier: threading.Barrier, answers: list[Any]
    ) -> None:
        rng = random.Random(round_ * 100 + n)
        fork = forks[n % 2]
        size = min(old + rng.randint(1, 6), 100)
        body = fork.body(old, size)
        barrier.wait()
        status, _, answer = post(servers[n % 3][1], body)
        answers.append((status, size, fork, answer))  # list.append is atomic

    try:
        for round_ in range(12):
            barrier = threading.Barrier(8)
            answers: list[tuple[int, int, Fork, bytes]] = []
            threads = [
                threading.Thread(target=client, args=(n, held, round_, barrier, answers))
                for n in range(8)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            won = [(size, fork, answer) for status, size, fork, answer in answers if status == 200]
            assert len(won) <= 1, f"round {round_}: {len(won)} cosignatures from one old size"
            assert all(s in (200, 409, 422) for s, *_ in answers), answers
            for size, fork, answer in won:
                got.append((size, fork.tree.root(size), fork.note(size).encode() + answer))
                held = size
    finally:
        for proc, _ in servers:
            proc.kill()
            proc.wait()
    assert len(got) >= 6, len(got)
    w = witness_signer()
    roots: dict[int, bytes] = {}
    for size, root, cosigned in got:
        assert verify_cosignatures(cosigned, [w.key])
        assert roots.setdefault(size, root) == root, f"two roots cosigned at size {size}"
    histories = {
        i
        for size, root, _ in got
        if size > 8
        for i, f in enumerate(forks)
        if f.tree.root(size) == root
    }
    assert len(histories) <= 1, "both histories were cosigned beyond their common prefix"
    record = WitnessState(state).latest(forks[0].signer.name, [forks[0].signer.verifier])
    assert record is not None and record.size == max(size for size, _, _ in got)


def test_threads_in_one_process_are_serialised_too(tmp_path: Path) -> None:
    fork = Fork(entries(64), log_signer())
    answers: list[int] = []
    with serving(make_witness(tmp_path / "state")) as server:
        barrier = threading.Barrier(16)

        def racer(size: int) -> None:
            barrier.wait()
            answers.append(post(server.port, fork.body(0, size))[0])

        threads = [threading.Thread(target=racer, args=(s,)) for s in range(1, 17)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert sorted(answers) == [200] + [409] * 15  # one of them won from size 0


def test_the_record_keeps_the_log_signature_in_clear(tmp_path: Path) -> None:
    fork = Fork(entries(3), log_signer())
    witness = make_witness(tmp_path / "state")
    assert witness.add_checkpoint(fork.body(0, 3)).status == 200
    text = witness.state.path(fork.signer.name).read_text()
    assert text == fork.note(3) and base64.b64encode(fork.tree.root(3)).decode() in text
