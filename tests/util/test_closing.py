"""``Closing``: ``with obj:`` gives the object and closes it, also when the block raises."""

from __future__ import annotations

import pytest

from toolpin.util.closing import Closing


class _Resource(Closing):
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_with_gives_the_object_and_closes_it_once() -> None:
    resource = _Resource()
    with resource as inside:
        assert inside is resource
        assert resource.closed == 0
    assert resource.closed == 1


def test_an_exception_goes_on_after_the_close() -> None:
    resource = _Resource()
    with pytest.raises(KeyError), resource:
        raise KeyError("x")
    assert resource.closed == 1
