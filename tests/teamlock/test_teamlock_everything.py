"""The team lock against the real ``@modelcontextprotocol/server-everything`` (npm).

Installed once per session into ``<repo>/.cache/npm-servers`` (see ``teamlock_support``).
Its toolset depends on the client's capabilities (a client declaring ``roots`` and
``elicitation`` gets three more tools). The lock lists it with every capability toolpin
can declare, and a client that declares less is offered a subset, which passes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from teamlock_support import EVERYTHING_VERSION, Client, Project

pytestmark = pytest.mark.npm

ROOTS_AND_ELICITATION = {"roots": {"listChanged": True}, "elicitation": {}}


def listed_tools(client: Client) -> set[str]:
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    client.request(2, "tools/list")
    return {t["name"] for t in client.receive(2)["result"]["tools"]}


def locked_tools(project: Project) -> set[str]:
    doc: dict[str, Any] = json.loads(project.lock_path.read_text())
    return {t["name"] for t in doc["servers"]["everything"]["tools"]["items"]}


def test_lock_check_and_run_against_server_everything(
    project: Project, everything_server: Path
) -> None:
    argv = [str(everything_server), "stdio"]
    project.write_config({"everything": {"command": argv[0], "args": argv[1:]}})

    first = project.toolpin("lock")
    assert first.code == 0, first.out + first.err
    written = project.lock_path.read_bytes()
    entry = json.loads(written)["servers"]["everything"]
    assert len(entry["tools"]["items"]) >= 10
    assert {"echo", "get-sum"} <= locked_tools(project)
    assert entry["prompts"]["items"] and entry["resources"]["items"]
    assert entry["resourceTemplates"]["items"]
    assert entry["instructions"]["text"]
    manifest = everything_server.parents[1] / "@modelcontextprotocol/server-everything"
    assert json.loads((manifest / "package.json").read_text())["version"] == EVERYTHING_VERSION

    assert project.toolpin("lock").code == 0
    assert project.lock_path.read_bytes() == written  # deterministic

    check = project.toolpin("lock", "--check")
    assert check.code == 0, check.out
    assert "The server matches" in check.out

    # The lock holds the fullest view: a client with roots and elicitation sees it all...
    full = locked_tools(project)
    assert {"get-roots-list", "trigger-elicitation-request"} <= full
    client = project.start_proxy("--lock", "toolpin.lock", "--", *argv)
    assert "result" in client.initialize(capabilities=ROOTS_AND_ELICITATION)
    assert listed_tools(client) <= full
    # With roots declared this server keeps running after its input closes (the proxy
    # would end it after a grace period): stop it as a client does. Nothing was blocked.
    client.close(terminate=True)
    assert b"CHANGED" not in client.stderr

    # ...and a client that declares nothing is offered a subset of it, which passes.
    client = project.start_proxy("--name", "everything", "--lock", "toolpin.lock", "--", *argv)
    assert "result" in client.initialize()
    plain = listed_tools(client)
    assert plain < full
    assert client.close() == 0
    assert b"not offered to this client" in client.stderr

    # A lock listed with no client capabilities does not approve the extra tools.
    result = project.toolpin("lock", "--client-capabilities", "none")
    assert result.code == 0, result.out
    assert locked_tools(project) == plain
    client = project.start_proxy("--lock", "toolpin.lock", "--", *argv)
    assert client.initialize(capabilities=ROOTS_AND_ELICITATION)["error"]["code"] == -31042
    assert client.close() == 1
