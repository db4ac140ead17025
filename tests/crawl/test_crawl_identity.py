"""Package identity of config servers, installs before the timeout, and the package set-up.

A config entry's runner is a small ``npx`` stand-in (an executable named ``npx``) that
starts the stub server; the registry it is resolved against is a loopback fake, because a
real registry cannot be made to publish a new release on demand.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from crawl_helpers import (
    STUB,
    FakeAPI,
    LogKey,
    independent_check,
    json_reply,
    stub_argv,
    tool,
    write_config,
    write_spec,
)

from toolpin.crawl.runner import CrawlOptions, crawl, default_state_path
from toolpin.crawl.state import CrawlState
from toolpin.util.fs import toolpin_cache

FAKE_NPX = f"""#!{sys.executable}
import json, os, sys, time
spec = json.load(open(os.environ["FAKE_NPX_SPEC"]))
with open(spec["argv_log"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if "--package" in sys.argv:
    time.sleep(spec.get("install_seconds", 0))
    if spec.get("install_fail"):
        print("npm error code SELF_SIGNED_CERT_IN_CHAIN", file=sys.stderr)
        print("npm error self-signed certificate in certificate chain", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
time.sleep(spec.get("start_seconds", 0))
os.execv(sys.executable, [sys.executable, {str(STUB)!r}, spec["server_spec"]])
"""


class Registry:
    """The fake npm registry's state: which version ``latest`` is."""

    def __init__(self, api: FakeAPI) -> None:
        self.latest = "1.0.0"
        api.routes["/fake-server/latest"] = lambda _: json_reply(self._doc(self.latest))
        for version in ("1.0.0", "1.0.1"):
            api.routes[f"/fake-server/{version}"] = lambda _, v=version: json_reply(self._doc(v))

    @staticmethod
    def _doc(version: str) -> dict[str, Any]:
        return {
            "name": "fake-server",
            "version": version,
            "dist": {"integrity": f"sha512-{version.replace('.', '')}AAAA=="},
        }


@pytest.fixture
def npx_world(
    tmp_path: Path, fake_api: FakeAPI, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, Registry]:
    """``(config, npx spec, registry)``: a config running ``npx -y fake-server``."""
    monkeypatch.setenv("TOOLPIN_NPM_REGISTRY", fake_api.url)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npx = bin_dir / "npx"
    npx.write_text(FAKE_NPX)
    npx.chmod(npx.stat().st_mode | stat.S_IXUSR)
    server = write_spec(tmp_path / "server.json", name="fake", tools=[tool("remember")])
    npx_spec = write_spec(
        tmp_path / "npx.json", server_spec=str(server), argv_log=str(tmp_path / "argv.log")
    )
    config = write_config(
        tmp_path / "servers.json",
        {
            "memory": {
                "command": str(npx),
                "args": ["-y", "fake-server"],
                "env": {"FAKE_NPX_SPEC": str(npx_spec)},
            }
        },
    )
    return config, npx_spec, Registry(fake_api)


def _options(tmp_path: Path, key: LogKey, config: Path, **extra: Any) -> CrawlOptions:
    values: dict[str, Any] = {
        "log_dir": tmp_path / "log",
        "signer": key.signer,
        "servers_config": config,
        "timeout": 20.0,
        "optout_dirs": (),
    }
    values.update(extra)
    return CrawlOptions(**values)


def _argv_log(tmp_path: Path) -> list[list[str]]:
    lines = (tmp_path / "argv.log").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_config_npx_entry_is_pinned_recorded_and_a_new_release_is_a_package_change(
    tmp_path: Path, log_key: LogKey, npx_world: tuple[Path, Path, Registry]
) -> None:
    config, _, registry = npx_world
    first = crawl(_options(tmp_path, log_key, config))
    (result,) = first.results
    assert result.status == "new" and result.note is None
    assert result.package is not None and result.package.version == "1.0.0"
    # Installed first (install-only form), then started pinned at the resolved release.
    assert _argv_log(tmp_path) == [
        ["-y", "--package", "fake-server@1.0.0", "--", "node", "-e", "0"],
        ["-y", "fake-server@1.0.0"],
    ]

    registry.latest = "1.0.1"
    second = crawl(_options(tmp_path, log_key, config))
    assert [r.status for r in second.results] == ["package-changed"]
    assert second.appended == 1 and second.to_json()["package_changed"] == 1
    third = crawl(_options(tmp_path, log_key, config))
    assert [r.status for r in third.results] == ["unchanged"] and third.appended == 0

    records = independent_check(tmp_path / "log", log_key.vkey)
    assert [r.get("change") for r in records] == ["new", "package"]
    assert [r["server"]["package"] for r in records] == [
        {"ecosystem": "npm", "name": "fake-server", "version": v, "digest": f"sha512-{d}AAAA=="}
        for v, d in (("1.0.0", "100"), ("1.0.1", "101"))
    ]
    assert records[0]["digests"] == records[1]["digests"] and records[1]["previous"] == 0
    with CrawlState.open(default_state_path(tmp_path / "log")) as state:
        (row,) = state.servers()
        assert row.package is not None and row.package.version == "1.0.1"


def test_the_timeout_counts_from_the_servers_start_not_the_install(
    tmp_path: Path, log_key: LogKey, npx_world: tuple[Path, Path, Registry]
) -> None:
    config, npx_spec, _ = npx_world
    spec = json.loads(npx_spec.read_text())
    npx_spec.write_text(json.dumps({**spec, "install_seconds": 2.5}))
    ok = crawl(_options(tmp_path, log_key, config, timeout=2.0))
    assert [r.status for r in ok.results] == ["new"], ok.results[0].reason
    assert ok.results[0].seconds >= 2.5

    slow = crawl(_options(tmp_path, log_key, config, install_timeout=1.0, full=True))
    (result,) = slow.results
    assert result.status == "failed"
    assert result.reason == "installing the package did not finish within 1s"


def test_an_installer_failure_keeps_a_sanitised_stderr_hint(
    tmp_path: Path, log_key: LogKey, npx_world: tuple[Path, Path, Registry]
) -> None:
    config, npx_spec, _ = npx_world
    spec = json.loads(npx_spec.read_text())
    npx_spec.write_text(json.dumps({**spec, "install_fail": True}))
    summary = crawl(_options(tmp_path, log_key, config))
    (result,) = summary.results
    assert result.status == "failed"
    assert result.reason == "installing the package failed (exit code 1)"
    assert result.hint == (
        "npm error code SELF_SIGNED_CERT_IN_CHAIN | "
        "npm error self-signed certificate in certificate chain"
    )
    with CrawlState.open(default_state_path(tmp_path / "log")) as state:
        (row,) = state.servers()
        assert row.last_error == result.reason and row.last_hint == result.hint
        assert row.last_probe == result.probed_at
    assert summary.to_json()["servers"][0]["hint"] == result.hint


def test_an_unresolvable_package_is_probed_as_written_with_a_note(
    tmp_path: Path,
    log_key: LogKey,
    npx_world: tuple[Path, Path, Registry],
    fake_api: FakeAPI,
) -> None:
    config, _, _ = npx_world
    del fake_api.routes["/fake-server/latest"]
    summary = crawl(_options(tmp_path, log_key, config))
    (result,) = summary.results
    assert result.status == "new"
    assert result.note is not None and result.note.startswith("not resolved: ")
    assert result.package is not None and result.package.version is None
    assert _argv_log(tmp_path) == [["-y", "fake-server"]]
    (record,) = independent_check(tmp_path / "log", log_key.vkey)
    assert record["server"]["package"] == {"ecosystem": "npm", "name": "fake-server"}


def test_ca_proxy_and_index_settings_reach_a_config_server_and_secrets_do_not(
    tmp_path: Path, log_key: LogKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "env.json"
    spec = write_spec(tmp_path / "s.json", name="s", tools=[tool("t")], env_report=str(report))
    config = write_config(tmp_path / "servers.json", {"s": stub_argv(spec)})
    home = tmp_path / "user-home"
    (home / ".config" / "uv").mkdir(parents=True)
    (home / ".config" / "uv" / "uv.toml").write_text('index-url = "https://mirror.example"\n')
    (home / ".npmrc").write_text("registry=https://npm.mirror.example/\n")
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "NODE_EXTRA_CA_CERTS": "/etc/ssl/certs/ca-certificates.crt",
        "HTTPS_PROXY": "http://proxy.example:3128",
        "no_proxy": "localhost,127.0.0.1",
        "PIP_INDEX_URL": "https://pypi.mirror.example/simple",
        "NPM_CONFIG_REGISTRY": "https://npm.mirror.example/",
        "GITHUB_TOKEN": "ghp_secret",
        "AWS_SECRET_ACCESS_KEY": "secret",
    }
    summary = crawl(_options(tmp_path, log_key, config, environ=environ))
    assert [r.status for r in summary.results] == ["new"]
    seen = json.loads(report.read_text())
    for name in (
        "SSL_CERT_FILE",
        "NODE_EXTRA_CA_CERTS",
        "HTTPS_PROXY",
        "no_proxy",
        "PIP_INDEX_URL",
        "NPM_CONFIG_REGISTRY",
    ):
        assert seen[name] == environ[name], name
    assert seen["UV_CONFIG_FILE"] == str(home / ".config" / "uv" / "uv.toml")
    assert "GITHUB_TOKEN" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    assert seen["HOME"] != str(home)
    # A config server shares the caches under $TOOLPIN_HOME, as it shares ~/.npm at home.
    cache_root = (toolpin_cache() / "crawl").resolve()
    assert seen["UV_CACHE_DIR"] == str(cache_root / "uv")
    assert seen["PIP_CACHE_DIR"] == str(cache_root / "pip")
    assert seen["npm_config_cache"] == str(cache_root / "npm")


def test_two_logs_in_one_folder_each_keep_their_own_state(tmp_path: Path, log_key: LogKey) -> None:
    spec = write_spec(tmp_path / "s.json", name="s", tools=[tool("t")])
    config = write_config(tmp_path / "servers.json", {"s": stub_argv(spec)})
    from toolpin.publog.keys import generate_key, load_signer

    other_key = tmp_path / "keys" / "other.key"
    generate_key("log.example/other", other_key)
    first = crawl(_options(tmp_path, log_key, config, log_dir=tmp_path / "one"))
    second = crawl(
        _options(tmp_path, log_key, config, log_dir=tmp_path / "two", signer=load_signer(other_key))
    )
    assert first.appended == second.appended == 1
    assert (tmp_path / "one.crawl-state.sqlite").is_file()
    assert (tmp_path / "two.crawl-state.sqlite").is_file()


def test_identify_without_a_registry_for_images_local_scripts_and_non_packages() -> None:
    from toolpin.crawl.identity import identify

    digest = "sha256:" + "ab" * 32
    image = identify(["docker", "run", "-i", "--rm", f"ghcr.io/example/mcp@{digest}"])
    assert image is not None and image.prefetch is None and image.note is None
    assert (image.coords.ecosystem, image.coords.name, image.coords.digest) == (
        "oci",
        "ghcr.io/example/mcp",
        digest,
    )
    assert image.argv == ("docker", "run", "-i", "--rm", f"ghcr.io/example/mcp@{digest}")
    tagged = identify(["docker", "run", "-i", "ghcr.io/example/mcp:latest"])
    assert tagged is not None and tagged.coords.version is None
    assert tagged.note is not None and "not pinned by digest" in tagged.note
    assert identify(["node", "server.js"]) is None
    assert identify(["npx", "-y", "git+https://example.com/repo.git"]) is None
    ranged = identify(["npx", "-y", "some-server@^1.2.0"])
    assert ranged is not None and ranged.note is not None and "version range" in ranged.note
    assert ranged.argv == ("npx", "-y", "some-server@^1.2.0") and ranged.prefetch is None
