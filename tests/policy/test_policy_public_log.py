"""``toolpin policy --log URL --vkey ABS [--require-public] [--accept-public-after DAYS]``:
every wrapped entry of every product consults the public log with the same policy, and
the proxy (its click-free start path and the click CLI alike) reads those options back."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolpin.__main__ import _parse_run
from toolpin.cli import _register_commands, cli
from toolpin.clients.policy import ApprovedServer, LogPolicy, log_policy, wrapped_argv
from toolpin.clients.wrap import recognise_wrap
from toolpin.errors import InputError

GOLDEN = Path(__file__).parent / "golden"
LOCK = "/etc/toolpin/toolpin.lock"
URL = "https://log.example/toolpin/"
VKEY = "/etc/toolpin/log.vkey"
LOG_ARGS = ["--log", URL, "--vkey", VKEY, "--require-public", "--accept-public-after", "14"]


def _policy(out: Path, *extra: str) -> Any:
    _register_commands()
    return CliRunner().invoke(
        cli,
        [
            "policy",
            "all",
            "--config",
            str(GOLDEN / "approved.json"),
            "--lock",
            LOCK,
            "--out",
            str(out),
            "--launcher",
            "/opt/toolpin/bin/toolpin",
            "--force",
            *extra,
        ],
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("policy-log")
    result = _policy(out, *LOG_ARGS)
    assert result.exit_code == 0, result.output
    assert f"Deploy the log's verifier key at {VKEY} on every machine too." in result.output
    return out


def test_every_wrapped_entry_carries_the_log_and_its_policy(written: Path) -> None:
    managed = json.loads((written / "claude-code" / "managed-mcp.json").read_text())["mcpServers"]
    assert managed["fetch tool"]["args"] == [
        "run",
        "--name",
        "fetch tool",
        "--lock",
        LOCK,
        "--only-locked",
        *LOG_ARGS,
        "--",
        "uvx",
        "mcp-server-fetch==2025.4.7",
    ]
    assert managed["docs"]["args"][-2:] == ["--url", "https://docs.example.com/mcp"]
    assert managed["docs"]["args"][6:-2] == LOG_ARGS
    for entry in managed.values():
        assert entry["args"][6 : 6 + len(LOG_ARGS)] == LOG_ARGS
    settings = json.loads((written / "claude-code" / "managed-settings.json").read_text())
    allowed = [a["serverCommand"][1:] for a in settings["allowedMcpServers"]]
    assert sorted(map(tuple, allowed)) == sorted(tuple(e["args"]) for e in managed.values())
    copilot = json.loads((written / "copilot" / "managed-settings.json").read_text())
    assert copilot["allowedMcpServers"] == settings["allowedMcpServers"]
    req = tomllib.loads((written / "codex" / "requirements.toml").read_text())["mcp_servers"]
    ident = [a["value"] for a in req["fetch tool"]["identity"]["command"]["args"]]
    assert ident == managed["fetch tool"]["args"]
    config = tomllib.loads((written / "codex" / "config.toml").read_text())["mcp_servers"]
    assert config["github"]["args"] == managed["github"]["args"]
    cursor = (written / "cursor" / "cursor-dashboard.txt").read_text()
    assert f"--only-locked {' '.join(LOG_ARGS)} -- *" in cursor
    assert f"--only-locked {' '.join(LOG_ARGS)} --url *" in cursor


def test_the_proxy_reads_the_options_back(written: Path) -> None:
    """The entry's argv, as the client starts it: the click-free parser gives the proxy
    the log, its key and the policy; unwrap still finds the server's own command."""
    managed = json.loads((written / "claude-code" / "managed-mcp.json").read_text())["mcpServers"]
    args = managed["fetch tool"]["args"]
    parsed = _parse_run(args[1:])
    assert parsed is not None
    assert parsed["log"] == URL and parsed["vkey"] == VKEY
    assert parsed["require_public"] is True and parsed["accept_after"] == 14
    assert parsed["argv"] == ["uvx", "mcp-server-fetch==2025.4.7"]
    remote = _parse_run(managed["docs"]["args"][1:])
    assert remote is not None and remote["url"] == "https://docs.example.com/mcp"
    assert remote["log"] == URL and remote["require_public"] is True
    form = recognise_wrap(["/opt/toolpin/bin/toolpin", *args])
    assert form is not None and form.inner_start is not None
    assert ["/opt/toolpin/bin/toolpin", *args][form.inner_start :] == [
        "uvx",
        "mcp-server-fetch==2025.4.7",
    ]


def test_without_a_log_the_files_are_unchanged(tmp_path: Path) -> None:
    result = _policy(tmp_path / "plain")
    assert result.exit_code == 0, result.output
    for product, name in [("claude-code", "managed-mcp.json"), ("codex", "config.toml")]:
        assert (tmp_path / "plain" / product / name).read_bytes() == (
            GOLDEN / product / name
        ).read_bytes()
    assert "verifier key" not in result.output


def test_the_key_text_itself_may_be_given() -> None:
    key = "log.example/toolpin+0a1b2c3d+AbCdEf="
    found = log_policy(URL, key)
    assert found == LogPolicy(URL, key)
    server = ApprovedServer("x", "stdio", ("node", "x.js"))
    assert wrapped_argv(server, ["toolpin"], LOCK, found) == [
        "toolpin",
        "run",
        "--name",
        "x",
        "--lock",
        LOCK,
        "--only-locked",
        "--log",
        URL,
        "--vkey",
        key,
        "--",
        "node",
        "x.js",
    ]


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--log", URL], "--log and --vkey go together"),
        (["--vkey", VKEY], "--log and --vkey go together"),
        (["--log", URL, "--vkey", "log.vkey"], "--vkey must be an absolute path"),
        (["--log", URL, "--vkey", "./keys/log.vkey"], "--vkey must be an absolute path"),
        (["--log", "ftp://log.example/", "--vkey", VKEY], "--log must be an https://"),
        (["--require-public"], "need a log"),
        (["--accept-public-after", "3"], "need a log"),
        (["--log", URL, "--vkey", VKEY, "--accept-public-after", "0"], "0 is not in the range"),
    ],
)
def test_a_log_setting_that_cannot_work_everywhere_is_refused(
    tmp_path: Path, args: list[str], why: str
) -> None:
    result = _policy(tmp_path / "out", *args)
    assert result.exit_code != 0
    said = result.output + str(result.exception)
    assert why in said
    assert isinstance(result.exception, (InputError, SystemExit, type(None)))
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_a_refusal_via_main_is_exit_2_and_one_line(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolpin",
            "policy",
            "codex",
            "--config",
            str(GOLDEN / "approved.json"),
            "--lock",
            LOCK,
            "--out",
            str(tmp_path / "out"),
            "--log",
            URL,
            "--vkey",
            "log.vkey",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("toolpin: --vkey must be an absolute path or the key text")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_log_policy_refuses_in_one_line() -> None:
    with pytest.raises(InputError, match="absolute path or the key text"):
        log_policy(URL, "relative/log.vkey")
