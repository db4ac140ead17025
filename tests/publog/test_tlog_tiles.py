"""tlog-tiles layout, the log writer and the tile reader."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tlog_helpers import make_entries, seeded_signer

from toolpin.errors import LogError
from toolpin.publog.checkpoint import open_checkpoint
from toolpin.publog.entries import encode_entry
from toolpin.publog.merkle import (
    EMPTY_ROOT,
    MemoryTree,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from toolpin.publog.note import Signer
from toolpin.publog.tilepaths import node_in_tile, tile_span_root
from toolpin.publog.tiles import (
    TileLog,
    TileRef,
    decode_bundle,
    encode_bundle,
    entries_path,
    format_index,
    tile_path,
    tiles_for_size,
)

BuildLog = Callable[..., TileLog]


def test_a_node_is_the_root_of_its_span_in_a_tile() -> None:
    tree = MemoryTree.from_entries([b"%d" % i for i in range(600)])
    level0 = b"".join(tree.node(0, i) for i in range(256, 512))
    assert node_in_tile(0, 300) == (0, 1, 44, 1)
    assert node_in_tile(3, 40) == (0, 1, 64, 8)
    assert node_in_tile(8, 1) == (1, 0, 1, 1)
    assert node_in_tile(10, 3) == (1, 0, 12, 4)
    assert tile_span_root(level0, 44, 1) == tree.node(0, 300)
    assert tile_span_root(level0, 64, 8) == tree.node(3, 40)
    assert tile_span_root(level0, 0, 256) == tree.node(8, 1)


def test_index_paths_follow_the_spec() -> None:
    assert format_index(1234067) == "x001/x234/067"
    assert format_index(0) == "000"
    assert format_index(5) == "005"
    assert format_index(999) == "999"
    assert format_index(1000) == "x001/000"
    assert format_index(1_000_000) == "x001/x000/000"
    assert tile_path(0, 1234067) == "tile/0/x001/x234/067"
    assert tile_path(3, 5, 2) == "tile/3/005.p/2"
    assert entries_path(273, 112) == "tile/entries/273.p/112"
    assert entries_path(7) == "tile/entries/007"
    with pytest.raises(ValueError):
        tile_path(0, 1, 0)
    with pytest.raises(ValueError):
        tile_path(64, 1)


def test_tiles_for_size_matches_the_spec_examples() -> None:
    tiles = tiles_for_size(70_000)
    level0 = [t for t in tiles if t.level == 0]
    assert len([t for t in level0 if t.full]) == 273
    assert [t for t in level0 if not t.full] == [TileRef(0, 273, 112)]
    assert [t for t in tiles if t.level == 1] == [TileRef(1, 0, 256), TileRef(1, 1, 17)]
    assert [t for t in tiles if t.level == 2] == [TileRef(2, 0, 1)]
    assert tiles_for_size(256) == [TileRef(0, 0, 256), TileRef(1, 0, 1)]
    assert tiles_for_size(0) == []


def test_bundles_round_trip_and_truncation_is_detected() -> None:
    entries = [b"", b"a", b"x" * 300, b"\x00" * 65535]
    data = encode_bundle(entries)
    assert data[:2] == b"\x00\x00" and data[2:5] == b"\x00\x01a"
    assert decode_bundle(data) == entries
    with pytest.raises(LogError):
        decode_bundle(data[:-1])
    with pytest.raises(LogError):
        decode_bundle(b"\x00")
    with pytest.raises(LogError):
        encode_bundle([b"x" * 65536])


def test_the_70000_entry_log_has_the_spec_layout_and_root(tmp_path: Path, signer: Signer) -> None:
    entries = make_entries(70_000)
    log = TileLog.open(tmp_path / "log")
    for start, end in [(0, 5), (5, 300), (300, 65_539), (65_539, 70_000)]:
        log.append(entries[start:end], signer)
    tree = MemoryTree.from_entries(entries)
    assert log.root() == tree.root() == log.checkpoint.root  # type: ignore[union-attr]
    for ref in tiles_for_size(70_000):
        data = (tmp_path / "log" / ref.path).read_bytes()
        assert len(data) == 32 * ref.width
    for index in [0, 255, 256, 65_535, 65_536, 69_999]:
        assert log.read_entry(index) == entries[index]
        assert log.inclusion_proof(index) == tree.inclusion_proof(index)
    for old in [1, 5, 256, 300, 65_536, 65_539, 69_999]:
        assert log.consistency_proof(old) == tree.consistency_proof(old)
    # level-1 hash 0 is the root of full level-0 tile 0
    level1 = (tmp_path / "log" / "tile/1/000").read_bytes()
    assert level1[:32] == MemoryTree.from_entries(entries[:256]).root()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=5))
def test_any_batching_gives_the_same_tree_and_proofs(
    tmp_path_factory: pytest.TempPathFactory, batches: list[int]
) -> None:
    signer = seeded_signer()
    root = tmp_path_factory.mktemp("batches")
    log = TileLog.open(root / "log")
    entries = make_entries(sum(batches))
    done = 0
    for size in batches:
        log.append(entries[done : done + size], signer)
        done += size
    tree = MemoryTree.from_entries(entries)
    assert log.size == len(entries)
    assert log.checkpoint is not None and log.checkpoint.root == tree.root()
    for index in {0, len(entries) // 2, len(entries) - 1} if entries else set():
        proof = log.inclusion_proof(index)
        assert verify_inclusion(leaf_hash(entries[index]), index, log.size, proof, tree.root())
    for old in {0, 1, len(entries) // 3, len(entries)}:
        if old <= len(entries):
            proof = log.consistency_proof(old)
            assert verify_consistency(old, log.size, tree.root(old), tree.root(), proof)
    assert list(log.iter_entries()) == entries


def test_proofs_for_older_sizes_are_served(build_log: BuildLog) -> None:
    log = build_log(100, 200, 300)
    entries = make_entries(600)
    tree = MemoryTree.from_entries(entries)
    for size in [1, 100, 255, 256, 257, 300, 599, 600]:
        assert log.root(size) == tree.root(size)
        assert log.inclusion_proof(size - 1, size) == tree.inclusion_proof(size - 1, size)
        assert log.consistency_proof(1, size) == tree.consistency_proof(1, size)
    with pytest.raises(LogError):
        log.root(601)
    with pytest.raises(LogError):
        log.read_entry(600)


def test_empty_append_signs_an_empty_log(tmp_path: Path, signer: Signer) -> None:
    log = TileLog.open(tmp_path / "new")
    cp = log.append([], signer)
    assert (cp.size, cp.root) == (0, EMPTY_ROOT)
    text = (tmp_path / "new" / "checkpoint").read_text()
    assert open_checkpoint(text, signer.verifier) == cp
    assert TileLog.open(tmp_path / "new", signer.verifier).size == 0


def test_full_tiles_are_written_once_and_never_rewritten(build_log: BuildLog) -> None:
    log = build_log(256)
    full = log.path / "tile/0/000"
    bundle = log.path / "tile/entries/000"
    before = (full.stat().st_ino, full.stat().st_mtime_ns, bundle.stat().st_ino)
    log.append(make_entries(300, 256), seeded_signer())
    assert (full.stat().st_ino, full.stat().st_mtime_ns, bundle.stat().st_ino) == before
    # partial tiles of older checkpoints stay, new partial tiles are added beside them
    assert (log.path / "tile/1/000.p/1").exists()
    assert (log.path / "tile/1/000.p/2").exists()


def test_a_stray_partial_tile_is_replaced(build_log: BuildLog) -> None:
    log = build_log(10)
    stray = log.path / "tile/0/000.p/12"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"\x00" * 32 * 12)
    (log.path / "tile/entries/000.p/12").write_bytes(b"junk")
    log.append(make_entries(2, 10), seeded_signer())
    assert stray.read_bytes()[:32] == leaf_hash(make_entries(1)[0])
    assert log.root() == MemoryTree.from_entries(make_entries(12)).root()


def test_a_stray_full_tile_must_match(build_log: BuildLog) -> None:
    log = build_log(250)
    stray = log.path / "tile/0/000"
    stray.write_bytes(b"\x00" * 8192)
    with pytest.raises(LogError, match="never rewritten"):
        log.append(make_entries(10, 250), seeded_signer())
    assert stray.read_bytes() == b"\x00" * 8192
    assert TileLog.open(log.path, seeded_signer().verifier).size == 250
    # the same bytes an append would write are accepted
    stray.unlink()
    entries = make_entries(260)
    stray.write_bytes(b"".join(leaf_hash(e) for e in entries[:256]))
    log.append(entries[250:], seeded_signer())
    assert log.size == 260


def test_append_refuses_a_checkpoint_signed_by_another_key(
    build_log: BuildLog, other_signer: Signer
) -> None:
    log = build_log(5)
    with pytest.raises(LogError):
        log.append(make_entries(1, 5), other_signer)
    impostor = Signer.generate("log.example/toolpin-test")
    with pytest.raises(LogError):
        log.append(make_entries(1, 5), impostor)


def test_append_refuses_tiles_that_do_not_match_the_checkpoint(build_log: BuildLog) -> None:
    log = build_log(5)
    tile = log.path / "tile/0/000.p/5"
    data = bytearray(tile.read_bytes())
    data[40] ^= 1
    tile.write_bytes(bytes(data))
    with pytest.raises(LogError, match="do not match"):
        log.append(make_entries(1, 5), seeded_signer())


def test_append_refuses_a_bundle_that_does_not_match_its_tile(build_log: BuildLog) -> None:
    log = build_log(5)
    bundle = log.path / "tile/entries/000.p/5"
    entries = decode_bundle(bundle.read_bytes())
    entries[1] = encode_entry({"tag": "x", "i": 1})
    bundle.write_bytes(encode_bundle(entries))
    with pytest.raises(LogError, match="does not match its tile"):
        log.append(make_entries(1, 5), seeded_signer())


def test_append_validates_entries(build_log: BuildLog) -> None:
    log = build_log(1)
    signer = seeded_signer()
    with pytest.raises(LogError, match="65,535"):
        log.append([b"x" * 65_536], signer)
    with pytest.raises(LogError, match="JSON"):
        log.append([b"not json"], signer)
    with pytest.raises(LogError, match="canonical"):
        log.append([b'{"b":1, "a":2}'], signer)
    with pytest.raises(LogError, match="missing"):
        log.append([encode_entry({"blob": "sha256:" + "0" * 64})], signer)
    assert log.size == 1


def test_open_reads_without_a_key_and_checks_with_one(
    build_log: BuildLog, other_signer: Signer
) -> None:
    log = build_log(3)
    assert TileLog.open(log.path).size == 3
    with pytest.raises(LogError):
        TileLog.open(log.path, other_signer.verifier)
    file_path = log.path / "checkpoint"
    with pytest.raises(LogError, match="not a directory"):
        TileLog.open(file_path)


def test_lock_file_and_temp_files_are_dot_files(build_log: BuildLog) -> None:
    log = build_log(3, 300)
    names = [p.name for p in log.path.rglob("*")]
    assert ".toolpin.lock" in names
    assert not [n for n in names if n.endswith(".tmp")]
    assert all(os.path.basename(n) == n for n in names)
