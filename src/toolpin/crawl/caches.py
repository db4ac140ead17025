"""Package caches shared by every probe of every crawl, so a server is downloaded once.

Each probe still gets its own scratch ``HOME`` and install tree; what is shared is the
*content-addressed* part of each tool's cache, where an entry is named by the hash of its
bytes and checked against it when read, so one probe's download can serve the next without
one probe's install tree becoming another's:

* npm: the ``_cacache`` directory (tarballs and registry answers, keyed and verified by
  integrity). Each probe's npm cache is a scratch directory whose ``_cacache`` is a link to
  the shared one; ``_npx`` (the trees ``npx`` installs and runs, not content-addressed,
  not safe for two writers) stays private to the probe;
* uv: ``UV_CACHE_DIR`` (uv locks its cache for concurrent use; wheels are stored by hash)
  and ``UV_PYTHON_INSTALL_DIR`` for interpreters uv downloads;
* pip: ``PIP_CACHE_DIR`` (HTTP answers and built wheels).

The root is ``--cache-dir``, else ``$TOOLPIN_HOME/crawl-cache`` (the per-user toolpin
directory), created private (0700). The probe sandbox is an environment sandbox, not a
file-system jail: a server runs as the crawler's user and could write there anyway, so
run crawls of public listings as a dedicated user (see ``docs/crawler.md``).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

CACHE_DIR_NAME: Final = "crawl-cache"


def default_cache_dir() -> Path:
    """``$TOOLPIN_HOME/crawl-cache`` (or the platform's user data dir)."""
    from toolpin.util.fs import toolpin_home

    return toolpin_home() / CACHE_DIR_NAME


@dataclass(frozen=True)
class SharedCaches:
    """The shared cache root and the environment that points a probe at it."""

    root: Path

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
            try:
                link.symlink_to(self.npm_cacache, target_is_directory=True)
            except OSError:  # pragma: no cover - no symlinks (Windows without the right)
                with contextlib.suppress(OSError):
                    os.rmdir(link)
        return cache

    def probe_env(self, scratch: Path) -> dict[str, str]:
        """Variables for one probe (or install) working in ``scratch``."""
        return {
            "npm_config_cache": str(self.npm_cache_for(scratch)),
            "UV_CACHE_DIR": str(self.root / "uv"),
            "UV_PYTHON_INSTALL_DIR": str(self.root / "uv-python"),
            "PIP_CACHE_DIR": str(self.root / "pip"),
        }
