"""Server ids: the start path's direct RFC 8785 form equals the canonical module's."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from toolpin.core.canonical import canonical_bytes, normalize
from toolpin.pins.serverid import check_id, default_label, server_id


@given(st.lists(st.text(st.characters(blacklist_categories=())), max_size=6))
def test_server_id_is_sha256_of_the_canonical_argv(argv: list[str]) -> None:
    expected = hashlib.sha256(canonical_bytes(normalize(argv))).hexdigest()[:16]
    assert server_id(argv) == expected


def test_ids_are_unambiguous() -> None:
    assert server_id(["a b"]) != server_id(["a", "b"])
    assert len(server_id(["node", "x.js"])) == 16
    assert server_id(["\udcff"]) != server_id(["\ufffd"])  # undecodable argv bytes


def test_labels_never_show_arguments() -> None:
    assert default_label(["/usr/bin/node", "--token", "s3cret"]) == "node [2 args]"
    assert default_label(["npx"]) == "npx"
    assert default_label(["C:\\tools\\server.exe", "x"]) == "server.exe [1 arg]"
    assert default_label(["./bin/evil\u202e"]) == "evil\\u{202e}"
    assert check_id("0123456789abcdef") == "0123456789abcdef"
