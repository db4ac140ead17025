"""The probe sandbox: minimal environment, placeholder-credential retry rules, stderr tail."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from crawl_helpers import stub_argv, tool, write_spec

from toolpin.crawl.sandbox import (
    PLACEHOLDER,
    credential_shaped,
    missing_variables,
    placeholder_plan,
    sandbox_env,
)
from toolpin.crawl.stdio import STDERR_TAIL_BYTES, probe_sandboxed, run_with_stderr
from toolpin.errors import ProbeError


@pytest.mark.parametrize(
    ("name", "shaped"),
    [
        ("GITHUB_TOKEN", True),
        ("OPENAI_API_KEY", True),
        ("STRIPE_SECRET", True),
        ("DB_PASSWORD", True),
        ("SENTRY_DSN", True),
        ("AZURE_CLIENT_ID", True),
        ("PG_CONNECTION_STRING", True),
        ("GOOGLE_CREDENTIALS", True),
        ("SPOTIFY_MCP_TOOLSETS", False),
        ("API_BASE_URL", False),
        ("WORKSPACE_DIR", False),
        ("KEYBOARD_LAYOUT", False),
    ],
)
def test_credential_shape(name: str, shaped: bool) -> None:
    assert credential_shaped(name) is shaped


def test_missing_variables_are_read_from_lines_about_missing_things() -> None:
    tail = (
        "INFO starting server on STDIO_MODE\n"
        "Error: GITHUB_TOKEN environment variable is required\n"
        "please set ${ACME_API_KEY} or $OTHER_SECRET before starting\n"
        "Missing required: GITHUB_TOKEN\n"
        "LOG_LEVEL defaults to info\n"
    )
    assert missing_variables(tail) == ["GITHUB_TOKEN", "ACME_API_KEY", "OTHER_SECRET"]
    assert missing_variables("TypeError: undefined is not a function") == []


def test_placeholder_plan_rules() -> None:
    assert placeholder_plan(["A_TOKEN", "B_API_KEY"], {}) == {
        "A_TOKEN": PLACEHOLDER,
        "B_API_KEY": PLACEHOLDER,
    }
    assert placeholder_plan([], {}) is None  # nothing named: no retry
    assert placeholder_plan(["A_TOKEN", "SPOTIFY_MCP_TOOLSETS"], {}) is None  # may gate tools
    assert placeholder_plan(["A_TOKEN"], {"A_TOKEN": "x"}) is None  # set already: no use


def test_sandbox_env_is_minimal(tmp_path: Path) -> None:
    env = sandbox_env(tmp_path, extra={"FROM_CONFIG": "1"})
    assert set(env) == {"PATH", "HOME", "NODE_ENV", "CI", "NO_UPDATE_NOTIFIER", "FROM_CONFIG"}
    assert env["HOME"] == str(tmp_path)
    assert (env["NODE_ENV"], env["CI"], env["NO_UPDATE_NOTIFIER"]) == ("production", "1", "1")


def test_the_server_sees_only_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLPIN_LOG_KEY", "PRIVATE+KEY+must-not-leak")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "must-not-leak")
    report = tmp_path / "env.json"
    spec = write_spec(tmp_path / "s.json", tools=[tool("t")], env_report=str(report))
    home = tmp_path / "home"
    home.mkdir()
    outcome = probe_sandboxed(stub_argv(spec), env=sandbox_env(home), cwd=None, timeout=20)
    seen = json.loads(report.read_text())
    assert "TOOLPIN_LOG_KEY" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    assert seen["HOME"] == str(home)
    assert outcome.placeholders == ()
    assert set(outcome.env_names) == set(sandbox_env(home))


def test_retry_with_placeholders_when_only_credentials_are_missing(tmp_path: Path) -> None:
    report = tmp_path / "env.json"
    spec = write_spec(
        tmp_path / "s.json",
        tools=[tool("t")],
        require_env=["ACME_API_KEY", "ACME_TOKEN"],
        env_report=str(report),
    )
    outcome = probe_sandboxed(stub_argv(spec), env=sandbox_env(tmp_path), cwd=None, timeout=20)
    assert outcome.placeholders == ("ACME_API_KEY", "ACME_TOKEN")
    assert "ACME_API_KEY" in outcome.env_names
    assert json.loads(report.read_text())["ACME_API_KEY"] == PLACEHOLDER
    assert outcome.result.snapshot.counts()["tools"] == 1


def test_no_retry_when_a_non_credential_is_missing(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "s.json", tools=[tool("t")], require_env=["ACME_API_KEY", "ACME_TOOLSETS"]
    )
    with pytest.raises(ProbeError, match="not all of them credentials, so no placeholder retry"):
        probe_sandboxed(stub_argv(spec), env=sandbox_env(tmp_path), cwd=None, timeout=20)


def test_retry_happens_once_only(tmp_path: Path) -> None:
    # A server that still fails with the placeholder (it wants a real key) fails the probe.
    spec = write_spec(tmp_path / "s.json", crash=1)
    result, error, stderr = run_with_stderr(
        stub_argv(spec), env=sandbox_env(tmp_path), cwd=None, timeout=20
    )
    assert result is None and error is not None
    assert "crashing on purpose" in stderr
    with pytest.raises(ProbeError) as caught:
        probe_sandboxed(stub_argv(spec), env=sandbox_env(tmp_path), cwd=None, timeout=20)
    assert "placeholder" not in caught.value.message  # nothing named: no retry at all


def test_stderr_tail_is_bounded(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(
        "import sys\nsys.stderr.write('x' * 50000 + 'END')\nsys.stderr.flush()\nsys.exit(3)\n"
    )
    result, error, stderr = run_with_stderr(
        [sys.executable, str(script)],
        env=sandbox_env(tmp_path),
        cwd=None,
        timeout=20,
    )
    assert result is None and error is not None
    assert stderr.endswith("END") and len(stderr) == STDERR_TAIL_BYTES
    assert list(tmp_path.iterdir()) == [script]  # nothing left behind
