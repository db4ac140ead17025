"""The witness key is generated like the log's (``toolpin.publog.keys``): a bad name is
refused in the same words, before any file is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolpin.errors import LogError
from toolpin.witness.keys import generate_witness_key


@pytest.mark.parametrize("name", ["", "has space", "a+b"])
def test_generate_witness_key_validates_the_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(LogError) as refused:
        generate_witness_key(name, tmp_path / "k")
    assert refused.value.message == "the witness name must be non-empty, without spaces or '+'"
    assert refused.value.advice == "Use a schemeless URL such as witness.example.com/w1."
    assert not (tmp_path / "k").exists()
