"""One piece of a build run by a forked process while this one does another.

A large build has steps that depend on nothing the other needs: the audit of the log and
the reading of its entries. On a machine with more than one core they run side by side
(the reports are a task of the build's worker pool instead, see
:mod:`toolpin.site.build`): :class:`Apart` forks a process that runs
``work(*args)`` (from the parent's memory, so nothing is pickled on the way there) and
hands back its value, or raises its exception, from :meth:`Apart.result`. With
``apart=False`` the work is simply done in this process, at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Apart", "cores"]

T = TypeVar("T")

_JOB: dict[str, Any] = {}
"""The work a forked process runs (set before it forks, read in the child)."""


def _run() -> Any:
    return _JOB["work"](*_JOB["args"])


def cores() -> int:
    """The cores this process may use (at most 4 are used)."""
    import os

    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        count = os.cpu_count() or 1
    return max(1, min(count, 4))


class Apart(Generic[T]):
    """``work(*args)``, in a forked process when ``apart`` (else here, at once)."""

    def __init__(self, work: Callable[..., T], *args: Any, apart: bool) -> None:
        self._pool: Any = None
        self._async: Any = None
        self._value: T | None = None
        self._error: BaseException | None = None
        if not apart:
            try:
                self._value = work(*args)
            except Exception as exc:  # handed back by result(), as from a process
                self._error = exc
            return
        import multiprocessing

        _JOB.update(work=work, args=args)
        try:
            self._pool = multiprocessing.get_context("fork").Pool(1)
            self._async = self._pool.apply_async(_run)
        finally:
            _JOB.clear()

    def result(self) -> T:
        """The work's value (waits for the process); raises what the work raised."""
        if self._async is not None:
            try:
                self._value = self._async.get()
            finally:
                self.close()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the process (a build that stops early); nothing once it is done."""
        self._async = None
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
