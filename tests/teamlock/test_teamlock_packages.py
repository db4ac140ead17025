"""Package pinning in ``toolpin lock``: loopback fake registries and a fake ``npx`` / ``uvx``.

The fake runners record the package spec they were asked to run, so each test sees which
exact version the server was started at; the registries record every request.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from teamlock_support import (
    INTEGRITY_120,
    INTEGRITY_130,
    SDIST_SHA,
    WHEEL_SHA,
    FakeRunners,
    Project,
    Registries,
    Servers,
)


def lock_entry(project: Project, name: str) -> dict[str, Any]:
    doc = json.loads(project.lock_path.read_text(encoding="utf-8"))
    result: dict[str, Any] = doc["servers"][name]
    return result


@pytest.fixture
def notes(servers: Servers, fake_runners: FakeRunners) -> FakeRunners:
    """``npx``/``uvx`` run a raw server for notes-mcp, other-mcp and notes-server."""
    fake_runners.serve("notes-mcp", servers.spec("notes-mcp"))
    fake_runners.serve("other-mcp", servers.spec("other-mcp"))
    fake_runners.serve("notes-server", servers.spec("notes-server", discover="error"))
    return fake_runners


def test_unpinned_npx_is_resolved_and_probed_at_the_exact_version(
    project: Project, registry: Registries, notes: FakeRunners
) -> None:
    project.write_config({"notes": {"command": "npx", "args": ["-y", "notes-mcp"]}})

    result = project.toolpin("lock")

    assert result.code == 0, result.out + result.err
    assert "notes: locked (2 tools, notes-mcp 1.3.0)" in result.out
    assert "1 server runs the newest version of a package" in result.out
    assert notes.specs() == ["notes-mcp@1.3.0"]
    assert notes.runs()[0]["args"] == ["-y", "notes-mcp@1.3.0"]
    assert lock_entry(project, "notes")["package"] == {
        "ecosystem": "npm",
        "name": "notes-mcp",
        "requested": "",
        "version": "1.3.0",
        "integrity": INTEGRITY_130,
    }
    assert "/notes-mcp/latest" in registry.npm.requests


def test_pinned_npx_is_checked_at_the_registry(
    project: Project, registry: Registries, notes: FakeRunners
) -> None:
    project.write_config({"notes": {"command": "npx", "args": ["-y", "notes-mcp@1.2.0"]}})
    result = project.toolpin("lock")
    assert result.code == 0, result.out
    assert "notes-mcp 1.2.0" in result.out
    assert "newest version" not in result.out
    assert notes.specs() == ["notes-mcp@1.2.0"]
    package = lock_entry(project, "notes")["package"]
    assert (package["version"], package["integrity"], package["requested"]) == (
        "1.2.0",
        INTEGRITY_120,
        "1.2.0",
    )
    assert registry.npm.requests == ["/notes-mcp/1.2.0"]


def test_a_pinned_version_the_registry_does_not_know_fails(
    project: Project, registry: Registries, notes: FakeRunners
) -> None:
    project.write_config({"notes": {"command": "npx", "args": ["-y", "notes-mcp@9.9.9"]}})
    result = project.toolpin("lock")
    assert result.code == 1
    assert "notes: notes-mcp 9.9.9 is not found in the registry" in result.out
    assert notes.specs() == []
    assert not project.lock_path.exists()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("notes-mcp@^1.2.0", "a version range; pin an exact version"),
        ("notes-mcp@>=1.0.0", "a version range; pin an exact version"),
        ("github:evil/notes", "not a registry package"),
        ("notes-mcp@1.0.0 && calc", "not a registry package"),
    ],
)
def test_ranges_and_hostile_specs_are_refused(
    project: Project, registry: Registries, notes: FakeRunners, spec: str, message: str
) -> None:
    project.write_config({"notes": {"command": "npx", "args": ["-y", spec]}})
    result = project.toolpin("lock")
    assert result.code == 1
    assert message in result.out
    assert notes.specs() == []  # nothing was started
    assert registry.npm.requests == []


def test_pypi_package_through_uvx(
    project: Project, registry: Registries, notes: FakeRunners
) -> None:
    project.write_config({"notes": {"command": "uvx", "args": ["notes-server"]}})
    result = project.toolpin("lock")
    assert result.code == 0, result.out
    assert "notes-server 0.9.0" in result.out
    assert notes.specs() == ["notes-server@0.9.0"]
    assert lock_entry(project, "notes")["package"] == {
        "ecosystem": "pypi",
        "name": "notes-server",
        "requested": "",
        "version": "0.9.0",
        "files": [
            {"filename": "notes_server-0.9.0-py3-none-any.whl", "sha256": WHEEL_SHA},
            {"filename": "notes_server-0.9.0.tar.gz", "sha256": SDIST_SHA},
        ],
    }


@pytest.fixture
def locked_notes(project: Project, registry: Registries, notes: FakeRunners) -> Project:
    project.write_config(
        {
            "notes": {"command": "npx", "args": ["-y", "notes-mcp"]},
            "py": {"command": "uvx", "args": ["notes-server"]},
        }
    )
    result = project.toolpin("lock")
    assert result.code == 0, result.out + result.err
    notes.record.unlink()
    registry.npm.requests.clear()
    registry.pypi.requests.clear()
    return project


def test_check_holds_the_locked_version(
    locked_notes: Project, registry: Registries, notes: FakeRunners
) -> None:
    result = locked_notes.toolpin("lock", "--check")
    assert result.code == 0, result.out
    assert "notes: matches the lock (notes-mcp 1.3.0)" in result.out
    assert "py: matches the lock (notes-server 0.9.0)" in result.out
    assert sorted(notes.specs()) == ["notes-mcp@1.3.0", "notes-server@0.9.0"]


def test_check_only_notes_a_newer_release(
    locked_notes: Project, registry: Registries, notes: FakeRunners
) -> None:
    registry.serve_npm("notes-mcp", "1.4.0", "sha512-" + "Q" * 86 + "==", latest=True)
    result = locked_notes.toolpin("lock", "--check")
    assert result.code == 0, result.out
    assert (
        "note: notes-mcp 1.4.0 is out; this project keeps running 1.3.0 until the lock is "
        "updated (toolpin lock)" in result.out
    )
    assert "notes-mcp@1.3.0" in notes.specs()  # the locked version was probed, not 1.4.0
    # Updating the lock moves it to the newest release.
    assert locked_notes.toolpin("lock").code == 0
    assert lock_entry(locked_notes, "notes")["package"]["version"] == "1.4.0"


def test_check_fails_when_the_registry_serves_other_contents_for_the_locked_version(
    locked_notes: Project, registry: Registries, notes: FakeRunners
) -> None:
    registry.serve_npm("notes-mcp", "1.3.0", "sha512-" + "X" * 86 + "==", latest=True)
    result = locked_notes.toolpin("lock", "--check")
    assert result.code == 1
    assert (
        "notes: the registry now serves different contents for notes-mcp 1.3.0 than when it "
        "was locked" in result.out
    )
    assert "py: matches the lock" in result.out


def test_check_fails_when_pypi_file_hashes_change(
    locked_notes: Project, registry: Registries, notes: FakeRunners
) -> None:
    registry.serve_pypi(
        "notes-server",
        "0.9.0",
        {"notes_server-0.9.0-py3-none-any.whl": "6" * 64, "notes_server-0.9.0.tar.gz": SDIST_SHA},
    )
    result = locked_notes.toolpin("lock", "--check")
    assert result.code == 1
    assert "py: the registry now serves different contents for notes-server 0.9.0" in result.out


def test_check_fails_when_the_command_pins_another_version(
    locked_notes: Project, registry: Registries, notes: FakeRunners, servers: Servers
) -> None:
    # The command edited without re-locking: its id changes.
    config = json.loads(locked_notes.config.read_text())
    config["mcpServers"]["notes"]["args"] = ["-y", "notes-mcp@1.2.0"]
    locked_notes.config.write_text(json.dumps(config))
    result = locked_notes.toolpin("lock", "--check")
    assert result.code == 1
    assert "notes: its command in the config changed since it was locked" in result.out


def test_an_entry_without_a_package_record_fails_the_check(
    project: Project, registry: Registries, notes: FakeRunners
) -> None:
    project.write_config({"notes": {"command": "npx", "args": ["-y", "notes-mcp"]}})
    assert project.toolpin("lock", "--definitions-only").code == 0
    result = project.toolpin("lock", "--check")
    assert result.code == 1
    assert "notes: its package is not recorded in the lock yet; run toolpin lock" in result.out


def test_definitions_only_skips_every_package_step(
    project: Project, registry: Registries, notes: FakeRunners
) -> None:
    project.write_config({"notes": {"command": "npx", "args": ["-y", "notes-mcp"]}})
    result = project.toolpin("lock", "--definitions-only")
    assert result.code == 0, result.out
    assert "notes: locked (2 tools)" in result.out
    assert "package" not in lock_entry(project, "notes")
    assert notes.specs() == ["notes-mcp"]  # run as written
    assert project.toolpin("lock", "--check", "--definitions-only").code == 0
    assert registry.npm.requests == []


def test_an_unreachable_registry_fails_only_that_server(
    project: Project, registry: Registries, notes: FakeRunners, servers: Servers
) -> None:
    project.write_config(
        {
            "notes": {"command": "npx", "args": ["-y", "notes-mcp"]},
            "local": {"command": servers.command("local")[0], "args": servers.command("local")[1:]},
        }
    )
    registry.npm.close()
    result = project.toolpin("lock", "--timeout", "10")
    assert result.code == 1
    assert "notes: cannot reach the npm registry for notes-mcp" in result.out
    assert "local: locked (2 tools)" in result.out
    assert list(json.loads(project.lock_path.read_text())["servers"]) == ["local"]


def test_lock_asks_the_registries_the_project_configures(
    project: Project,
    registry: Registries,
    notes: FakeRunners,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A mirror set-up: the project's .npmrc and uv.toml name the registries (which serve
    # only npm documents and the simple index); no toolpin variable is set.
    monkeypatch.delenv("TOOLPIN_NPM_REGISTRY")
    monkeypatch.delenv("TOOLPIN_PYPI_URL")
    for name in ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "npm_config_registry", "UV_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    (project.root / ".npmrc").write_text(f"registry={registry.npm.url}/\n", encoding="utf-8")
    (project.root / "uv.toml").write_text(
        f'index-url = "{registry.pypi.url}/simple"\n', encoding="utf-8"
    )
    project.write_config(
        {
            "notes": {"command": "npx", "args": ["-y", "notes-mcp"]},
            "py": {"command": "uvx", "args": ["notes-server"]},
        }
    )
    result = project.toolpin("lock")
    assert result.code == 0, result.out
    assert lock_entry(project, "notes")["package"]["version"] == "1.3.0"
    assert lock_entry(project, "py")["package"]["files"][0]["sha256"] == WHEEL_SHA
    assert registry.pypi.requests == ["/simple/notes-server/"]
    assert "/notes-mcp/latest" in registry.npm.requests
