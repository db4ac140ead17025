"""Package caches shared by every probe of every crawl, so a server is downloaded once.

Each probe still gets its own scratch ``HOME``. What is shared depends on whose code runs:

* **servers from a local config** (the user's own, started as their client starts them):
  the whole npm cache (``npm_config_cache``: the content-addressed ``_cacache`` and the
  ``_npx`` trees ``npx`` installs), ``UV_CACHE_DIR`` (uv's wheels and the environments
  ``uvx`` builds; uv locks it for concurrent use) and ``UV_PYTHON_INSTALL_DIR``, and
  ``PIP_CACHE_DIR``: the same sharing as the user's own ``~/.npm`` and ``~/.cache/uv``,
  so a warm crawl starts them from their installed trees;
* **packages installed from a public listing** (``--allow-exec``): only the
  *content-addressed* stores, where an entry is named by the hash of its bytes and checked
  against it when read. The installer (npm with ``--ignore-scripts``, pip wheels only) gets
  a private npm cache directory whose ``_cacache`` is a link to the shared one, and pip's
  cache; the installed server itself is told of no cache at all.

Installs of the same package spec are serialised within a crawl (:meth:`SharedCaches.
lock_for`): ``npx``'s trees are not safe for two writers.

The root is ``--cache-dir``, else ``crawl`` in the per-user cache directory
(:func:`toolpin.util.fs.toolpin_cache`: ``~/.cache/toolpin/crawl``), created private
(0700). The probe sandbox is an environment sandbox, not a file-system jail: a server runs
as the crawler's user and could write there anyway, so run crawls of public listings as a
dedicated user (see ``docs/crawler.md``).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

CACHE_DIR_NAME: Final = "crawl"


def default_cache_dir() -> Path:
    """``crawl`` in toolpin's cache directory (``~/.cache/toolpin/crawl``, or
    ``$TOOLPIN_CACHE/crawl``, or ``$TOOLPIN_HOME/cache/crawl``)."""
    from toolpin.util.fs import toolpin_cache

    return toolpin_cache() / CACHE_DIR_NAME


@dataclass(frozen=True)
class SharedCaches:
    """The shared cache root and the environment that points a probe at it."""

    root: Path
    _locks: dict[str, threading.Lock] = field(default_factory=dict, repr=False, compare=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def lock_for(self, key: str) -> threading.Lock:
        """One lock per package spec (installs of the same spec run one at a time)."""
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    @classmethod
    def at(cls, root: Path | None) -> SharedCaches:
        from toolpin.util.fs import ensure_private_dir

        where = root if root is not None else default_cache_dir()
        ensure_private_dir(where)
        for sub in ("npm/_cacache", "uv", "uv-python", "pip"):
            (where / sub).mkdir(parents=True, exist_ok=True)
        return cls(where.resolve())

    @property
    def npm_cacache(self) -> Path:
        return self.root / "npm" / "_cacache"

    def npm_cache_for(self, scratch: Path) -> Path:
        """A private npm cache directory in ``scratch`` sharing :attr:`npm_cacache`."""
        cache = scratch / "npm-cache"
        cache.mkdir(parents=True, exist_ok=True)
        link = cache / "_cacache"
        if not link.exists():
            # Without symlinks (Windows without the right) this cache stays private.
            with contextlib.suppress(OSError):
                link.symlink_to(self.npm_cacache, target_is_directory=True)
        return cache

    def probe_env(self, scratch: Path, *, trusted: bool) -> dict[str, str]:
        """Variables for a config server (``trusted``) or a listing's installer working in
        ``scratch`` (see the module doc)."""
        if trusted:
            return {
                "npm_config_cache": str(self.root / "npm"),
                "UV_CACHE_DIR": str(self.root / "uv"),
                "UV_PYTHON_INSTALL_DIR": str(self.root / "uv-python"),
                "PIP_CACHE_DIR": str(self.root / "pip"),
            }
        return {
            "npm_config_cache": str(self.npm_cache_for(scratch)),
            "PIP_CACHE_DIR": str(self.root / "pip"),
        }
