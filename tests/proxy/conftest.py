"""Fixtures of the proxy tests: the encoders and readers of :mod:`tests.proxy.codecs`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.proxy import codecs as codecs_module


@pytest.fixture(scope="session")
def codecs() -> Iterator[ModuleType]:
    """The encoders and the three readers, with Go's codec built (once, under a lock).

    Without Go the tests that need it are skipped, unless ``TOOLPIN_REQUIRE_GO=1`` (CI),
    where a missing Go fails them.
    """
    try:
        codecs_module.go_binary()
    except codecs_module.GoMissing as exc:
        if os.environ.get("TOOLPIN_REQUIRE_GO") == "1":
            pytest.fail(f"{exc}; TOOLPIN_REQUIRE_GO=1 requires it")
        pytest.skip(str(exc))
    yield codecs_module
    codecs_module.close_peers()
