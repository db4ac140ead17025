"""The user's package set-up (npmrc, pip/uv config, CA and proxy variables) and the caches."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from crawl_helpers import LogKey, stub_argv, tool, write_config, write_spec

from toolpin.crawl.caches import SharedCaches
from toolpin.crawl.hint import InstallFailed, stderr_hint
from toolpin.crawl.hostconfig import PASS_THROUGH, host_setup
from toolpin.crawl.install import run_install_step
from toolpin.crawl.runner import CrawlOptions, crawl, default_state_path, state_path_for
from toolpin.crawl.state import CrawlState


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text("[global]\nindex-url = https://m/simple\n")
    (home / ".npmrc").write_text("cafile=/etc/ssl/certs/ca-certificates.crt\n")
    return home


def test_files_and_variables_are_found_and_only_listed_variables_pass(tmp_path: Path) -> None:
    home = _home(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".npmrc").write_text("registry=https://npm.m/\n")
    globalrc = tmp_path / "global-npmrc"
    globalrc.write_text("cafile=/etc/ssl/certs/ca-certificates.crt\n")
    environ = {
        "HOME": str(home),
        "NPM_CONFIG_GLOBALCONFIG": str(globalrc),
        "SSL_CERT_FILE": "/ca.pem",
        "https_proxy": "http://proxy:3128",
        "UV_INDEX_URL": "https://uv.m/simple",
        "OPENAI_API_KEY": "sk-secret",
        "npm_config__authToken": "secret",
    }
    setup = host_setup(environ, cwd=project)
    assert setup.npm_userconfig == home / ".npmrc"
    assert setup.npm_projectconfig == project / ".npmrc"
    assert setup.npm_globalconfig() == globalrc
    assert setup.pip_config == home / ".config" / "pip" / "pip.conf"
    assert setup.uv_config is None
    passed = setup.sandbox_variables(trusted=True, npm=True)
    assert passed == {
        "NPM_CONFIG_GLOBALCONFIG": str(globalrc),
        "SSL_CERT_FILE": "/ca.pem",
        "https_proxy": "http://proxy:3128",
        "UV_INDEX_URL": "https://uv.m/simple",
        "PIP_CONFIG_FILE": str(home / ".config" / "pip" / "pip.conf"),
        "npm_config_userconfig": str(home / ".npmrc"),
    }
    assert setup.npm_install_flags() == [
        "--userconfig",
        str(home / ".npmrc"),
        "--globalconfig",
        str(globalrc),
    ]
    assert {"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "HTTPS_PROXY", "no_proxy"} <= set(PASS_THROUGH)


def test_a_stranger_server_never_gets_a_proxy_or_index_url_with_a_password(
    tmp_path: Path,
) -> None:
    environ = {
        "HOME": str(tmp_path),
        "HTTPS_PROXY": "http://user:pw@proxy:3128",
        "HTTP_PROXY": "http://proxy:3128",
        "PIP_INDEX_URL": "https://token@pypi.corp/simple",
        "NO_PROXY": "localhost",
        "NODE_EXTRA_CA_CERTS": "/ca.pem",
    }
    setup = host_setup(environ, cwd=tmp_path)
    assert setup.sandbox_variables(trusted=False) == {
        "HTTP_PROXY": "http://proxy:3128",
        "NO_PROXY": "localhost",
        "NODE_EXTRA_CA_CERTS": "/ca.pem",
    }
    trusted = setup.sandbox_variables(trusted=True)
    assert trusted["HTTPS_PROXY"] == environ["HTTPS_PROXY"]
    assert trusted["PIP_INDEX_URL"] == environ["PIP_INDEX_URL"]


def test_a_listing_install_shares_only_the_content_addressed_npm_store(tmp_path: Path) -> None:
    caches = SharedCaches.at(tmp_path / "cache")
    one, two = tmp_path / "p1", tmp_path / "p2"
    env_one = caches.probe_env(one, trusted=False)
    env_two = caches.probe_env(two, trusted=False)
    assert env_one["npm_config_cache"] != env_two["npm_config_cache"]
    for env in (env_one, env_two):
        assert (Path(env["npm_config_cache"]) / "_cacache").resolve() == caches.npm_cacache
        assert "UV_CACHE_DIR" not in env
    config = caches.probe_env(one, trusted=True)
    assert config["npm_config_cache"] == str(caches.root / "npm")
    assert config["UV_CACHE_DIR"] == str(caches.root / "uv")
    assert (tmp_path / "cache").stat().st_mode & 0o077 == 0
    assert caches.lock_for("npx a") is caches.lock_for("npx a")
    assert caches.lock_for("npx a") is not caches.lock_for("npx b")


def test_installer_stderr_becomes_a_bounded_safe_hint(tmp_path: Path) -> None:
    noisy = "import sys\nfor i in range(5000): print('line', i, file=sys.stderr)\n"
    noisy += "print('\\x1b[31merror:\\x1b[0m cannot reach \\u202eregistry', file=sys.stderr)\n"
    noisy += "print('npm error A complete log of this run can be found in: /x', file=sys.stderr)\n"
    noisy += "sys.exit(3)"
    try:
        run_install_step(
            [sys.executable, "-c", noisy], env={}, cwd=tmp_path, timeout=30, what="pip install"
        )
    except InstallFailed as exc:
        assert exc.message == "pip install failed (exit code 3)"
        assert exc.hint == "line 4998 | line 4999 | error: cannot reach \\u{202e}registry"
    else:
        raise AssertionError("the failing install passed")
    assert stderr_hint("") is None
    long = stderr_hint("x" * 1000)
    assert long is not None and len(long) == 240 and long.startswith("…")


def test_an_older_state_file_of_the_same_log_is_kept_and_upgraded(
    tmp_path: Path, log_key: LogKey
) -> None:
    legacy = tmp_path / "crawl-state.sqlite"
    db = sqlite3.connect(legacy)
    db.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE servers (id TEXT PRIMARY KEY, name TEXT NOT NULL, source TEXT NOT NULL,"
        " transport TEXT NOT NULL, descriptor TEXT NOT NULL, status TEXT NOT NULL DEFAULT"
        " 'active', first_seen TEXT NOT NULL, last_probe TEXT, last_ok TEXT, last_change TEXT,"
        " last_change_after TEXT, last_error TEXT, surface_hash TEXT, tool_count INTEGER,"
        " last_entry INTEGER);"
        "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, ran_at TEXT NOT NULL,"
        " summary TEXT NOT NULL);"
    )
    db.executemany(
        "INSERT INTO meta VALUES (?, ?)", [("schema", "1"), ("origin", log_key.signer.name)]
    )
    db.commit()
    db.close()
    log_dir = tmp_path / "log"
    assert state_path_for(log_dir, log_key.signer.name) == legacy
    assert state_path_for(log_dir, "log.example/another") == default_state_path(log_dir)
    spec = write_spec(tmp_path / "s.json", name="s", tools=[tool("t")])
    config = write_config(tmp_path / "servers.json", {"s": stub_argv(spec)})
    summary = crawl(
        CrawlOptions(log_dir=log_dir, signer=log_key.signer, servers_config=config, optout_dirs=())
    )
    assert summary.appended == 1 and not default_state_path(log_dir).exists()
    with CrawlState.open(legacy) as state:
        assert state.get_meta("schema") == "2"
        (row,) = state.servers()
        assert row.last_entry == 0 and row.package is None
    assert json.loads(json.dumps(summary.to_json()))["servers"][0]["status"] == "new"


def test_an_npm_error_report_is_hinted_by_its_code_and_message() -> None:
    report = "\n".join(
        [
            "npm warn something earlier",
            "npm error code E404",
            "npm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found",
            "npm error 404",
            "npm error 404  'nope@*' is not in this registry.",
            "npm error A complete log of this run can be found in: /tmp/x.log",
        ]
    )
    assert stderr_hint(report) == (
        "npm error code E404 | npm error 404 Not Found - GET "
        "https://registry.npmjs.org/nope - Not found | npm error 404"
    )
