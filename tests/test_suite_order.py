"""The order the suite's long modules are handed to the workers (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONG_MODULES, pack_longest_first


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


def test_the_measured_table_spreads_evenly_over_four_workers() -> None:
    loads = [sum(LONG_MODULES[m] for m in part) for part in pack_longest_first(LONG_MODULES, 4)]
    assert max(loads) - min(loads) <= 0.1 * max(loads)


def test_every_module_in_the_table_exists() -> None:
    root = Path(__file__).resolve().parent.parent
    assert [m for m in LONG_MODULES if not (root / m).is_file()] == []
