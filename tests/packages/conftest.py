"""A fake npm registry and a fake PyPI on loopback: a real ``http.server`` in a thread."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from registry_support import SIMPLE_JSON, FakeRegistry, Route

DATA = json.loads((Path(__file__).parent / "data" / "registry.json").read_text("utf-8"))


def _routes(section: str) -> dict[str, Route]:
    kind = "application/json" if section == "npm" else SIMPLE_JSON
    return {path: (200, json.dumps(body).encode(), kind) for path, body in DATA[section].items()}


@pytest.fixture
def npm_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeRegistry]:
    fake = FakeRegistry(_routes("npm"))
    monkeypatch.setenv("TOOLPIN_NPM_REGISTRY", fake.url)
    yield fake
    fake.close()


@pytest.fixture
def pypi(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeRegistry]:
    fake = FakeRegistry(_routes("pypi"))
    monkeypatch.setenv("TOOLPIN_PYPI_INDEX", f"{fake.url}/simple")
    yield fake
    fake.close()
