"""Where the monitor reads a log from: a published URL (the evidence fetcher: SSRF guard,
size caps, the environment's CA files and proxies, a timeout per request) or a log folder
on this machine, behind the same ``get(rel, cap, what=...)``.

A pass may read a whole log, so the fetcher's per-lookup deadline and byte budget are
renewed for each file (:meth:`renew`); each file keeps its own size cap.
"""

from __future__ import annotations

from pathlib import Path

from toolpin.errors import InputError, LogError
from toolpin.evidence.errors import LogProblem
from toolpin.evidence.fetch import Fetcher


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
        from toolpin.publog.tiles import read_bounded

        self.requests += 1
        try:
            data = read_bounded(self.root / rel, cap)
        except FileNotFoundError:
            raise LogProblem("unreachable", f"the log has no {what}") from None
        except LogError:
            raise LogProblem(
                "tampered", f"{what} is larger than any valid file of its kind"
            ) from None
        except OSError as exc:
            raise LogProblem("unreachable", f"{what} cannot be read ({exc.strerror})") from None
        self.fetched += len(data)
        return data


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
