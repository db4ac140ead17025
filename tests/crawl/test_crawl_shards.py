"""A crawl spread over four shards on this machine, merged by the one sequencer into one
log that verifies (``log crawl --shard K/N`` then ``log append --from``)."""

from __future__ import annotations

import json
from pathlib import Path

from crawl_helpers import (
    LogKey,
    independent_check,
    run_toolpin,
    stub_argv,
    tool,
    write_config,
    write_spec,
)

from toolpin.crawl.observations import Shard


def _run(*args: str) -> tuple[int, str, str]:
    result = run_toolpin(*args)
    return result.exit_code, result.stdout, result.stderr


def _servers(tmp_path: Path, count: int, version: str) -> Path:
    specs = tmp_path / f"specs-{version}"
    specs.mkdir(exist_ok=True)
    servers = {
        f"srv{i}": stub_argv(
            write_spec(specs / f"{i}.json", name=f"srv{i}", tools=[tool(f"t{i}", version)])
        )
        for i in range(count)
    }
    return write_config(tmp_path / "servers.json", servers)


def _shards(config: Path, out: Path) -> list[Path]:
    for k in range(1, 5):
        code, stdout, stderr = _run(
            "log", "crawl", "--servers", str(config), "--shard", f"{k}/4",
            "--observations", str(out), "--json",
        )  # fmt: skip
        assert code == 0, stdout + stderr
        summary = json.loads(stdout)
        assert summary["appended"] == 0 and summary["failed"] == 0
    return sorted(out.glob("*.jsonl"))


def test_four_shards_merge_into_one_log_that_verifies(tmp_path: Path, log_key: LogKey) -> None:
    config = _servers(tmp_path, 10, "one")
    files = _shards(config, tmp_path / "obs")
    assert [f.name for f in files] == [f"shard-{k}-of-4.jsonl" for k in range(1, 5)]
    ids: list[str] = []
    for k, path in enumerate(files, start=1):
        lines = path.read_bytes().splitlines()
        assert json.loads(lines[0])["shard"] == f"{k}/4"
        mine = [json.loads(line)["candidate"]["id"] for line in lines[1:]]
        assert all(Shard(k, 4).owns(cid) for cid in mine)
        ids += mine
    assert len(ids) == len(set(ids)) == 10  # every server in exactly one shard

    log_dir = tmp_path / "log"
    code, stdout, stderr = _run(
        "log", "append", "--log", str(log_dir), "--key", str(log_key.path),
        "--from", str(tmp_path / "obs"), "--json",
    )  # fmt: skip
    assert code == 0, stdout + stderr
    summary = json.loads(stdout)
    assert summary["new"] == 10 and summary["appended"] == 10 and summary["log_size"] == 10
    code, stdout, _ = _run("log", "verify", "--log", str(log_dir), "--vkey", log_key.vkey)
    assert code == 0 and stdout.startswith("ok:"), stdout
    records = independent_check(log_dir, log_key.vkey)
    assert sorted(r["server"]["id"] for r in records) == sorted(ids)
    assert [r["server"]["id"] for r in records] == sorted(ids)  # in server-id order

    # The same observations, given in another order, make the same log, byte for byte.
    other = tmp_path / "other"
    code, stdout, stderr = _run(
        "log", "append", "--log", str(other), "--key", str(log_key.path),
        *[a for f in reversed(files) for a in ("--from", str(f))],
    )  # fmt: skip
    assert code == 0, stdout + stderr
    assert (other / "checkpoint").read_bytes() == (log_dir / "checkpoint").read_bytes()

    # The next day: unchanged servers append nothing, a changed one appends one entry.
    again = _shards(config, tmp_path / "obs2")
    code, stdout, _ = _run(
        "log", "append", "--log", str(log_dir), "--key", str(log_key.path),
        "--from", str(tmp_path / "obs2"), "--json",
    )  # fmt: skip
    assert code == 0 and json.loads(stdout)["unchanged"] == 10, stdout
    write_spec(tmp_path / "specs-one" / "3.json", name="srv3", tools=[tool("t3", "changed")])
    _shards(config, tmp_path / "obs3")
    code, stdout, _ = _run(
        "log", "append", "--log", str(log_dir), "--key", str(log_key.path),
        "--from", str(tmp_path / "obs3"), "--json",
    )  # fmt: skip
    day3 = json.loads(stdout)
    assert code == 0 and (day3["changed"], day3["appended"], day3["log_size"]) == (1, 1, 11)
    assert len(again) == 4


def test_the_sequencer_refuses_bad_or_repeated_observations(
    tmp_path: Path, log_key: LogKey
) -> None:
    config = _servers(tmp_path, 3, "one")
    files = _shards(config, tmp_path / "obs")
    log_dir = tmp_path / "log"
    base = ("log", "append", "--log", str(log_dir), "--key", str(log_key.path))
    busy = next(f for f in files if len(f.read_bytes().splitlines()) > 1)

    code, _, stderr = _run(*base, "--from", str(busy), "--from", str(busy))
    assert code == 2 and "observed twice" in stderr and stderr.count("\n") == 1, stderr

    lines = busy.read_bytes().splitlines()
    doc = json.loads(lines[1])
    item = doc["observation"]["definitions"]["tools"]["items"][0]
    item["definition"]["description"] = "swapped"  # its hashes no longer fit
    forged = tmp_path / "forged.jsonl"
    forged.write_bytes(lines[0] + b"\n" + json.dumps(doc).encode() + b"\n")
    code, _, stderr = _run(*base, "--from", str(forged))
    assert code == 2 and "line 2" in stderr and "Traceback" not in stderr, stderr

    dup = tmp_path / "dup.jsonl"
    dup.write_bytes(lines[0] + b"\n" + b'{"skipped":true,' + lines[1][1:] + b"\n")  # a key twice
    code, _, stderr = _run(*base, "--from", str(dup))
    assert code == 2 and "Traceback" not in stderr, stderr
    assert not (log_dir / "checkpoint").exists()  # nothing was written
