"""Entries (RFC 8785), the blob store and the signing-key files."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from toolpin.errors import LogError
from toolpin.publog.blobs import BlobStore, blob_ref
from toolpin.publog.entries import blob_reference, decode_entry, encode_entry
from toolpin.publog.keys import ENV_LOG_KEY, generate_key, load_signer
from toolpin.publog.note import Signer, Verifier
from toolpin.publog.tiles import TileLog

# -- entries ------------------------------------------------------------------------------


def test_encode_entry_is_rfc8785() -> None:
    data = encode_entry({"b": 1.0, "a": ["é", None, True], "c": 1e21})
    assert data == '{"a":["é",null,true],"b":1,"c":1e+21}'.encode()
    assert decode_entry(data) == {"a": ["é", None, True], "b": 1, "c": 1e21}


def test_encode_entry_refuses_oversized_records_clearly() -> None:
    fits = encode_entry({"x": "a" * (65_535 - 8)})
    assert len(fits) == 65_535
    with pytest.raises(LogError) as info:
        encode_entry({"x": "a" * (65_535 - 7)})
    assert "65,536 bytes" in info.value.message and "65,535" in info.value.message
    assert info.value.advice and "blob" in info.value.advice


@pytest.mark.parametrize(
    "record",
    [{"n": 2**60}, {"f": float("nan")}, {"o": object()}],
)
def test_encode_entry_refuses_values_outside_json(record: dict[str, object]) -> None:
    with pytest.raises(LogError):
        encode_entry(record)


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":1,"a":2}',
        b'{"a":NaN}',
        b"[1]",
        b'{"b":1,"a":2}',
        b'{"a": 1}',
        b"\xff",
        b'{"a":1.0}',
    ],
)
def test_decode_entry_is_strict(data: bytes) -> None:
    with pytest.raises(LogError):
        decode_entry(data)


def test_blob_references_are_validated() -> None:
    ref = "sha256:" + "a" * 64
    assert blob_reference({"blob": ref}) == ref
    assert blob_reference({"other": 1}) is None
    for bad in ["sha256:" + "A" * 64, "sha512:" + "a" * 64, "sha256:abc", 5]:
        with pytest.raises(LogError):
            blob_reference({"blob": bad})


# -- blobs --------------------------------------------------------------------------------


def test_blob_store_is_content_addressed_write_once_and_checked(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    ref = store.put(b"definitions")
    assert ref == blob_ref(b"definitions")
    path = tmp_path / "blob" / "sha256" / ref.removeprefix("sha256:")
    assert path.read_bytes() == b"definitions"
    inode = path.stat().st_ino
    assert store.put(b"definitions") == ref
    assert path.stat().st_ino == inode
    assert store.get(ref) == b"definitions" and store.has(ref)
    path.write_bytes(b"definitionz")
    with pytest.raises(LogError, match="does not match"):
        store.get(ref)
    with pytest.raises(LogError, match="does not match"):
        store.put(b"definitions")
    with pytest.raises(LogError, match="missing"):
        store.get(blob_ref(b"other"))
    with pytest.raises(LogError):
        store.get("sha256:../../etc/passwd")


# -- keys ---------------------------------------------------------------------------------


def test_generate_key_writes_a_private_file_and_returns_the_verifier(tmp_path: Path) -> None:
    path = tmp_path / "log.key"
    vkey = generate_key("example.com/log", path)
    verifier = Verifier.from_text(vkey)
    signer = load_signer(path)
    assert signer.verifier == verifier
    assert signer.name == "example.com/log"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().startswith("PRIVATE+KEY+example.com/log+")
    assert [p.name for p in tmp_path.iterdir()] == ["log.key"]


def test_generate_key_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "log.key"
    path.write_text("precious")
    with pytest.raises(LogError, match="already exists"):
        generate_key("example.com/log", path)
    assert path.read_text() == "precious"


def test_generate_key_refuses_a_log_directory(tmp_path: Path) -> None:
    log = TileLog.open(tmp_path / "log")
    log.append([], Signer.generate("example.com/log"))
    with pytest.raises(LogError, match="inside a log directory"):
        generate_key("example.com/log", tmp_path / "log" / "log.key")
    (tmp_path / "log" / "blob").mkdir()
    with pytest.raises(LogError, match="inside a log directory"):
        generate_key("example.com/log", tmp_path / "log" / "blob" / "log.key")
    assert not list((tmp_path / "log").rglob("*.key"))


def test_generate_key_validates_the_origin(tmp_path: Path) -> None:
    for origin in ["", "has space", "a+b"]:
        with pytest.raises(LogError) as refused:
            generate_key(origin, tmp_path / "k")
        assert refused.value.message == "the origin must be non-empty, without spaces or '+'"
        assert refused.value.advice == "Use a schemeless URL such as example.com/mcp-log."
    assert not (tmp_path / "k").exists()


def test_load_signer_from_environment(tmp_path: Path) -> None:
    signer = Signer.generate("example.com/log")
    assert load_signer(env={ENV_LOG_KEY: signer.text}) == signer
    with pytest.raises(LogError, match="no log signing key"):
        load_signer(env={})
    with pytest.raises(LogError, match="not a usable signer key"):
        load_signer(env={ENV_LOG_KEY: "example.com/log+00000000+AAAA"})
    with pytest.raises(LogError, match="does not exist"):
        load_signer(tmp_path / "missing.key")


def test_load_signer_error_never_echoes_the_key(tmp_path: Path) -> None:
    signer = Signer.generate("example.com/log")
    broken = signer.text[:-3] + "!!!"
    path = tmp_path / "k"
    path.write_text(broken)
    with pytest.raises(LogError) as info:
        load_signer(path)
    assert broken.split("+")[-1][:20] not in info.value.diagnostics()


def test_keygen_creates_a_private_parent_folder(tmp_path: Path) -> None:
    target = tmp_path / "keys" / "nested" / "log.key"
    vkey = generate_key("example.com/log", target)
    assert vkey.startswith("example.com/log+")
    assert target.is_file()
    assert (target.parent.stat().st_mode & 0o777) == 0o700
    assert (target.stat().st_mode & 0o777) == 0o600


def test_keygen_refuses_a_file_where_a_folder_is_needed(tmp_path: Path) -> None:
    (tmp_path / "keys").write_text("not a folder")
    with pytest.raises(LogError, match="is not a directory"):
        generate_key("example.com/log", tmp_path / "keys" / "log.key")
