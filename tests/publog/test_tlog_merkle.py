"""RFC 6962 / 9162 hashing and proofs: published vectors, properties, a second implementation."""

from __future__ import annotations

import base64
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tlog_helpers import load_vectors

from toolpin.publog.merkle import (
    EMPTY_ROOT,
    MemoryTree,
    leaf_hash,
    level_path,
    node_hash,
    root_from_inclusion,
    tree_levels,
    verify_consistency,
    verify_inclusion,
)

V = load_vectors("rfc6962_vectors.json")
LEAVES = [bytes.fromhex(x) for x in V["leaves"]]
ROOTS = [bytes.fromhex(x) for x in V["roots"]]
TREE = MemoryTree.from_entries(LEAVES)
SOME_HASH = bytes.fromhex("abacaba000000000000000000000000000000000000000000060061e00123456")


def _path(hexes: list[str]) -> list[bytes]:
    return [bytes.fromhex(h) for h in hexes]


# -- published vectors -----------------------------------------------------------------------


def test_roots_of_the_reference_tree_for_every_size() -> None:
    assert len(ROOTS) == 9
    for size, root in enumerate(ROOTS):
        assert TREE.root(size) == root
    assert ROOTS[0] == EMPTY_ROOT


def test_go_sumdb_record_hash_vector() -> None:
    vector = V["gosumdb_record_hash"]
    expected = base64.b64decode(vector["tree_text"].split("\n")[2])
    assert leaf_hash(vector["record"].encode()) == expected


def test_inclusion_vectors_generate_and_verify() -> None:
    for case in V["inclusion"]:
        index, size, path = case["index"], case["size"], _path(case["path"])
        assert TREE.inclusion_proof(index, size) == path
        assert verify_inclusion(leaf_hash(LEAVES[index]), index, size, path, ROOTS[size])


def test_consistency_vectors_generate_and_verify() -> None:
    for case in V["consistency"]:
        old, new, path = case["old"], case["new"], _path(case["path"])
        assert TREE.consistency_proof(old, new) == path
        assert verify_consistency(old, new, ROOTS[old], ROOTS[new], path)


def _corrupt_inclusion(
    index: int, size: int, path: list[bytes], root: bytes, leaf: bytes
) -> list[tuple[str, int, int, list[bytes], bytes, bytes]]:
    probes = [
        ("index-1", index - 1, size, path, root, leaf),
        ("index+1", index + 1, size, path, root, leaf),
        ("index^2", index ^ 2, size, path, root, leaf),
        ("size*2", index, size * 2, path, root, leaf),
        ("size/2", index, size // 2, path, root, leaf),
        ("wrong leaf", index, size, path, root, hashlib.sha256(b"WrongLeaf").digest()),
        ("empty root", index, size, path, EMPTY_ROOT, leaf),
        ("random root", index, size, path, SOME_HASH, leaf),
        ("trailing root", index, size, [*path, root], root, leaf),
        ("preceding root", index, size, [root, *path], root, leaf),
        ("trailing short", index, size, [*path, b""], root, leaf),
    ]
    for i in range(len(path)):
        flipped = list(path)
        flipped[i] = bytes([flipped[i][0] ^ 8]) + flipped[i][1:]
        probes.append((f"flip {i}", index, size, flipped, root, leaf))
    if path:
        probes.append(("removed", index, size, path[:-1], root, leaf))
    if len(path) > 1:
        probes.append(("inserted", index, size, [path[0], SOME_HASH, *path[1:]], root, leaf))
    return probes


def test_corrupted_inclusion_vectors_fail() -> None:
    for case in V["inclusion"][:4]:
        index, size, path = case["index"], case["size"], _path(case["path"])
        leaf = leaf_hash(LEAVES[index])
        for name, i, n, p, r, lf in _corrupt_inclusion(index, size, path, ROOTS[size], leaf):
            assert not verify_inclusion(lf, i, n, p, r), (case, name)


def test_corrupted_consistency_vectors_fail() -> None:
    for case in V["consistency"][1:]:
        old, new, path = case["old"], case["new"], _path(case["path"])
        r1, r2 = ROOTS[old], ROOTS[new]
        wrong = hashlib.sha256(b"WrongRoot").digest()
        probes = [
            (old - 1, new, r1, r2, path),
            (old + 1, new, r1, r2, path),
            (old ^ 2, new, r1, r2, path),
            (old, new * 2, r1, r2, path),
            (old, new // 2, r1, r2, path),
            (old, new, wrong, r2, path),
            (old, new, r1, wrong, path),
            (old, new, r2, r1, path),
            (old, new, r1, r2, []),
            (old, new, r1, r2, [*path, r1]),
            (old, new, r1, r2, [*path, r2]),
            (old, new, r1, r2, [r1, *path]),
            (old, new, r1, r2, [r2, *path]),
            (old, new, r1, r2, [path[0], *path]),
            (old, new, r1, r2, path[:-1]),
        ]
        for i in range(len(path)):
            flipped = list(path)
            flipped[i] = bytes([flipped[i][0] ^ 16]) + flipped[i][1:]
            probes.append((old, new, r1, r2, flipped))
        for number, (a, b, ra, rb, p) in enumerate(probes):
            assert not verify_consistency(a, b, ra, rb, p), (case, number)


def test_consistency_edge_cases() -> None:
    r = ROOTS
    assert verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [])
    assert verify_consistency(0, 5, EMPTY_ROOT, r[5], [])
    assert not verify_consistency(0, 5, r[1], r[5], [])  # size 0 has one root only
    assert not verify_consistency(0, 5, EMPTY_ROOT, r[5], [EMPTY_ROOT])
    assert verify_consistency(4, 4, r[4], r[4], [])
    assert not verify_consistency(4, 4, r[4], r[5], [])
    assert not verify_consistency(4, 4, r[4], r[4], [r[4]])
    assert not verify_consistency(5, 4, r[5], r[4], [])  # time travel
    assert not verify_consistency(1, 2, r[1], r[2], [])  # empty proof


def test_inclusion_edge_cases() -> None:
    one = leaf_hash(b"data")
    assert verify_inclusion(one, 0, 1, [], one)
    assert not verify_inclusion(one, 0, 1, [], b"")
    assert not verify_inclusion(b"", 0, 1, [], one)
    for index, size in [(0, 0), (1, 0), (2, 1), (-1, 4)]:
        assert root_from_inclusion(SOME_HASH, index, size, []) is None


# -- a second implementation, written straight from the RFC's recursive definitions -------------


def _mth(d: list[bytes]) -> bytes:
    if not d:
        return hashlib.sha256(b"").digest()
    if len(d) == 1:
        return hashlib.sha256(b"\x00" + d[0]).digest()
    k = 1
    while k * 2 < len(d):
        k *= 2
    return hashlib.sha256(b"\x01" + _mth(d[:k]) + _mth(d[k:])).digest()


def _path_ref(m: int, d: list[bytes]) -> list[bytes]:
    if len(d) == 1:
        return []
    k = 1
    while k * 2 < len(d):
        k *= 2
    if m < k:
        return [*_path_ref(m, d[:k]), _mth(d[k:])]
    return [*_path_ref(m - k, d[k:]), _mth(d[:k])]


def _subproof_ref(m: int, d: list[bytes], b: bool) -> list[bytes]:
    if m == len(d):
        return [] if b else [_mth(d)]
    k = 1
    while k * 2 < len(d):
        k *= 2
    if m <= k:
        return [*_subproof_ref(m, d[:k], b), _mth(d[k:])]
    return [*_subproof_ref(m - k, d[k:], False), _mth(d[:k])]


def test_second_implementation_agrees_on_roots_and_proofs() -> None:
    entries = [f"entry {i}".encode() for i in range(70)]
    tree = MemoryTree.from_entries(entries)
    for n in range(71):
        assert tree.root(n) == _mth(entries[:n]), n
        for m in range(n):
            assert tree.inclusion_proof(m, n) == _path_ref(m, entries[:n])
        for m in range(1, n):
            assert tree.consistency_proof(m, n) == _subproof_ref(m, entries[:n], True)


def test_node_hash_is_prefixed() -> None:
    a, b = leaf_hash(b"a"), leaf_hash(b"b")
    assert node_hash(a, b) == hashlib.sha256(b"\x01" + a + b).digest()
    assert leaf_hash(b"") != node_hash(b"", b"")


# -- properties -------------------------------------------------------------------------------

BIG = MemoryTree.from_entries([i.to_bytes(4, "big") for i in range(600)])


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 600).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))))
def test_every_inclusion_proof_verifies(case: tuple[int, int]) -> None:
    size, index = case
    proof = BIG.inclusion_proof(index, size)
    leaf = leaf_hash(index.to_bytes(4, "big"))
    assert verify_inclusion(leaf, index, size, proof, BIG.root(size))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 600))
def test_the_levels_of_a_tree_give_its_root_and_every_proof(size: int) -> None:
    levels = tree_levels([leaf_hash(i.to_bytes(4, "big")) for i in range(size)])
    assert levels[-1] == [BIG.root(size)]
    assert [level_path(levels, index) for index in range(size)] == [
        BIG.inclusion_proof(index, size) for index in range(size)
    ]
    # any per-node mapping of the levels reads the same path, mapped
    named = [[(n, i) for i in range(len(level))] for n, level in enumerate(levels)]
    for index in range(size):
        path = level_path(named, index)
        assert [levels[n][i] for n, i in path] == level_path(levels, index)


def test_the_levels_agree_with_the_second_implementation() -> None:
    entries = [f"entry {i}".encode() for i in range(70)]
    for n in range(1, 71):
        levels = tree_levels([leaf_hash(e) for e in entries[:n]])
        assert levels[-1] == [_mth(entries[:n])]
        for m in range(n):
            assert level_path(levels, m) == _path_ref(m, entries[:n])
    with pytest.raises(ValueError, match="outside"):
        level_path(tree_levels([leaf_hash(b"x")]), 1)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 600).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_every_consistency_proof_verifies(case: tuple[int, int]) -> None:
    new, old = case
    proof = BIG.consistency_proof(old, new)
    assert verify_consistency(old, new, BIG.root(old), BIG.root(new), proof)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 600).flatmap(
        lambda n: st.tuples(
            st.just(n), st.integers(0, n - 1), st.integers(0, 255), st.integers(0, n - 1)
        )
    )
)
def test_any_corrupted_inclusion_proof_fails(case: tuple[int, int, int, int]) -> None:
    size, index, bit, other = case
    proof = BIG.inclusion_proof(index, size)
    leaf = leaf_hash(index.to_bytes(4, "big"))
    root = BIG.root(size)
    # a flipped bit anywhere in the proof
    if proof:
        which, pos = divmod(bit, 8)
        which %= len(proof)
        flipped = list(proof)
        element = bytearray(flipped[which])
        element[(bit * 7) % 32] ^= 1 << pos
        flipped[which] = bytes(element)
        assert not verify_inclusion(leaf, index, size, flipped, root)
    # a wrong index
    if other != index:
        assert not verify_inclusion(leaf, other, size, proof, root)
    # a wrong size, checked against that size's own root (the pair a checkpoint signs)
    for wrong in {size - 1, size + 1, size * 2, max(1, size // 2)} - {size}:
        if wrong <= 600 and index < wrong:
            assert not verify_inclusion(leaf, index, wrong, proof, BIG.root(wrong))
    # an extra hash at the end, the front, or inside; a missing hash
    assert not verify_inclusion(leaf, index, size, [*proof, root], root)
    assert not verify_inclusion(leaf, index, size, [leaf, *proof], root)
    if proof:
        assert not verify_inclusion(leaf, index, size, proof[:-1], root)
        assert not verify_inclusion(leaf, index, size, proof[1:], root)
        assert not verify_inclusion(leaf, index, size, [proof[0], *proof], root)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(3, 600).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(1, n - 1), st.integers(0, 255))
    )
)
def test_any_corrupted_consistency_proof_fails(case: tuple[int, int, int]) -> None:
    new, old, bit = case
    proof = BIG.consistency_proof(old, new)
    r_old, r_new = BIG.root(old), BIG.root(new)
    which, pos = divmod(bit, 8)
    which %= len(proof)
    flipped = list(proof)
    element = bytearray(flipped[which])
    element[(bit * 7) % 32] ^= 1 << pos
    flipped[which] = bytes(element)
    assert not verify_consistency(old, new, r_old, r_new, flipped)
    for wrong_old in {old - 1, old + 1} - {0, new}:
        assert not verify_consistency(wrong_old, new, BIG.root(wrong_old), r_new, proof)
    for wrong_new in {new - 1, new + 1} - {old}:
        if wrong_new <= 600:
            assert not verify_consistency(old, wrong_new, r_old, BIG.root(wrong_new), proof)
    assert not verify_consistency(old, new, r_old, r_new, [*proof, r_new])
    assert not verify_consistency(old, new, r_old, r_new, [r_old, *proof])
    assert not verify_consistency(old, new, r_old, r_new, proof[:-1])
    assert not verify_consistency(old, new, r_old, r_new, proof[1:])
    # a forked tree: same old size, one different leaf before it
    assert not verify_consistency(old, new, leaf_hash(b"fork"), r_new, proof)
