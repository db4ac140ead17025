"""The audit (`verify_log`) and tamper tests: every kind of damage must fail it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tlog_helpers import make_entries, seeded_signer

from toolpin.publog.blobs import BlobStore
from toolpin.publog.entries import encode_entry
from toolpin.publog.note import Signer
from toolpin.publog.tiles import TileLog, encode_bundle
from toolpin.publog.verify import verify_log


def _blob_entries(root: Path, count: int, start: int) -> list[bytes]:
    store = BlobStore(root)
    out = []
    for i in range(start, start + count):
        ref = store.put(f"full definitions {i % 7}".encode())
        out.append(encode_entry({"i": i, "blob": ref}))
    return out


@pytest.fixture
def log_with_history(tmp_path: Path, signer: Signer) -> tuple[Path, list[str]]:
    """A log of 600 entries (some with blobs) appended in 4 batches; the 4 checkpoints."""
    root = tmp_path / "log"
    log = TileLog.open(root)
    kept = []
    for start, count in [(0, 5), (5, 250), (255, 45), (300, 300)]:
        entries = _blob_entries(root, count, start) if start % 2 else make_entries(count, start)
        log.append(entries, signer)
        kept.append((root / "checkpoint").read_text())
    return root, kept


def test_a_good_log_verifies(log_with_history: tuple[Path, list[str]], signer: Signer) -> None:
    root, kept = log_with_history
    result = verify_log(root, signer.verifier.text)
    assert result.ok and result.exit_code == 0, result.reason
    assert result.entries == 600 and result.blobs == 7
    assert result.checkpoint is not None and result.checkpoint.size == 600
    for old in kept:
        since = verify_log(root, signer.verifier, old)
        assert since.ok, since.reason
    seen = []
    verify_log(root, signer.verifier, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (600, 600) and len(seen) == 3


def _flip(path: Path, offset: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    where = len(data) // 2 if offset is None else offset
    data[where] ^= 0x01
    path.write_bytes(bytes(data))


def _log_files(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".") and p.name != "checkpoint"
    )


def test_a_flipped_byte_in_any_tile_bundle_or_blob_fails(
    log_with_history: tuple[Path, list[str]], signer: Signer, tmp_path: Path
) -> None:
    root, _ = log_with_history
    files = _log_files(root)
    kinds = {p.relative_to(root).parts[1] for p in files}
    assert {"0", "1", "entries", "sha256"} <= kinds  # tiles of both levels, bundles, blobs
    for target in files:
        rel = target.relative_to(root)
        for offset in (0, None, -1):
            copy = tmp_path / "copy"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(root, copy)
            _flip(copy / rel, offset)
            result = verify_log(copy, signer.verifier.text)
            assert not result.ok and result.exit_code == 1, (rel, offset)


def test_a_checkpoint_signed_by_another_key_fails(
    log_with_history: tuple[Path, list[str]], signer: Signer, other_signer: Signer
) -> None:
    root, _ = log_with_history
    assert not verify_log(root, other_signer.verifier.text).ok
    # the same origin name, another key: the attacker re-signs a (here: honest) tree
    impostor = Signer.generate(signer.name)
    note = (root / "checkpoint").read_text()
    body = note.split("\n\n")[0] + "\n"
    from toolpin.publog.note import sign_note

    (root / "checkpoint").write_text(sign_note(body, [impostor]))
    result = verify_log(root, signer.verifier.text)
    assert result.exit_code == 1 and "no verifiable signatures" in result.reason
    # cosigned by the impostor and the real key: still good (unknown signatures are ignored)
    (root / "checkpoint").write_text(sign_note(body, [impostor, signer]))
    assert verify_log(root, signer.verifier.text).ok


def test_an_altered_checkpoint_fails(
    log_with_history: tuple[Path, list[str]], signer: Signer
) -> None:
    root, _ = log_with_history
    path = root / "checkpoint"
    path.write_text(path.read_text().replace("\n600\n", "\n601\n"))
    result = verify_log(root, signer.verifier.text)
    assert result.exit_code == 1 and "invalid signature" in result.reason


@pytest.mark.parametrize(
    "damage",
    [
        "remove last bundle",
        "remove a full tile",
        "truncate a tile",
        "truncate a bundle",
        "remove checkpoint",
        "remove a blob",
        "remove level 1",
        "append to a full tile",
    ],
)
def test_a_truncated_or_incomplete_log_fails(
    log_with_history: tuple[Path, list[str]], signer: Signer, damage: str
) -> None:
    root, _ = log_with_history
    if damage == "remove last bundle":
        (root / "tile/entries/002.p/88").unlink()
    elif damage == "remove a full tile":
        (root / "tile/0/001").unlink()
    elif damage == "truncate a tile":
        path = root / "tile/0/002.p/88"
        path.write_bytes(path.read_bytes()[:-32])
    elif damage == "truncate a bundle":
        path = root / "tile/entries/001"
        path.write_bytes(path.read_bytes()[:-1])
    elif damage == "remove checkpoint":
        (root / "checkpoint").unlink()
    elif damage == "remove a blob":
        next((root / "blob/sha256").iterdir()).unlink()
    elif damage == "remove level 1":
        shutil.rmtree(root / "tile/1")
    elif damage == "append to a full tile":
        path = root / "tile/0/000"
        path.write_bytes(path.read_bytes() + b"\x00" * 32)
    result = verify_log(root, signer.verifier.text)
    assert not result.ok and result.exit_code == 1, damage


def test_a_rewritten_entry_with_recomputed_tiles_fails_on_the_signature(
    tmp_path: Path, signer: Signer
) -> None:
    """An operator without the key rebuilds every tile for a changed entry: the root moves."""
    root = tmp_path / "log"
    log = TileLog.open(root)
    log.append(make_entries(10), signer)
    forged = TileLog.open(tmp_path / "forged")
    entries = make_entries(10)
    entries[3] = encode_entry({"tag": "evil", "i": 3})
    forged.append(entries, seeded_signer(label="attacker"))
    shutil.copy(root / "checkpoint", tmp_path / "forged" / "checkpoint")
    result = verify_log(tmp_path / "forged", signer.verifier.text)
    assert result.exit_code == 1
    assert "root" in result.reason


def test_a_rolled_back_log_fails_against_a_kept_checkpoint(tmp_path: Path, signer: Signer) -> None:
    root = tmp_path / "log"
    log = TileLog.open(root)
    log.append(make_entries(100), signer)
    shutil.copytree(root, tmp_path / "backup")
    log.append(make_entries(50, 100), signer)
    kept = (root / "checkpoint").read_text()
    shutil.rmtree(root)
    shutil.copytree(tmp_path / "backup", root)  # the operator restores the older state
    assert verify_log(root, signer.verifier.text).ok  # fine on its own...
    result = verify_log(root, signer.verifier.text, kept)  # ...but not against what you kept
    assert result.exit_code == 1 and "rolled back" in result.reason


def test_a_forked_log_fails_against_a_kept_checkpoint(tmp_path: Path, signer: Signer) -> None:
    root = tmp_path / "log"
    log = TileLog.open(root)
    log.append(make_entries(300), signer)
    shutil.copytree(root, tmp_path / "fork")
    log.append(make_entries(20, 300, tag="honest"), signer)
    kept = (root / "checkpoint").read_text()
    fork = TileLog.open(tmp_path / "fork")
    fork.append(make_entries(20, 300, tag="other"), signer)  # same size, other entries
    result = verify_log(tmp_path / "fork", signer.verifier.text, kept)
    assert result.exit_code == 1 and "fork" in result.reason
    fork.append(make_entries(30, 320, tag="other"), signer)  # bigger, still a fork
    result = verify_log(tmp_path / "fork", signer.verifier.text, kept)
    assert result.exit_code == 1 and "not consistent" in result.reason
    assert verify_log(root, signer.verifier.text, kept).ok


def test_unusable_inputs_exit_2(
    log_with_history: tuple[Path, list[str]], signer: Signer, other_signer: Signer
) -> None:
    root, kept = log_with_history
    assert verify_log(root, "not a key").exit_code == 2
    assert verify_log(root / "missing", signer.verifier.text).exit_code == 2
    assert verify_log(root / "checkpoint", signer.verifier.text).exit_code == 2
    assert verify_log(root, signer.verifier.text, "garbage\n").exit_code == 2
    foreign = Signer.generate(signer.name)
    from toolpin.publog.checkpoint import Checkpoint, sign_checkpoint
    from toolpin.publog.merkle import EMPTY_ROOT

    other_kept = sign_checkpoint(Checkpoint(signer.name, 0, EMPTY_ROOT), foreign)
    result = verify_log(root, signer.verifier.text, other_kept)
    assert result.exit_code == 2 and "kept checkpoint" in result.reason
    assert verify_log(root, other_signer.verifier.text, kept[0]).exit_code == 2


@pytest.mark.parametrize(
    "bad_entry", [b"not json", b'{"a":1,"a":2}', b"[1]", b'{"blob":"sha256:ABC"}']
)
def test_non_json_or_bad_blob_reference_entries_fail(
    tmp_path: Path, signer: Signer, bad_entry: bytes
) -> None:
    """A log built around the writer (tiles recomputed, checkpoint signed by the key)."""
    from toolpin.publog.checkpoint import Checkpoint, sign_checkpoint
    from toolpin.publog.merkle import MemoryTree, leaf_hash

    bad = tmp_path / "bad"
    entries = [*make_entries(2), bad_entry]
    (bad / "tile/entries/000.p").mkdir(parents=True)
    (bad / "tile/0/000.p").mkdir(parents=True)
    (bad / "tile/entries/000.p/3").write_bytes(encode_bundle(entries))
    (bad / "tile/0/000.p/3").write_bytes(b"".join(leaf_hash(e) for e in entries))
    cp = Checkpoint(signer.name, 3, MemoryTree.from_entries(entries).root())
    (bad / "checkpoint").write_text(sign_checkpoint(cp, signer))
    result = verify_log(bad, signer.verifier.text)
    assert result.exit_code == 1 and result.reason.startswith("entry 2:"), result.reason


def test_older_partial_tiles_are_audited_and_strays_ignored(
    log_with_history: tuple[Path, list[str]], signer: Signer
) -> None:
    root, _ = log_with_history
    old_partial = root / "tile/0/000.p/5"  # kept for the first checkpoint
    assert old_partial.exists()
    stray = root / "tile/0/002.p/200"  # beyond the checkpoint: an interrupted append
    stray.write_bytes(b"\x01" * 32 * 200)
    assert verify_log(root, signer.verifier.text).ok
    _flip(old_partial)
    result = verify_log(root, signer.verifier.text)
    assert result.exit_code == 1 and "older checkpoint" in result.reason


def test_writer_removes_strays_before_they_look_like_history(
    tmp_path: Path, signer: Signer
) -> None:
    log = TileLog.open(tmp_path / "log")
    log.append(make_entries(10), signer)
    stray = tmp_path / "log/tile/0/000.p/15"
    stray.write_bytes(b"\x02" * 32 * 15)  # an interrupted append of 5 other entries
    log.append(make_entries(10, 10), signer)  # 10 -> 20 skips width 15
    assert not stray.exists()
    assert verify_log(tmp_path / "log", signer.verifier.text).ok


def test_oversized_files_are_refused_without_reading_them_whole(
    log_with_history: tuple[Path, list[str]], signer: Signer
) -> None:
    root, _ = log_with_history
    with open(root / "tile/0/000", "ab") as handle:
        handle.truncate(64 << 20)  # a sparse 64 MiB "tile"
    result = verify_log(root, signer.verifier.text)
    assert result.exit_code == 1 and "larger than any valid file" in result.reason
