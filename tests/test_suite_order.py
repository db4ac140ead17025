"""The order the suite's long modules are handed to the workers (tests/conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import DIST_VAR, LONG_MODULES, WAITING_MODULES, pack_longest_first


def test_the_longest_modules_start_first_on_different_workers() -> None:
    weights = {"a": 10.0, "b": 80.0, "c": 30.0, "d": 40.0, "e": 20.0}
    parts = pack_longest_first(weights, 3)
    assert [part[0] for part in parts] == ["b", "d", "c"]  # the three longest, at once
    assert sorted(m for part in parts for m in part) == sorted(weights)  # each once


def test_each_module_goes_to_the_worker_with_the_least_so_far() -> None:
    weights = {"a": 50.0, "b": 40.0, "c": 30.0, "d": 20.0, "e": 10.0}
    parts = pack_longest_first(weights, 2)
    # a | b, then c to b's worker (40 < 50), d to a's (50 < 70), e to either's 70: the first
    assert parts == [["a", "d", "e"], ["b", "c"]]
    loads = [sum(weights[m] for m in part) for part in parts]
    assert max(loads) - min(loads) <= max(weights.values())


def test_the_waiting_modules_go_first_one_after_the_other_on_one_worker() -> None:
    weights = {"a": 50.0, "w1": 40.0, "b": 30.0, "w2": 20.0, "c": 10.0}
    parts = pack_longest_first(weights, 2, ["w2", "w1", "not-collected"])
    # w1 then w2 (60) | a (50), b to a's worker (50 < 60), c to the waiting one (60 < 80)
    assert parts == [["w1", "w2", "c"], ["a", "b"]]


def test_the_measured_table_spreads_evenly_over_four_workers() -> None:
    parts = pack_longest_first(LONG_MODULES, 4, WAITING_MODULES)
    loads = [sum(LONG_MODULES[m] for m in part) for part in parts]
    assert max(loads) - min(loads) <= 0.1 * max(loads)
    assert parts[0][: len(WAITING_MODULES)] == sorted(WAITING_MODULES, key=LONG_MODULES.get)[::-1]


def test_every_module_in_the_table_exists() -> None:
    root = Path(__file__).resolve().parent.parent
    assert [m for m in LONG_MODULES if not (root / m).is_file()] == []
    assert set(WAITING_MODULES) <= set(LONG_MODULES)


def test_this_run_is_dealt_longest_first(request: pytest.FixtureRequest) -> None:
    """In a worker of a parallel run the order is the dealt one: the longest module
    collected comes first. (A worker's own ``--dist`` is "no": the order once followed it
    and was never applied.)"""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2 or os.environ.get(DIST_VAR) not in ("load", "worksteal"):
        return  # one process: the collection's own order, nothing dealt
    items = request.session.items
    modules = {item.nodeid.split("::", 1)[0] for item in items}
    long = [m for m in LONG_MODULES if m in modules]
    if long:
        assert items[0].nodeid.split("::", 1)[0] == max(long, key=LONG_MODULES.__getitem__)
