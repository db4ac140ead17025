"""toolpin.core.seqdiff: the opcodes are difflib's, whether or not the shortcut answers."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolpin.core import seqdiff
from toolpin.core.seqdiff import opcodes


def _difflib(a: list[str], b: list[str]) -> list[seqdiff.Opcode]:
    return difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()


SHARED = st.lists(st.sampled_from("abc"), max_size=6)
OWN_A = st.lists(st.sampled_from("abcxy"), min_size=0, max_size=4)
OWN_B = st.lists(st.sampled_from("abcuv"), min_size=0, max_size=4)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=9), st.lists(st.sampled_from("abcd"), max_size=9))
def test_any_two_sequences(a: list[str], b: list[str]) -> None:
    assert opcodes(a, b) == _difflib(a, b)


@settings(max_examples=3000, deadline=None)
@given(SHARED, OWN_A, OWN_B, SHARED)
def test_an_edit_between_a_common_start_and_end(
    start: list[str], old: list[str], new: list[str], end: list[str]
) -> None:
    a, b = start + old + end, start + new + end
    assert opcodes(a, b) == _difflib(a, b)


def test_the_shortcut_answers_the_common_edit_and_only_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = ["{", '  "description": "Search.",', '  "name": "s"', "}"]
    edited = ["{", '  "description": "Search the index.",', '  "name": "s"', "}"]
    cases = [
        (lines, edited, False),
        (list("ab"), list("cd"), False),
        (list("abc"), list("abxyc"), False),  # only added
        (list("abxyc"), list("abc"), False),  # only removed
        (list("xyz"), list("axyz"), False),  # added before everything
        # A block can run across the seam when one side adds nothing: the matcher answers.
        (list("aaa"), list("ayaa"), True),
        (list("ayaa"), list("aaa"), True),
        (list("abab"), list("abyab"), False),  # the seam pair (b, a) stands nowhere else
        # An element of the edit found elsewhere: the matcher answers too.
        (list("acc"), list("adc"), True),
        ([], [], True),
        (list("ab"), list("ab"), True),
    ]
    expected = [_difflib(a, b) for a, b, _ in cases]
    assert expected[1] == [("replace", 0, 2, 0, 2)]
    assert expected[2] == [("equal", 0, 2, 0, 2), ("insert", 2, 2, 2, 4), ("equal", 2, 3, 4, 5)]
    assert expected[5][0][0] == "insert"  # not the common start kept
    calls: list[int] = []

    class Counting(difflib.SequenceMatcher):  # type: ignore[type-arg]
        def get_opcodes(self) -> list[seqdiff.Opcode]:
            calls.append(1)
            return super().get_opcodes()

    monkeypatch.setattr(difflib, "SequenceMatcher", Counting)
    for (a, b, asks), want in zip(cases, expected, strict=True):
        before = len(calls)
        assert opcodes(a, b) == want
        assert (len(calls) > before) == asks, (a, b)
