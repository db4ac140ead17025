"""Where caches go: ``$TOOLPIN_CACHE``, else ``$TOOLPIN_HOME/cache``, else the platform's
user cache dir; and every cache toolpin keeps is under it, never in the data folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from toolpin.crawl.caches import default_cache_dir
from toolpin.site.build import default_cache
from toolpin.util.fs import toolpin_cache, toolpin_home


def _clear(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TOOLPIN_HOME", "TOOLPIN_CACHE", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)


def test_toolpin_cache_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("TOOLPIN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TOOLPIN_CACHE", str(tmp_path / "cache"))
    assert toolpin_cache() == tmp_path / "cache"


def test_toolpin_home_keeps_caches_inside_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("TOOLPIN_HOME", str(tmp_path / "home"))
    assert toolpin_cache() == tmp_path / "home" / "cache"


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG layout")
def test_the_platform_cache_dir_not_the_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert toolpin_cache() == tmp_path / ".cache" / "toolpin"
    assert toolpin_home() == tmp_path / ".local" / "share" / "toolpin"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert toolpin_cache() == tmp_path / "xdg" / "toolpin"


def test_every_cache_is_under_the_cache_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from toolpin.lookup.source import _default_cache

    _clear(monkeypatch)
    monkeypatch.setenv("TOOLPIN_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("TOOLPIN_CACHE", str(tmp_path / "cache"))
    for where in (default_cache_dir(), default_cache(tmp_path / "log"), _default_cache()):
        assert where.parent == tmp_path / "cache"
    assert len({default_cache_dir(), default_cache(tmp_path / "log"), _default_cache()}) == 3
