"""The work a build keeps between builds (toolpin.site.cache): the same bytes as a build
without it, only new entries compared again, and a damaged or foreign cache ignored."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from site_helpers import NOW, LogWriter, sample_log, tool

import toolpin.core.drift
import toolpin.site.changes
from toolpin.publog.note import Verifier
from toolpin.site.build import build_site, parse_now


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _no_comparing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("compared again although the cache holds the change")

    monkeypatch.setattr(toolpin.core.drift, "compare", refuse)
    monkeypatch.setattr(toolpin.site.changes, "compare", refuse)


def test_a_cached_build_gives_the_same_bytes_and_compares_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    cache = tmp_path / "cache"
    build_site(tmp_path / "log", vkey, tmp_path / "plain", now=parse_now(NOW))
    build_site(tmp_path / "log", vkey, tmp_path / "first", now=parse_now(NOW), cache=cache)
    assert sorted(p.name for p in cache.iterdir())  # shards were written
    with monkeypatch.context() as patched:
        _no_comparing(patched)
        build_site(tmp_path / "log", vkey, tmp_path / "again", now=parse_now(NOW), cache=cache)
    assert _tree(tmp_path / "plain") == _tree(tmp_path / "first") == _tree(tmp_path / "again")


def test_a_growing_log_compares_only_its_new_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = LogWriter(tmp_path / "log")
    writer.observe("one", [tool("a")], "2026-11-01T00:00:00Z")
    writer.observe("two", [tool("b")], "2026-11-01T00:00:00Z")
    writer.commit()
    writer.observe(
        "one", [tool("a", "changed")], "2026-11-20T00:00:00Z", last_good_look="2026-11-19T00:00:00Z"
    )
    writer.commit()
    vkey = Verifier.from_text(writer.vkey)
    cache, out = tmp_path / "cache", tmp_path / "out"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    # The site is append-only (its proofs name the checkpoint first published with them):
    # the same grown log built over a copy of the same published site, without the cache,
    # gives the same bytes.
    shutil.copytree(out, tmp_path / "cold")
    writer.observe(
        "two",
        [tool("b", "new words")],
        "2026-11-30T00:00:00Z",
        last_good_look="2026-11-29T00:00:00Z",
    )
    writer.commit()
    calls: list[int] = []
    compare = toolpin.core.drift.compare

    def counted(old: object, new: object) -> object:
        calls.append(1)
        return compare(old, new)  # type: ignore[arg-type]

    monkeypatch.setattr(toolpin.core.drift, "compare", counted)
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    assert len(calls) == 1  # the new change of "two"; the older change of "one" was kept
    monkeypatch.undo()
    build_site(tmp_path / "log", vkey, tmp_path / "cold", now=parse_now(NOW))
    # (the partial tiles of checkpoint 3 stay in both: the site keeps every published one)
    assert _tree(out) == _tree(tmp_path / "cold")
    assert (out / "tile/entries/000.p/3").is_file()


def test_a_damaged_or_foreign_cache_is_ignored(tmp_path: Path) -> None:
    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    cache = tmp_path / "cache"
    build_site(tmp_path / "log", vkey, tmp_path / "plain", now=parse_now(NOW), cache=cache)
    # (the build state is in cache/outputs/, the kept reading in cache/verified/)
    shards = sorted(cache.glob("summary/*.json"))
    works = sorted(cache.glob("work/*/*.json"))
    assert shards and works
    shards[0].write_text("{not json", encoding="utf-8")
    works[0].write_text("{not json", encoding="utf-8")
    for shard in shards[1:]:
        doc = json.loads(shard.read_text(encoding="utf-8"))
        for record in doc["servers"].values():
            for item in record.values():
                item[2] = ["forged"]
        doc["code"] = "another toolpin"
        shard.write_text(json.dumps(doc), encoding="utf-8")
    for work in works[1:]:
        doc = json.loads(work.read_text(encoding="utf-8"))
        for item in doc["work"]["bodies"].values():
            item[-1] = "<script>forged</script>"
        doc["code"] = "another toolpin"
        work.write_text(json.dumps(doc), encoding="utf-8")
    build_site(tmp_path / "log", vkey, tmp_path / "again", now=parse_now(NOW), cache=cache)
    assert _tree(tmp_path / "plain") == _tree(tmp_path / "again")
    kept = [*cache.glob("summary/*.json"), *cache.glob("work/*/*.json")]
    assert all("forged" not in p.read_text(encoding="utf-8") for p in kept)


def test_a_kept_change_cut_short_is_compared_again(tmp_path: Path) -> None:
    # Same leaf hashes and code, but too few items: not reused (never an IndexError).
    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    cache = tmp_path / "cache"
    build_site(tmp_path / "log", vkey, tmp_path / "plain", now=parse_now(NOW), cache=cache)
    cut = 0
    for shard in cache.glob("summary/*.json"):
        doc = json.loads(shard.read_text(encoding="utf-8"))
        for record in doc["servers"].values():
            for item in record.values():
                del item[7:]
                cut += 1
        shard.write_text(json.dumps(doc), encoding="utf-8")
    assert cut
    build_site(tmp_path / "log", vkey, tmp_path / "again", now=parse_now(NOW), cache=cache)
    assert _tree(tmp_path / "plain") == _tree(tmp_path / "again")


@pytest.mark.parametrize("workers", [1, 2])
def test_an_incremental_build_visits_only_the_servers_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    import toolpin.site.build as build

    if workers > 1:  # the worker processes' path, on a small log
        monkeypatch.setattr(build, "PARALLEL_FROM", 1)
        monkeypatch.setattr(build, "_workers", lambda: workers)
    writer = LogWriter(tmp_path / "log")
    for name in ("one", "two", "three"):
        writer.observe(name, [tool("a")], "2026-11-01T00:00:00Z")
    writer.commit()
    writer.observe(
        "one", [tool("a", "changed")], "2026-11-20T00:00:00Z", last_good_look="2026-11-19T00:00:00Z"
    )
    writer.commit()
    vkey = Verifier.from_text(writer.vkey)
    cache, out = tmp_path / "cache", tmp_path / "out"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    shutil.copytree(out, tmp_path / "cold")
    visited = tmp_path / "visited"
    files = build._server_files

    def counted(view: object, history: object, *args: object) -> object:
        with visited.open("a", encoding="utf-8") as log:  # (from any process)
            log.write(history.latest.name + "\n")  # type: ignore[attr-defined]
        return files(view, history, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(build, "_server_files", counted)
    writer.observe(
        "two", [tool("b", "new")], "2026-11-30T00:00:00Z", last_good_look="2026-11-29T00:00:00Z"
    )
    writer.commit()
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    assert visited.read_text(encoding="utf-8").split() == ["two"]
    build_site(tmp_path / "log", vkey, tmp_path / "cold", now=parse_now(NOW))
    assert _tree(out) == _tree(tmp_path / "cold")
    # Without the kept summaries every server is visited again (and the bytes are the same).
    for shard in cache.glob("summary/*.json"):
        shard.unlink()
    visited.unlink()
    writer.observe(
        "three", [tool("c", "new")], "2026-11-30T01:00:00Z", last_good_look="2026-11-29T00:00:00Z"
    )
    writer.commit()
    shutil.rmtree(tmp_path / "cold")
    shutil.copytree(out, tmp_path / "cold")
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    assert sorted(visited.read_text(encoding="utf-8").split()) == ["one", "three", "two"]
    build_site(tmp_path / "log", vkey, tmp_path / "cold", now=parse_now(NOW))
    assert _tree(out) == _tree(tmp_path / "cold")
