"""Where the monitor reads a log from: a published URL (the evidence fetcher: SSRF guard,
size caps, the environment's CA files and proxies, a timeout per request) or a log folder
on this machine, behind the same ``get(rel, cap, what=...)``.

A pass may read a whole log, so the fetcher's per-lookup deadline and byte budget are
renewed for each file (:meth:`renew`); each file keeps its own size cap.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from toolpin.errors import InputError
from toolpin.evidence.errors import LogProblem
from toolpin.evidence.fetch import Fetcher

CHUNK = 64 << 10


class FolderFetcher(Fetcher):
    """A log folder read as the fetcher reads a URL: capped, and every failure a
    :class:`LogProblem` with fixed text."""

    def __init__(self, folder: Path) -> None:  # no HTTP client: nothing of Fetcher's is used
        if not folder.is_dir():
            raise InputError(f"the log {folder} is neither an http(s) URL nor a folder")
        self.root = folder
        self.base = str(folder)
        self.timeout = self.deadline = 0.0
        self.ends = 0.0
        self.fetched = 0
        self.requests = 0

    def close(self) -> None:
        pass

    def restart(self) -> None:
        pass

    def get(self, rel: str, cap: int, *, what: str) -> bytes:
        self.requests += 1
        chunks: list[bytes] = []
        size = 0
        try:
            with _open_regular(self.root / rel) as handle:
                # In chunks: ``read(cap + 1)`` would allocate the whole cap (16 MiB for a
                # bundle) for every file, and the pass's peak memory with it.
                while chunk := handle.read(CHUNK):
                    size += len(chunk)
                    if size > cap:
                        raise LogProblem(
                            "tampered", f"{what} is larger than any valid file of its kind"
                        )
                    chunks.append(chunk)
        except FileNotFoundError:
            raise LogProblem("unreachable", f"the log has no {what}") from None
        except _NotRegular:
            raise LogProblem("tampered", f"{what} is not a regular file") from None
        except OSError as exc:
            raise LogProblem("unreachable", f"{what} cannot be read ({exc.strerror})") from None
        self.fetched += size
        return b"".join(chunks)


class _NotRegular(Exception):
    pass


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (a FIFO, a device or a folder
    would block or never end): opened without blocking, then checked."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotRegular
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_source(log: str, *, timeout: float, allow_private: bool) -> Fetcher:
    """A fetcher for ``log``: an ``http(s)://`` URL, else a folder."""
    if log.startswith(("https://", "http://")):
        return Fetcher(log, timeout=timeout, allow_private=allow_private)
    if "://" in log:
        raise InputError("--log is an http(s) URL or a folder")
    return FolderFetcher(Path(log))


def renew(fetcher: Fetcher) -> None:
    """A fresh deadline and byte budget for the next file of a long pass."""
    fetcher.restart()
    fetcher.fetched = 0


__all__ = ["FolderFetcher", "open_source", "renew"]
