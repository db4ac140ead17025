"""The one error a lookup raises: :class:`LogProblem`, with a fixed ``kind``."""

from __future__ import annotations

from typing import Final, Literal

from toolpin.errors import ToolpinError

ProblemKind = Literal["unreachable", "bad-signature", "fork", "rollback", "tampered", "distrusted"]
KINDS: Final = ("unreachable", "bad-signature", "fork", "rollback", "tampered", "distrusted")


class LogProblem(ToolpinError):
    """The log could not answer with verified data. ``kind`` says why:

    * ``unreachable``: a network failure, an HTTP error, a timeout;
    * ``bad-signature``: the checkpoint is not signed by the pinned key (or is malformed);
    * ``fork`` / ``rollback``: the log contradicts the checkpoint kept earlier (it is now
      distrusted, see :mod:`toolpin.evidence.state`);
    * ``tampered``: a tile, entry bundle or index bucket does not match the signed tree;
    * ``distrusted``: an earlier lookup found a fork or a rollback; a person must run
      ``toolpin log trust --reset ORIGIN``.
    """

    def __init__(self, kind: ProblemKind, message: str, *, advice: str | None = None) -> None:
        super().__init__(message, advice=advice)
        self.kind: ProblemKind = kind


__all__ = ["KINDS", "LogProblem", "ProblemKind"]
