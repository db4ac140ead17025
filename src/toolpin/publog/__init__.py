"""toolpin's public log engine: a C2SP tlog-tiles transparency log (RFC 9162 hashing).

Public API (see ``docs/transparency-log.md``)::

    from toolpin.publog import TileLog, BlobStore, verify_log, encode_entry, load_signer

    signer = load_signer("log.key")                   # or $TOOLPIN_LOG_KEY
    log = TileLog.open("public-log")
    ref = BlobStore("public-log").put(definitions)    # "sha256:<hex>"
    checkpoint = log.append([encode_entry({"blob": ref, ...})], signer)
    proof = log.inclusion_proof(0)
    result = verify_log("public-log", signer.verifier.text)

Submodules are imported lazily so that ``import toolpin.publog`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolpin.publog.blobs import BlobStore
    from toolpin.publog.checkpoint import Checkpoint
    from toolpin.publog.entries import decode_entry, encode_entry
    from toolpin.publog.keys import generate_key, load_signer
    from toolpin.publog.note import Signer, Verifier
    from toolpin.publog.proof import (
        make_consistency_proof,
        make_proof,
        verify_consistency_proof,
        verify_proof,
    )
    from toolpin.publog.tiles import TileLog
    from toolpin.publog.verify import VerifyResult, verify_log

_EXPORTS = {
    "BlobStore": "toolpin.publog.blobs",
    "Checkpoint": "toolpin.publog.checkpoint",
    "decode_entry": "toolpin.publog.entries",
    "encode_entry": "toolpin.publog.entries",
    "generate_key": "toolpin.publog.keys",
    "load_signer": "toolpin.publog.keys",
    "Signer": "toolpin.publog.note",
    "Verifier": "toolpin.publog.note",
    "make_consistency_proof": "toolpin.publog.proof",
    "make_proof": "toolpin.publog.proof",
    "verify_consistency_proof": "toolpin.publog.proof",
    "verify_proof": "toolpin.publog.proof",
    "TileLog": "toolpin.publog.tiles",
    "VerifyResult": "toolpin.publog.verify",
    "verify_log": "toolpin.publog.verify",
}

__all__ = [
    "BlobStore",
    "Checkpoint",
    "Signer",
    "TileLog",
    "Verifier",
    "VerifyResult",
    "decode_entry",
    "encode_entry",
    "generate_key",
    "load_signer",
    "make_consistency_proof",
    "make_proof",
    "verify_consistency_proof",
    "verify_log",
    "verify_proof",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolpin.publog' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
