"""A process that drives a witness's state as fast as it can (killed by the tests):
``witness_worker.py STATE TAG COUNT`` asks the witness (in this process, on the shared
state folder) to cosign sizes 1..COUNT of history TAG in turn, and prints ``ok N`` after
each cosignature it got, ``held N`` after each 409."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from witness_helpers import Fork, entries, log_signer, make_witness


def main() -> None:
    state, tag, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    fork = Fork(entries(count, tag=tag), log_signer())
    witness = make_witness(state)
    old = 0
    size = 1
    while size <= count:
        answer = witness.add_checkpoint(fork.body(old, size))
        if answer.status == 200:
            print(f"ok {size}", flush=True)
            old = size
            size += 1
        elif answer.status == 409 and answer.content_type == "text/x.tlog.size":
            old = int(answer.body)
            print(f"held {old}", flush=True)
            size = max(size, old + 1) if old < count else count + 1
        else:
            print(f"status {answer.status}", flush=True)
            return


if __name__ == "__main__":
    main()
