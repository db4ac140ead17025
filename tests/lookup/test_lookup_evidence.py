"""``toolpin lookup --log URL --vkey KEY``: a log served at a URL is held to the rules of
``toolpin run --log`` (:mod:`toolpin.evidence`): its checkpoint is checked against, and
kept as, the one in ``TOOLPIN_HOME``; a forked or rolled-back log is distrusted for every
command and answers nothing. Real logs (the crawler's record code, ``build_site``) served
on loopback as published; the real MCP SDK client over stdio."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).parents[1] / "evidence"))
sys.path.insert(0, str(Path(__file__).parents[1] / "site"))

from evidence_helpers import Served, serve_folder, site_of
from site_helpers import ORIGIN, LogWriter, tool

from tests.lookup.conftest import PYTHON, lookup_env
from toolpin.evidence import LogRef, look_up
from toolpin.evidence.state import load
from toolpin.lookup.source import LogSource
from toolpin.publog.note import Verifier


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    folder = tmp_path / "www"
    folder.mkdir()
    served = serve_folder(folder)
    yield served
    served.close()


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One log at size 2 and 4 (``small``, ``big``), and a fork of it at size 2."""
    root = tmp_path_factory.mktemp("sites")
    writer = LogWriter(root / "grow")
    writer.observe("weather", [tool("forecast")], "2026-09-01T03:00:00Z")
    writer.observe("other", [tool("ping")], "2026-09-01T04:00:00Z")
    writer.commit()
    small = site_of(writer, root / "small")
    writer.observe("third", [tool("three")], "2026-10-01T03:00:00Z")
    writer.observe("weather", [tool("forecast"), tool("alerts")], "2026-10-02T03:00:00Z")
    writer.commit()
    big = site_of(writer, root / "big")
    fork = LogWriter(root / "fork")
    fork.observe("weather", [tool("forecast")], "2026-09-01T03:00:00Z")
    fork.observe("shown-to-one-user", [tool("ping")], "2026-09-01T04:00:00Z")
    fork.commit()
    return {"vkey": writer.vkey, "small": small, "big": big, "fork": site_of(fork, root / "f")}


def _source(served: Served, vkey: str, home: Path, cache: Path) -> LogSource:
    return LogSource(
        served.url, Verifier.from_text(vkey), cache_dir=cache, allow_private=True, home=home
    )


def _keep(served: Served, vkey: str, home: Path) -> None:
    """A lookup made earlier on this machine (``toolpin run --log``): the checkpoint kept."""
    look_up(LogRef(served.url, vkey), "cd" * 32, home=home, allow_private=True)


def test_the_checkpoint_is_kept_where_run_keeps_it_and_growth_is_proven(
    sites: Any, served: Served, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    served.show(sites["small"])
    _keep(served, sites["vkey"], home)
    served.show(sites["big"])
    state = _source(served, sites["vkey"], home, tmp_path / "cache").state()
    assert state.verified and state.checkpoint is not None and state.checkpoint.size == 4
    assert load(home, ORIGIN).checkpoint == (sites["big"] / "checkpoint").read_text()


def test_a_rolled_back_log_is_distrusted_and_answers_nothing(
    sites: Any, served: Served, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    served.show(sites["big"])
    _keep(served, sites["vkey"], home)
    served.show(sites["small"])  # a fresh mirror: only the kept checkpoint knows size 4
    state = _source(served, sites["vkey"], home, tmp_path / "cache").state()
    assert state.reason == "distrusted" and not state.verified and not state.servers
    kept = load(home, ORIGIN)
    assert kept.distrusted is not None and kept.distrusted.kind == "rollback"
    # The honest log again: still nothing, for the lookup server and for run --log alike.
    served.show(sites["big"])
    again = _source(served, sites["vkey"], home, tmp_path / "cache2").state()
    assert again.reason == "distrusted" and not again.servers


def test_without_a_home_the_mirror_alone_decides(
    sites: Any, served: Served, tmp_path: Path
) -> None:
    """``LogSource`` without ``home`` (a library caller): nothing kept in TOOLPIN_HOME."""
    served.show(sites["small"])
    source = LogSource(
        served.url, Verifier.from_text(sites["vkey"]), cache_dir=tmp_path / "c", allow_private=True
    )
    assert source.state().verified
    assert not (tmp_path / "home").exists()


async def _ask(params: StdioServerParameters) -> tuple[dict[str, Any], dict[str, Any]]:
    async with Client(params) as client:
        status = await client.call_tool("log_status", {})
        found = await client.call_tool("lookup_server", {"server": "weather"})
        assert status.structured_content is not None and found.structured_content is not None
        return status.structured_content, found.structured_content


def _params(served: Served, vkey: str, home: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=PYTHON,
        args=["-m", "toolpin", "lookup", "--log", served.url, "--vkey", vkey, "--allow-private"],
        env=lookup_env(home),
    )


def test_over_stdio_a_verified_log_answers_and_its_checkpoint_is_kept(
    sites: Any, served: Served, toolpin_home: Path
) -> None:
    served.show(sites["big"])
    status, found = anyio.run(_ask, _params(served, sites["vkey"], toolpin_home))
    assert status["status"] == "verified" and status["checkpoint"]["size"] == 4
    assert found["status"] == "found" and found["log"]["status"] == "verified"
    assert load(toolpin_home, ORIGIN).checkpoint == (sites["big"] / "checkpoint").read_text()


def test_over_stdio_a_forked_log_is_named_distrusted_and_answers_nothing(
    sites: Any, served: Served, toolpin_home: Path
) -> None:
    served.show(sites["small"])
    _keep(served, sites["vkey"], toolpin_home)  # this machine verified size 2 before
    served.show(sites["fork"])  # size 2 again, another root: shown to this user alone
    status, found = anyio.run(_ask, _params(served, sites["vkey"], toolpin_home))
    assert status["status"] == "distrusted" and status["verified"] is False
    assert status["checkpoint"] is None
    assert found["status"] == "no-log" and found["log"]["status"] == "distrusted"
    assert found.get("server") is None
    kept = load(toolpin_home, ORIGIN)
    assert kept.distrusted is not None and kept.distrusted.kind == "fork"
    assert "shown-to-one-user" not in repr(status) + repr(found)  # no log text reaches it
