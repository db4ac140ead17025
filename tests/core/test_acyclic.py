"""The cyclic collector is paused only while a JSON tree or a listing is built."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from toolpin.core.acyclic import collector_paused
from toolpin.core.canonical import parse_json
from toolpin.core.snapshot import Kind, Listing, snapshot_from_export
from toolpin.errors import JSONError, ListingError


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:  # pragma: no cover - pytest runs with the collector on
        gc.disable()


def test_paused_inside_and_resumed_after() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the inner one leaves it to the outer
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_resumed_after_an_error() -> None:
    gc.enable()
    with pytest.raises(ZeroDivisionError), collector_paused():
        1 / 0  # noqa: B018
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_parsing_and_hashing_leave_the_collector_on() -> None:
    gc.enable()
    parse_json(b'{"tools": [{"name": "a"}]}')
    with pytest.raises(JSONError):
        parse_json(b'{"a": 1, "a": 2}')  # the strict parser's error path
    snapshot_from_export(parse_json(b'[{"name": "a"}]'))
    with pytest.raises(ListingError):
        snapshot_from_export(parse_json(b'[{"name": "a"}, {"name": "a"}]'))
    Listing.parse(Kind.PROMPT, [{"name": "p"}])
    assert gc.isenabled()
