"""A base for objects that hold a resource and give it back with ``close()``."""

from __future__ import annotations

from typing import Self

__all__ = ["Closing"]


class Closing:
    """An object with a ``close()`` method that is also its own context manager:
    ``with obj:`` gives ``obj`` and closes it at the end of the block, whatever happened
    (an exception goes on after the close)."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
