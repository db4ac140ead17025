"""Real packages from the real registries: the crawler records what npm and PyPI serve.

Crawls ``npx -y @modelcontextprotocol/server-memory`` and ``uvx mcp-server-time`` from a
config, cold (a fresh ``TOOLPIN_HOME``, so empty shared caches) and warm, and installs the
npm server as a package candidate (``npm install --prefix``) with only the global npmrc's
``cafile`` to trust the TLS-intercepting proxy. Every recorded version and digest is
checked against what the registries answer.

Marked ``registries`` (and ``slow``): it needs the network. Skipped where the registries
cannot be reached, except under ``TOOLPIN_REQUIRE_REGISTRIES=1`` (``.ci/run`` sets it),
where that fails the run.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from crawl_helpers import LogKey, independent_check, write_config

from toolpin.crawl.candidates import PackageCoords
from toolpin.crawl.runner import CrawlOptions, crawl
from toolpin.util.fs import toolpin_cache

pytestmark = [pytest.mark.registries, pytest.mark.slow]

MEMORY = "@modelcontextprotocol/server-memory"
TIME = "mcp-server-time"
UVX = Path(sys.executable).parent / "uvx"


def _get(url: str) -> Any:
    import httpx2

    try:
        with httpx2.Client(timeout=60, follow_redirects=True) as client:
            response = client.get(url, headers={"Accept": "application/json"})
    except httpx2.HTTPError as exc:
        why = f"the registry cannot be reached here ({type(exc).__name__})"
        if os.environ.get("TOOLPIN_REQUIRE_REGISTRIES"):
            pytest.fail(why)
        pytest.skip(why)
    assert response.status_code == 200, url
    return response.json()


@pytest.fixture(scope="module")
def served() -> dict[str, Any]:
    """What the registries serve now: npm ``latest`` and PyPI's newest release."""
    npm = _get(f"https://registry.npmjs.org/{MEMORY.replace('/', '%2f')}/latest")
    pypi = _get(f"https://pypi.org/pypi/{TIME}/json")
    return {
        "npm": {"version": npm["version"], "digest": npm["dist"]["integrity"]},
        "pypi": {
            "version": pypi["info"]["version"],
            "files": sorted((u["filename"], u["digests"]["sha256"]) for u in pypi["urls"]),
        },
    }


def _options(tmp_path: Path, key: LogKey, config: Path) -> CrawlOptions:
    return CrawlOptions(
        log_dir=tmp_path / "log",
        signer=key.signer,
        servers_config=config,
        timeout=60.0,
        install_timeout=300.0,
        concurrency=2,
        optout_dirs=(),
    )


def _check_packages(by_name: dict[str, PackageCoords | None], served: dict[str, Any]) -> None:
    memory, time_ = by_name["memory"], by_name["time"]
    assert memory is not None and time_ is not None
    assert (memory.ecosystem, memory.name) == ("npm", MEMORY)
    assert memory.version == served["npm"]["version"]
    assert memory.digest == served["npm"]["digest"]
    assert (time_.ecosystem, time_.name) == ("pypi", TIME)
    assert time_.version == served["pypi"]["version"]
    assert sorted(time_.files) == served["pypi"]["files"]


def test_crawl_records_what_the_registries_serve_cold_and_warm(
    tmp_path: Path, log_key: LogKey, served: dict[str, Any]
) -> None:
    if shutil.which("npx") is None or not UVX.is_file():
        pytest.fail("npx and uvx are needed (Node and the test extra's uv)")
    config = write_config(
        tmp_path / "servers.json",
        {"memory": ["npx", "-y", MEMORY], "time": [str(UVX), TIME]},
    )
    cold = crawl(_options(tmp_path, log_key, config))
    details = [(r.candidate.name, r.status, r.reason, r.hint, r.note) for r in cold.results]
    assert [r.status for r in cold.results] == ["new", "new"], details
    _check_packages({r.candidate.name: r.package for r in cold.results}, served)
    tools = {r.candidate.name: r.observation.snapshot.counts()["tools"] for r in cold.results}
    assert tools["memory"] >= 5 and tools["time"] >= 2

    cache = toolpin_cache() / "crawl"
    assert any((cache / "npm" / "_cacache").iterdir()) and any((cache / "uv").iterdir())
    warm = crawl(_options(tmp_path, log_key, config))
    details = [(r.candidate.name, r.status, r.reason, r.hint) for r in warm.results]
    assert [r.status for r in warm.results] == ["unchanged", "unchanged"], details
    _check_packages({r.candidate.name: r.package for r in warm.results}, served)

    records = independent_check(tmp_path / "log", log_key.vkey)
    logged = {r["server"]["name"]: PackageCoords.from_json(r["server"]["package"]) for r in records}
    _check_packages(dict(logged), served)
    assert {r["change"] for r in records} == {"new"}


def test_npm_install_with_prefix_trusts_the_global_npmrc_cafile(
    tmp_path: Path, served: dict[str, Any]
) -> None:
    from toolpin.crawl.caches import SharedCaches
    from toolpin.crawl.hostconfig import host_setup
    from toolpin.crawl.install import install
    from toolpin.crawl.sandbox import sandbox_env

    # Only npm's own configuration says which CA to trust: no CA variables at all.
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR")
        and not k.lower().startswith("npm_config_")
    }
    setup = host_setup(environ)
    if setup.npm_globalconfig() is None and setup.npm_userconfig is None:
        pytest.skip("this machine has no npmrc naming a CA file")
    caches = SharedCaches.at(tmp_path / "cache")
    scratch = tmp_path / "scratch"
    home = scratch / "home"
    home.mkdir(parents=True)
    env = sandbox_env(
        home,
        extra={**setup.sandbox_variables(trusted=True), **caches.probe_env(scratch, trusted=False)},
    )
    installed = install(
        PackageCoords("npm", MEMORY),
        scratch,
        env=env,
        timeout=300,
        environ=environ,
        setup=setup,
        caches=caches,
    )
    assert installed.package.version == served["npm"]["version"]
    assert installed.package.digest == served["npm"]["digest"]
