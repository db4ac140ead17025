"""End-to-end crawls of local stdio servers (a raw stub and an MCP SDK server)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from crawl_helpers import (
    SDK_SERVER,
    LogKey,
    independent_check,
    stub_argv,
    tool,
    write_config,
    write_spec,
)

from toolpin.crawl.runner import CrawlEvent, CrawlOptions, crawl, default_state_path
from toolpin.crawl.state import CrawlState
from toolpin.errors import InputError, LogError
from toolpin.publog.entries import encode_entry
from toolpin.publog.tiles import TileLog
from toolpin.publog.verify import verify_log


def _options(tmp_path: Path, key: LogKey, config: Path, **extra: object) -> CrawlOptions:
    values: dict[str, object] = {
        "log_dir": tmp_path / "log",
        "signer": key.signer,
        "sources": ("config",),
        "servers_config": config,
        "timeout": 20.0,
        "concurrency": 3,
        "optout_dirs": (tmp_path / "log",),
    }
    values.update(extra)
    return CrawlOptions(**values)  # type: ignore[arg-type]


@pytest.fixture
def servers(tmp_path: Path) -> dict[str, Path]:
    specs = tmp_path / "specs"
    specs.mkdir()
    return {
        "alpha": write_spec(specs / "alpha.json", name="alpha", tools=[tool("a1"), tool("a2")]),
        "beta": write_spec(
            specs / "beta.json",
            name="beta",
            modern=True,
            tools=[tool(f"b{i}") for i in range(5)],
            page_size=2,
            instructions="Be careful.",
            prompts=[{"name": "p1", "description": "a prompt"}],
        ),
        "broken": write_spec(specs / "broken.json", crash=3),
    }


def _config(tmp_path: Path, servers: dict[str, Path], *, sdk: bool = True) -> Path:
    entries: dict[str, object] = {name: stub_argv(spec) for name, spec in servers.items()}
    if sdk:
        entries["sdk"] = [sys.executable, str(SDK_SERVER)]
    return write_config(tmp_path / "servers.json", entries)


def test_first_crawl_logs_every_working_server_and_verifies(
    tmp_path: Path, log_key: LogKey, servers: dict[str, Path]
) -> None:
    config = _config(tmp_path, servers)
    events: list[CrawlEvent] = []
    summary = crawl(_options(tmp_path, log_key, config), events.append)
    data = summary.to_json()
    assert (data["candidates"], data["probed"], data["ok"], data["failed"]) == (4, 4, 3, 1)
    assert (data["new"], data["changed"], data["appended"], data["log_size"]) == (3, 0, 3, 3)
    assert [e.kind for e in events if e.kind in ("start", "append")] == ["start", "append"]
    assert sorted(e.status or "" for e in events if e.kind == "done") == [
        "failed",
        "ok",
        "ok",
        "ok",
    ]

    log_dir = tmp_path / "log"
    result = verify_log(log_dir, log_key.vkey)
    assert result.ok, result.reason
    records = independent_check(log_dir, log_key.vkey)
    by_name = {r["server"]["name"]: r for r in records}
    assert set(by_name) == {"alpha", "beta", "sdk"}
    beta = by_name["beta"]
    assert beta["protocol"] == {"era": "modern", "version": "2026-07-28"}
    assert beta["counts"]["tools"] == 5  # all three pages
    assert beta["counts"]["prompts"] == 1
    assert beta["previous"] is None
    assert beta["server"]["transport"] == "stdio"
    assert beta["server"]["source"] == "config"
    assert by_name["alpha"]["protocol"]["era"] == "handshake"
    assert by_name["sdk"]["serverInfo"] == {"name": "sdk-demo", "version": "2.0.0"}
    assert "PATH" in beta["probeEnv"]["supplied"]
    assert beta["probeEnv"]["placeholders"] == []

    state = CrawlState.open(default_state_path(log_dir))
    rows = {s.name: s for s in state.servers()}
    assert rows["broken"].surface_hash is None
    assert rows["broken"].last_error is not None
    assert "exited" in rows["broken"].last_error or "stopped" in rows["broken"].last_error
    assert rows["alpha"].last_entry is not None and rows["alpha"].last_ok is not None
    assert rows["alpha"].last_change_after is None  # first sight: no earlier look
    state.close()


def test_unchanged_crawl_adds_nothing_and_a_change_adds_exactly_one(
    tmp_path: Path, log_key: LogKey, servers: dict[str, Path]
) -> None:
    config = _config(tmp_path, servers, sdk=False)
    opts = _options(tmp_path, log_key, config)
    first = crawl(opts)
    assert first.appended == 2
    checkpoint_before = (tmp_path / "log" / "checkpoint").read_bytes()

    second = crawl(opts)
    assert second.appended == 0
    assert second.to_json()["unchanged"] == 2
    assert second.log_size == 2
    assert (tmp_path / "log" / "checkpoint").read_bytes() == checkpoint_before

    write_spec(servers["alpha"], name="alpha", tools=[tool("a1"), tool("a2", "now different")])
    third = crawl(opts)
    assert (third.appended, third.to_json()["changed"], third.log_size) == (1, 1, 3)
    records = independent_check(tmp_path / "log", log_key.vkey)
    alpha_entries = [i for i, r in enumerate(records) if r["server"]["name"] == "alpha"]
    assert len(alpha_entries) == 2
    latest = records[alpha_entries[1]]
    assert latest["previous"] == alpha_entries[0]
    assert latest["digests"]["tools"] != records[alpha_entries[0]]["digests"]["tools"]
    assert verify_log(tmp_path / "log", log_key.vkey).ok

    with CrawlState.open(default_state_path(tmp_path / "log")) as state:
        alpha = next(s for s in state.servers() if s.name == "alpha")
        assert alpha.last_entry == alpha_entries[1]
        assert alpha.last_change_after is not None  # the good look before the change
        assert alpha.last_change is not None and alpha.last_change_after <= alpha.last_change
        assert [r["appended"] for r in state.runs()] == [2, 0, 1]


def test_the_blob_holds_the_definitions_behind_every_digest(
    tmp_path: Path, log_key: LogKey, servers: dict[str, Path]
) -> None:
    from toolpin.core.canonical import set_hash
    from toolpin.publog.blobs import BlobStore

    config = write_config(tmp_path / "one.json", {"beta": stub_argv(servers["beta"])})
    crawl(_options(tmp_path, log_key, config))
    (record,) = independent_check(tmp_path / "log", log_key.vkey)
    blob = json.loads(BlobStore(tmp_path / "log").get(record["blob"]))
    tools = blob["tools"]["items"]
    assert [t["name"] for t in tools] == [f"b{i}" for i in range(5)]
    assert set_hash((t["name"], t["hash"]) for t in tools) == record["digests"]["tools"]
    assert blob["surfaceHash"] == record["digests"]["surface"]
    assert blob["instructions"]["text"] == "Be careful."


def test_opt_out_is_honoured(tmp_path: Path, log_key: LogKey, servers: dict[str, Path]) -> None:
    config = _config(tmp_path, servers, sdk=False)
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "OPTOUT.txt").write_text("# please do not crawl\nALPHA  # by name\n")
    summary = crawl(_options(tmp_path, log_key, config))
    assert summary.opted_out == 1
    names = {r.candidate.name for r in summary.results}
    assert "alpha" not in names
    records = independent_check(tmp_path / "log", log_key.vkey)
    assert [r["server"]["name"] for r in records] == ["beta"]


def test_a_failing_server_never_stops_the_crawl_and_makes_no_entry(
    tmp_path: Path, log_key: LogKey, servers: dict[str, Path]
) -> None:
    specs = tmp_path / "specs"
    config = write_config(
        tmp_path / "mixed.json",
        {
            "hangs": stub_argv(write_spec(specs / "hang.json", hang=True)),
            "missing": ["/nonexistent/toolpin-no-such-server"],
            "beta": stub_argv(servers["beta"]),
        },
    )
    summary = crawl(_options(tmp_path, log_key, config, timeout=2.0))
    assert summary.appended == 1
    failed = {r.candidate.name: r.reason for r in summary.results if r.status == "failed"}
    assert set(failed) == {"hangs", "missing"}
    assert "did not answer within 2s" in (failed["hangs"] or "")
    with CrawlState.open(default_state_path(tmp_path / "log")) as state:
        rows = {s.name: s for s in state.servers()}
        assert rows["hangs"].last_error == failed["hangs"]
        assert rows["hangs"].last_probe is not None and rows["hangs"].last_ok is None


def test_the_crawl_state_repairs_itself_from_the_log(
    tmp_path: Path, log_key: LogKey, servers: dict[str, Path]
) -> None:
    """A crawl killed between the append and the state commit: the next run replays the
    entries it did not record, so it neither re-logs the server nor breaks the link."""
    config = write_config(tmp_path / "one.json", {"alpha": stub_argv(servers["alpha"])})
    opts = _options(tmp_path, log_key, config)
    crawl(opts)
    state_path = default_state_path(tmp_path / "log")
    write_spec(servers["alpha"], name="alpha", tools=[tool("z")])
    # Simulate the lost commit: log a change, then restore the state as it was.
    saved = state_path.read_bytes()
    crawl(opts)
    state_path.write_bytes(saved)
    summary = crawl(opts)
    assert summary.replayed == 1
    assert summary.appended == 0
    assert summary.log_size == 2


def test_a_rolled_back_log_is_refused(
    tmp_path: Path, log_key: LogKey, servers: dict[str, Path]
) -> None:
    import shutil

    config = write_config(tmp_path / "one.json", {"alpha": stub_argv(servers["alpha"])})
    opts = _options(tmp_path, log_key, config)
    crawl(opts)
    shutil.copytree(tmp_path / "log", tmp_path / "old-log")
    write_spec(servers["alpha"], name="alpha", tools=[tool("z")])
    crawl(opts)
    shutil.rmtree(tmp_path / "log")
    shutil.copytree(tmp_path / "old-log", tmp_path / "log")
    with pytest.raises(LogError, match="rolled back"):
        crawl(opts)


def test_the_state_must_not_be_published_or_shared(
    tmp_path: Path, log_key: LogKey, servers: dict[str, Path]
) -> None:
    from toolpin.publog.note import Signer

    config = write_config(tmp_path / "one.json", {"alpha": stub_argv(servers["alpha"])})
    (tmp_path / "log").mkdir()
    with pytest.raises(InputError, match="inside the log directory"):
        crawl(_options(tmp_path, log_key, config, state_path=tmp_path / "log" / "s.sqlite"))
    crawl(_options(tmp_path, log_key, config))
    other = Signer.generate("other.example/log")
    with pytest.raises(LogError, match="belongs to another log"):
        crawl(
            _options(
                tmp_path,
                log_key,
                config,
                signer=other,
                log_dir=tmp_path / "other-log",
                state_path=default_state_path(tmp_path / "log"),
            )
        )


def test_entries_appended_elsewhere_keep_the_continuity_links(
    tmp_path: Path, log_key: LogKey, servers: dict[str, Path]
) -> None:
    """Another writer's entries (not observation records) are skipped by the replay."""
    config = write_config(tmp_path / "one.json", {"alpha": stub_argv(servers["alpha"])})
    opts = _options(tmp_path, log_key, config)
    crawl(opts)
    TileLog.open(tmp_path / "log").append([encode_entry({"note": "hello"})], log_key.signer)
    write_spec(servers["alpha"], name="alpha", tools=[tool("z")])
    summary = crawl(opts)
    assert summary.appended == 1 and summary.log_size == 3
    records = independent_check(tmp_path / "log", log_key.vkey)
    assert records[2]["previous"] == 0


def test_limit_applies_after_opt_out(
    tmp_path: Path, log_key: LogKey, servers: dict[str, Path]
) -> None:
    config = _config(tmp_path, servers, sdk=False)
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "OPTOUT.txt").write_text("alpha\n")
    summary = crawl(_options(tmp_path, log_key, config, limit=1))
    assert [r.candidate.name for r in summary.results] == ["beta"]
    assert summary.to_json()["candidates"] == 3  # all found, before opt-out and limit
    assert summary.opted_out == 1
