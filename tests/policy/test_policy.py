"""``toolpin policy``: golden files for every product, env values never written."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolpin.cli import _register_commands, cli
from toolpin.clients.policy import PRODUCTS

GOLDEN = Path(__file__).parent / "golden"
LOCK = "/etc/toolpin/toolpin.lock"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    _register_commands()
    out = tmp_path_factory.mktemp("policy")
    result = CliRunner().invoke(
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
            "--force",  # the fleet's path; not on this machine
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return out, result.output


FILES = [
    ("claude-code", "managed-mcp.json"),
    ("claude-code", "managed-settings.json"),
    ("copilot", "managed-settings.json"),
    ("codex", "requirements.toml"),
    ("codex", "config.toml"),
    ("cursor", "cursor-dashboard.txt"),
]


@pytest.mark.parametrize(("product", "name"), FILES, ids=[f"{p}/{n}" for p, n in FILES])
def test_golden(written: tuple[Path, str], product: str, name: str) -> None:
    out, _ = written
    got = (out / product / name).read_bytes()
    expected = GOLDEN / product / name
    if os.environ.get("TOOLPIN_UPDATE_GOLDEN"):
        expected.parent.mkdir(exist_ok=True)
        expected.write_bytes(got)
    assert got == expected.read_bytes()
    assert b"Bearer secret" not in got and b"debug" not in got
    if name.endswith(".json"):
        json.loads(got)
    if name.endswith(".toml"):
        tomllib.loads(got.decode())


def test_every_product_written(written: tuple[Path, str]) -> None:
    out, output = written
    assert sorted(p.name for p in out.iterdir()) == sorted(PRODUCTS)
    for product in PRODUCTS:
        assert f"{product}: wrote " in output
    assert "LOG_LEVEL has a literal value" in output
    assert "headers are not written" in output
    assert "only as fixed as that variable" in output
    assert f"Deploy the lock at {LOCK}" in output


def test_wrapped_commands(written: tuple[Path, str]) -> None:
    out, _ = written
    managed = json.loads((out / "claude-code" / "managed-mcp.json").read_text())["mcpServers"]
    fetch = managed["fetch tool"]
    assert fetch["command"] == "/opt/toolpin/bin/toolpin"
    assert fetch["args"] == [
        "run",
        "--name",
        "fetch tool",
        "--lock",
        LOCK,
        "--only-locked",
        "--",
        "uvx",
        "mcp-server-fetch==2025.4.7",
    ]
    assert managed["github"]["env"] == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}",
        "LOG_LEVEL": "${LOG_LEVEL}",
    }
    # A remote server runs behind the proxy too; its header (a literal token) is not written.
    assert managed["docs"] == {
        "type": "stdio",
        "command": "/opt/toolpin/bin/toolpin",
        "args": [
            "run",
            "--name",
            "docs",
            "--lock",
            LOCK,
            "--only-locked",
            "--url",
            "https://docs.example.com/mcp",
        ],
    }
    settings = json.loads((out / "claude-code" / "managed-settings.json").read_text())
    assert settings["allowManagedMcpServersOnly"] is True
    assert {"serverCommand": ["/opt/toolpin/bin/toolpin", *managed["docs"]["args"]]} in settings[
        "allowedMcpServers"
    ]
    assert {"serverUrl": "https://docs.example.com/mcp"} in settings["deniedMcpServers"]
    assert {"serverCommand": ["uvx", "mcp-server-fetch==2025.4.7"]} in settings["deniedMcpServers"]
    codex = tomllib.loads((out / "codex" / "config.toml").read_text())["mcp_servers"]
    assert codex["github"]["env_vars"] == ["GITHUB_PERSONAL_ACCESS_TOKEN", "LOG_LEVEL"]
    req = tomllib.loads((out / "codex" / "requirements.toml").read_text())["mcp_servers"]
    ident = req["fetch tool"]["identity"]["command"]
    assert ident["executable"] == "/opt/toolpin/bin/toolpin"
    assert [a["value"] for a in ident["args"]] == fetch["args"]
    assert all(a["match"] == "exact" for a in ident["args"])
    docs = req["docs"]["identity"]["command"]
    assert [a["value"] for a in docs["args"]] == managed["docs"]["args"]


@pytest.mark.parametrize("lock", ["toolpin.lock", "./x/toolpin.lock", "~/toolpin.lock", ""])
def test_relative_lock_is_refused(tmp_path: Path, lock: str) -> None:
    _register_commands()
    result = CliRunner().invoke(
        cli,
        [
            "policy",
            "claude-code",
            "--config",
            str(GOLDEN / "approved.json"),
            "--lock",
            lock,
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code != 0
    assert not (tmp_path / "out").exists()


def test_relative_lock_via_main(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolpin",
            "policy",
            "codex",
            "--config",
            str(GOLDEN / "approved.json"),
            "--lock",
            "toolpin.lock",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("toolpin: --lock must be an absolute path")
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()


def test_windows_lock_path_is_absolute(tmp_path: Path) -> None:
    _register_commands()
    result = CliRunner().invoke(
        cli,
        [
            "policy",
            "copilot",
            "--config",
            str(GOLDEN / "approved.json"),
            "--lock",
            "C:\\ProgramData\\toolpin\\toolpin.lock",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output


def test_empty_or_bad_config(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    empty = tmp_path / "empty.json"
    empty.write_text('{"mcpServers": {}}')
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": ')
    for config, message in (
        (empty, "lists no servers"),
        (bad, "line 1"),
        (tmp_path / "none.json", "not found"),
    ):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "toolpin",
                "policy",
                "cursor",
                "--config",
                str(config),
                "--lock",
                LOCK,
                "--out",
                str(tmp_path / "o"),
            ],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert proc.returncode == 2, proc.stderr
        assert message in proc.stderr and "Traceback" not in proc.stderr


def _policy(tmp_path: Path, *extra: str) -> object:
    _register_commands()
    args = ["policy", "claude-code", "--config", str(GOLDEN / "approved.json")]
    return CliRunner().invoke(cli, [*args, "--lock", LOCK, "--out", str(tmp_path), *extra])


def test_default_launcher_is_the_installed_toolpin(tmp_path: Path) -> None:
    from toolpin.clients.wrap import installed_launcher

    result = _policy(tmp_path)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    managed = json.loads((tmp_path / "claude-code" / "managed-mcp.json").read_text())
    github = managed["mcpServers"]["github"]
    assert [github["command"], github["args"][0]] == [installed_launcher().argv[0], "run"]
    assert Path(github["command"]).is_absolute()


def test_a_launcher_that_does_not_start_is_refused(tmp_path: Path) -> None:
    from toolpin import __version__
    from toolpin.errors import ConfigError

    result = _policy(tmp_path, "--launcher", "uvx")  # toolpin is not on a package index yet
    assert isinstance(result.exception, ConfigError)  # type: ignore[attr-defined]
    assert "does not start" in str(result.exception)  # type: ignore[attr-defined]
    assert not (tmp_path / "claude-code").exists()
    result = _policy(tmp_path, "--launcher", "uvx", "--force")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    managed = json.loads((tmp_path / "claude-code" / "managed-mcp.json").read_text())
    github = managed["mcpServers"]["github"]
    assert [github["command"], *github["args"][:2]] == ["uvx", f"toolpin@{__version__}", "run"]
