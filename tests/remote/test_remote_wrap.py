"""``wrap --remote`` / ``unwrap``: a remote entry becomes ``toolpin run --url ...`` in every
client format with a remote form, and unwrap gives back the file byte for byte."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.proxy.harness import SRC
from tests.remote.helpers import audit_events
from tests.remote.http_servers import serve_asgi
from tests.remote.test_remote_sdk import sdk_server
from toolpin.clients.locations import ConfigLocation, Dialect
from toolpin.clients.naming import wrapped_name
from toolpin.clients.wrap import Launcher, WrapJournal, apply, plan_unwrap, plan_wrap

LAUNCHER = Launcher(("/opt/toolpin/bin/toolpin",))

CASES: list[tuple[str, Dialect, str, str]] = [
    (
        "claude-code-http",
        "claude-code",
        ".claude.json",
        """{
  "mcpServers": {
    "docs": {
      "type": "http",
      "url": "https://docs.example.com/mcp",
      "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}
    }
  },
  "projects": {"/work/app": {"mcpServers": {"old": {"type": "sse", "url": "https://old.example.com/sse"}}}}
}
""",
    ),
    (
        "cursor",
        "mcpServers",
        "mcp.json",
        """{
  // team servers
  "mcpServers": {
    "docs": { "url": "https://docs.example.com/mcp" },
  },
}
""",
    ),
    (
        "vscode",
        "vscode",
        "mcp.json",
        """{
	"inputs": [{"id": "token", "type": "promptString", "password": true}],
	"servers": {
		"docs": {
			"type": "http",
			"url": "https://docs.example.com/mcp",
			"headers": {"X-Key": "${input:token}"}
		}
	}
}
""",
    ),
    (
        "windsurf",
        "mcpServers",
        "mcp_config.json",
        '{"mcpServers": {"docs": {"serverUrl": "https://docs.example.com/mcp", '
        '"disabled": false}}}',
    ),
    (
        "gemini",
        "mcpServers",
        "settings.json",
        """{
  "theme": "dark",
  "mcpServers": {
    "docs": {"httpUrl": "https://docs.example.com/mcp", "timeout": 5000, "trust": false},
    "legacy": {"url": "https://old.example.com/sse"}
  }
}
""",
    ),
    (
        "codex",
        "codex",
        "config.toml",
        """model = "o4"

# the team's docs
[mcp_servers.docs]
url = "https://docs.example.com/mcp"  # streamable
bearer_token_env_var = "DOCS_TOKEN"
http_headers = { "X-Team" = "core" }
env_http_headers = { "X-Key" = "DOCS_KEY" }
startup_timeout_sec = 20

[mcp_servers.local]
command = "npx"
args = ["-y", "x@1.0.0"]
""",
    ),
]

EXPECTED: dict[str, dict[str, list[str]]] = {
    "claude-code-http": {
        "docs": ["--url", "https://docs.example.com/mcp", "--transport", "streamable-http",
                 "--header", "Authorization: Bearer ${DOCS_TOKEN}"],
        "old": ["--url", "https://old.example.com/sse", "--transport", "sse"],
    },
    "cursor": {"docs": ["--url", "https://docs.example.com/mcp"]},
    "vscode": {
        "docs": ["--url", "https://docs.example.com/mcp", "--transport", "streamable-http",
                 "--header", "X-Key: ${input:token}"],
    },
    "windsurf": {"docs": ["--url", "https://docs.example.com/mcp"]},
    "gemini": {
        "docs": ["--url", "https://docs.example.com/mcp", "--transport", "streamable-http"],
        "legacy": ["--url", "https://old.example.com/sse"],
    },
    "codex": {
        "docs": ["--url", "https://docs.example.com/mcp",
                 "--header", "Authorization: Bearer ${env:DOCS_TOKEN}",
                 "--header", "X-Team: core", "--header", "X-Key: ${env:DOCS_KEY}"],
    },
}  # fmt: skip


def _servers(case: str, text: str) -> dict[str, Any]:
    if case == "codex":
        return dict(tomllib.loads(text)["mcp_servers"])
    from toolpin.clients.jsonc import parse

    value = parse(text).value
    out: dict[str, Any] = {}
    for key in ("mcpServers", "servers"):
        out.update(value.get(key, {}))
    for project in value.get("projects", {}).values():
        out.update(project.get("mcpServers", {}))
    return out


@pytest.mark.parametrize(("case", "dialect", "name", "text"), CASES, ids=[c[0] for c in CASES])
def test_wrap_remote_then_unwrap_byte_for_byte(
    tmp_path: Path, case: str, dialect: Dialect, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    home = tmp_path / "home"
    locations = [ConfigLocation(case, path, dialect)]
    untouched = plan_wrap(locations, launcher=LAUNCHER)
    # Without --remote only local servers change (Codex's file has one).
    assert untouched.change_count == (1 if case == "codex" else 0)
    plan = plan_wrap(locations, launcher=LAUNCHER, remote=True)
    apply(plan, home=home)
    wrapped = path.read_text()
    servers = _servers(case, wrapped)
    for server, args in EXPECTED[case].items():
        entry = servers[server]
        if isinstance(entry["command"], list):
            argv = entry["command"]
        else:
            argv = [entry["command"], *entry["args"]]
        # the key, qualified with the client (and the project, for a per-project server)
        name = wrapped_name(server, case, "/work/app" if server == "old" else None)
        assert argv == ["/opt/toolpin/bin/toolpin", "run", "--name", name, *args]
        assert not {"url", "serverUrl", "httpUrl", "headers"} & set(entry)
    if case == "vscode":
        assert servers["docs"]["type"] == "stdio"
    if case == "gemini":
        assert servers["docs"]["timeout"] == 5000 and servers["docs"]["trust"] is False
    if case == "codex":
        assert servers["docs"]["startup_timeout_sec"] == 20
    # A second wrap finds everything protected.
    assert plan_wrap(locations, launcher=LAUNCHER, remote=True).change_count == 0
    journal = WrapJournal(home)
    undo = plan_unwrap(locations, journal=journal.load(), remotes=journal.load_remotes())
    apply(undo, home=home)
    assert path.read_text() == text
    assert WrapJournal(home).load_remotes() == {}


def test_a_remote_entry_toolpin_cannot_rewrite_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    text = json.dumps(
        {
            "mcpServers": {
                "a": {"url": "https://${HOST}/mcp"},
                "b": {"url": "https://x.example/mcp", "headers": {"K": "${V:-default}"}},
                "c": {"url": "https://x.example/mcp", "headers": ["not", "a", "map"]},
            }
        }
    )
    path.write_text(text)
    plan = plan_wrap([ConfigLocation("cursor", path, "mcpServers")], launcher=LAUNCHER, remote=True)
    notes = {e.name: e.note for f in plan.files for e in f.entries}
    assert plan.change_count == 0
    assert "variable" in (notes["a"] or "")
    assert "does not expand" in (notes["b"] or "")
    assert "edit it by hand" in (notes["c"] or "")


def test_unwrap_leaves_an_entry_edited_after_the_wrap(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"docs": {"url": "https://docs.example.com/mcp"}}}')
    home = tmp_path / "home"
    locations = [ConfigLocation("cursor", path, "mcpServers")]
    apply(plan_wrap(locations, launcher=LAUNCHER, remote=True), home=home)
    path.write_text(path.read_text().replace('"docs@cursor",', '"docs@cursor", "--quiet",'))
    journal = WrapJournal(home)
    undo = plan_unwrap(locations, journal=journal.load(), remotes=journal.load_remotes())
    assert undo.change_count == 0
    assert "edited since" in (undo.files[0].entries[0].note or "")


def test_the_wrapped_entry_runs_the_proxy(toolpin_home: Path, tmp_path: Path) -> None:
    """The command a wrapped remote entry holds starts toolpin in front of the server."""
    app = sdk_server("wrapped-remote")
    with serve_asgi(app.streamable_http_app()) as base:
        path = tmp_path / ".mcp.json"
        path.write_text(
            json.dumps({"mcpServers": {"docs": {"type": "http", "url": f"{base}/mcp"}}})
        )
        launcher = Launcher((sys.executable, "-m", "toolpin"))
        apply(
            plan_wrap(
                [ConfigLocation("claude", path, "mcpServers")], launcher=launcher, remote=True
            ),
            home=tmp_path / "home",
        )
        entry = json.loads(path.read_text())["mcpServers"]["docs"]
        env = {**os.environ, "PYTHONPATH": str(SRC), "TOOLPIN_HOME": str(toolpin_home)}
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)

        async def session() -> None:
            async with Client(params, mode="legacy") as client:
                assert [t.name for t in (await client.list_tools()).tools] == ["add"]

        anyio.run(session)
    assert audit_events(toolpin_home) == ["pin"]
