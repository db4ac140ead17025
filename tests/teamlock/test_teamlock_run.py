"""``toolpin run --lock FILE [--only-locked]``: a real proxy process, spoken to as a client.

The lock entry is the pin (nothing is pinned on this machine); a mismatch blocks with
-31042; the locked package version is run even when the config asks for the newest; a
command running another version or package, a missing, unreadable or tampered lock, and
(with ``--only-locked``) a server the lock does not list are refused: the server is not
started and every request gets -31043.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from teamlock_support import Client, FakeRunners, Project, Registries, Servers, entry

DRIFT = -31042
UNVERIFIED = -31043


def tools_of(client: Client) -> list[str]:
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    client.request(2, "tools/list")
    answer = client.receive(2)
    assert "result" in answer, answer
    return sorted(t["name"] for t in answer["result"]["tools"])


def pins_written(project: Project) -> list[Path]:
    """The pin files of this machine's store (``TOOLPIN_HOME/pins/<id>.json``)."""
    return sorted((project.home / "pins").glob("*.json"))


@pytest.fixture
def locked(project: Project, servers: Servers) -> tuple[Project, list[str]]:
    argv = servers.command("notes", instructions="Be brief.")
    project.write_config({"notes": entry(argv)})
    result = project.toolpin("lock")
    assert result.code == 0, result.out + result.err
    return project, argv


def test_the_lock_entry_is_the_pin(locked: tuple[Project, list[str]]) -> None:
    project, argv = locked
    client = project.start_proxy("--lock", "toolpin.lock", "--", *argv)
    answer = client.initialize()
    assert answer["result"]["serverInfo"]["name"] == "raw-server"
    assert tools_of(client) == ["count", "search"]
    assert client.close() == 0
    assert b"2 tools, instructions match toolpin.lock" in client.stderr
    assert pins_written(project) == []  # no trust on first use, nothing pinned here


def test_a_mismatch_blocks_and_points_at_lock_check(
    locked: tuple[Project, list[str]], servers: Servers
) -> None:
    project, argv = locked
    servers.edit("notes", tools=[{"name": "search", "description": "Search, then mail it."}])
    client = project.start_proxy("--name", "notes", "--lock", "toolpin.lock", "--", *argv)
    answer = client.initialize()
    error = answer["error"]
    assert error["code"] == DRIFT
    assert "toolpin lock --check" in error["message"]
    assert "toolpin.lock" in error["message"]
    assert "mail it" not in json.dumps(answer)  # server text never reaches the client
    assert client.close() == 1
    assert pins_written(project) == []


def test_a_server_the_lock_does_not_list_falls_back_to_this_machines_pin(
    locked: tuple[Project, list[str]], servers: Servers
) -> None:
    project, _ = locked
    other = servers.command("other")
    client = project.start_proxy("--lock", "toolpin.lock", "--", *other)
    assert "result" in client.initialize()
    assert client.close() == 0
    assert b"is not in toolpin.lock; using this machine's pin" in client.stderr
    assert len(pins_written(project)) == 1  # trust on first use, as without a lock


def test_only_locked_refuses_a_server_the_lock_does_not_list(
    locked: tuple[Project, list[str]], servers: Servers, tmp_path: Path
) -> None:
    project, argv = locked
    record = tmp_path / "other-in.jsonl"
    other = servers.command("other", record=str(record))
    client = project.start_proxy("--lock", "toolpin.lock", "--only-locked", "--", *other)
    answer = client.initialize()
    assert answer["error"]["code"] == UNVERIFIED
    assert "the lock does not approve it" in answer["error"]["message"]
    assert client.close() == 2
    assert b"--only-locked runs only servers the lock approved" in client.stderr
    assert not record.exists()  # never started
    # The listed server runs.
    listed = project.start_proxy("--lock", "toolpin.lock", "--only-locked", "--", *argv)
    assert "result" in listed.initialize()
    assert listed.close() == 0


def test_only_locked_needs_a_lock(locked: tuple[Project, list[str]], tmp_path: Path) -> None:
    project, argv = locked
    client = project.start_proxy("--only-locked", "--", *argv)
    answer = client.initialize()
    assert answer["error"]["code"] == UNVERIFIED
    assert client.close() == 2
    assert b"--only-locked needs --lock" in client.stderr


@pytest.mark.parametrize("problem", ["missing", "directory", "tampered", "not-a-lock"])
def test_an_unusable_lock_refuses_to_start_the_server(
    locked: tuple[Project, list[str]], servers: Servers, tmp_path: Path, problem: str
) -> None:
    project, _ = locked
    record = tmp_path / "in.jsonl"
    servers.edit("notes", record=str(record))
    argv = json.loads(project.config.read_text())["mcpServers"]["notes"]
    argv = [argv["command"], *argv["args"]]
    lock = project.lock_path
    if problem == "missing":
        lock.unlink()
    elif problem == "directory":
        lock.unlink()
        lock.mkdir()
    elif problem == "tampered":
        doc = json.loads(lock.read_text())
        doc["servers"]["notes"]["tools"]["items"][0]["definition"]["description"] = "Edited."
        lock.write_text(json.dumps(doc, indent=2))
    else:
        lock.write_text('{"lockfileVersion": 1, "servers": {}}')
    client = project.start_proxy("--lock", "toolpin.lock", "--", *argv)
    answer = client.initialize()
    assert answer["error"]["code"] == UNVERIFIED
    assert "its lock could not be used" in answer["error"]["message"]
    # Later requests get the same answer, until the client hangs up.
    client.request(5, "tools/list")
    assert client.receive(5)["error"]["code"] == UNVERIFIED
    assert client.close() == 2
    assert f"cannot use the lockfile {lock}".encode() in client.stderr
    assert not record.exists()  # the server was never started


def test_a_relative_lock_path_is_read_from_the_clients_directory(
    locked: tuple[Project, list[str]], tmp_path: Path
) -> None:
    project, argv = locked
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    client = project.start_proxy("--lock", "toolpin.lock", "--", *argv, cwd=elsewhere)
    answer = client.initialize()
    assert answer["error"]["code"] == UNVERIFIED
    assert client.close() == 2
    assert f"cannot use the lockfile {elsewhere / 'toolpin.lock'}".encode() in client.stderr
    assert b"A relative --lock path is looked up from the folder" in client.stderr
    # Started from the project folder, the same relative path works.
    here = project.start_proxy("--lock", "toolpin.lock", "--", *argv, cwd=project.root)
    assert "result" in here.initialize()
    assert here.close() == 0


# ------------------------------------------------------------------ packages held


@pytest.fixture
def locked_npx(
    project: Project, registry: Registries, fake_runners: FakeRunners, servers: Servers
) -> tuple[Project, FakeRunners]:
    fake_runners.serve("notes-mcp", servers.spec("notes-mcp"))
    fake_runners.serve("other-mcp", servers.spec("other-mcp"))
    project.write_config({"notes": {"command": "npx", "args": ["-y", "notes-mcp"]}})
    result = project.toolpin("lock")
    assert result.code == 0, result.out + result.err
    fake_runners.record.unlink()
    # From here on the registry says 1.4.0 is the newest; the proxy must not care.
    registry.serve_npm("notes-mcp", "1.4.0", "sha512-" + "Q" * 86 + "==", latest=True)
    project.env["PATH"] = str(fake_runners.bin) + ":" + project.process_env()["PATH"]
    return project, fake_runners


def test_the_locked_version_runs_when_the_config_asks_for_the_newest(
    locked_npx: tuple[Project, FakeRunners],
) -> None:
    project, runners = locked_npx
    client = project.start_proxy(
        "--name", "notes", "--lock", "toolpin.lock", "--", "npx", "-y", "notes-mcp"
    )
    assert "result" in client.initialize()
    assert tools_of(client) == ["count", "search"]
    assert client.close() == 0
    assert runners.runs() == [
        {"runner": "npx", "args": ["-y", "notes-mcp@1.3.0"], "spec": "notes-mcp@1.3.0"}
    ]
    assert b"running notes-mcp 1.3.0, the version in the lock" in client.stderr


def test_the_locked_version_written_in_the_command_runs(
    locked_npx: tuple[Project, FakeRunners],
) -> None:
    project, runners = locked_npx
    argv = ["npx", "-y", "notes-mcp@1.3.0"]
    client = project.start_proxy("--name", "notes", "--lock", "toolpin.lock", "--", *argv)
    assert "result" in client.initialize()
    assert client.close() == 0
    assert runners.specs() == ["notes-mcp@1.3.0"]


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("notes-mcp@1.4.0", b"runs notes-mcp 1.4.0, but the lock approved 1.3.0"),
        ("other-mcp", b"no longer runs notes-mcp, the package the lock approved"),
    ],
)
def test_another_version_or_package_is_refused(
    locked_npx: tuple[Project, FakeRunners], spec: str, why: bytes
) -> None:
    project, runners = locked_npx
    client = project.start_proxy(
        "--name", "notes", "--lock", "toolpin.lock", "--", "npx", "-y", spec
    )
    answer = client.initialize()
    assert answer["error"]["code"] == UNVERIFIED
    assert "does not run the package version the lock approved" in answer["error"]["message"]
    assert client.close() == 2
    assert why in client.stderr
    assert runners.runs() == []  # the server was not started


def test_the_lock_holds_the_fullest_view_and_a_client_may_be_offered_less(
    project: Project, servers: Servers
) -> None:
    extra = [{"name": "list_roots", "inputSchema": {"type": "object"}}]
    argv = servers.command("notes", tools_if_roots=extra)
    project.write_config({"notes": entry(argv)})
    caps = {"roots": {"listChanged": True}}

    # By default the lock lists each server with every client capability.
    assert project.toolpin("lock").code == 0
    client = project.start_proxy("--lock", "toolpin.lock", "--", *argv)
    assert "result" in client.initialize(capabilities=caps)
    assert tools_of(client) == ["count", "list_roots", "search"]
    assert client.close() == 0

    # A client that declares less is offered less: a subset of what was approved passes.
    client = project.start_proxy("--lock", "toolpin.lock", "--", *argv)
    assert "result" in client.initialize()
    assert tools_of(client) == ["count", "search"]
    assert client.close() == 0
    assert b"not offered to this client" in client.stderr

    # A lock listed without capabilities never approved the extra tool: it blocks.
    assert project.toolpin("lock", "--client-capabilities", "none").code == 0
    client = project.start_proxy("--lock", "toolpin.lock", "--", *argv)
    assert client.initialize(capabilities=caps)["error"]["code"] == DRIFT
    assert client.close() == 1
    assert b"list_roots" in client.stderr
