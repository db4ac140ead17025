"""Config locations on Linux, macOS and Windows, computed from the environment given."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath

from toolpin.clients.locations import (
    CLIENT_NAMES,
    explicit_config,
    known_configs,
    project_configs,
)


def paths(system: str, env: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for loc in known_configs(system, env):  # type: ignore[arg-type]
        out.setdefault(loc.client, []).append(str(loc.path))
    return out


def test_every_client_is_known_on_every_system() -> None:
    for system, env in (
        ("linux", {"HOME": "/home/me"}),
        ("darwin", {"HOME": "/Users/me"}),
        ("windows", {"USERPROFILE": "C:\\Users\\me", "APPDATA": "C:\\Users\\me\\AppData\\Roaming"}),
    ):
        found = paths(system, env)
        assert set(CLIENT_NAMES) <= set(found), system


def test_linux_paths() -> None:
    got = paths("linux", {"HOME": "/home/me"})
    assert got["Claude Desktop"] == ["/home/me/.config/Claude/claude_desktop_config.json"]
    assert got["Claude Code"] == ["/home/me/.claude.json"]
    assert got["Cursor"] == ["/home/me/.cursor/mcp.json"]
    assert got["VS Code"] == ["/home/me/.config/Code/User/mcp.json"]
    assert got["Gemini CLI"] == ["/home/me/.gemini/settings.json"]
    assert got["Windsurf"] == ["/home/me/.codeium/windsurf/mcp_config.json"]
    assert got["Cline"] == [
        "/home/me/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        "/home/me/.cline/data/settings/cline_mcp_settings.json",
    ]
    assert got["Codex"] == ["/home/me/.codex/config.toml"]
    assert got["Devin Desktop"] == ["/home/me/.config/devin/mcp_config.json"]
    assert got["opencode"] == [
        "/home/me/.config/opencode/opencode.json",
        "/home/me/.config/opencode/opencode.jsonc",
    ]
    assert got["Zed"] == ["/home/me/.config/zed/settings.json"]
    assert got["Kiro"] == ["/home/me/.kiro/settings/mcp.json"]
    assert got["LM Studio"] == ["/home/me/.lmstudio/mcp.json"]
    assert got["GitHub Copilot CLI"] == ["/home/me/.copilot/mcp-config.json"]


def test_environment_overrides() -> None:
    got = paths(
        "linux",
        {
            "HOME": "/home/me",
            "XDG_CONFIG_HOME": "/xdg",
            "CODEX_HOME": "/codex",
            "CLAUDE_CONFIG_DIR": "/claude",
        },
    )
    assert got["Claude Desktop"] == ["/xdg/Claude/claude_desktop_config.json"]
    assert got["VS Code"] == ["/xdg/Code/User/mcp.json"]
    assert got["Zed"] == ["/xdg/zed/settings.json"]
    assert got["opencode"][0] == "/xdg/opencode/opencode.json"
    assert got["Codex"] == ["/codex/config.toml"]
    assert got["Claude Code"] == ["/claude/.claude.json"]


def test_macos_paths() -> None:
    got = paths("darwin", {"HOME": "/Users/me", "XDG_CONFIG_HOME": "/ignored-for-app-support"})
    support = "/Users/me/Library/Application Support"
    assert got["Claude Desktop"] == [f"{support}/Claude/claude_desktop_config.json"]
    assert got["VS Code"] == [f"{support}/Code/User/mcp.json"]
    assert got["Cline"][0].startswith(f"{support}/Code/User/globalStorage/")
    # Zed and opencode follow XDG on macOS too
    assert got["Zed"] == ["/ignored-for-app-support/zed/settings.json"]


def test_windows_paths() -> None:
    got = paths(
        "windows",
        {"USERPROFILE": "C:\\Users\\me", "APPDATA": "D:\\Roaming", "CODEX_HOME": "E:\\codex"},
    )
    assert got["Claude Desktop"] == ["D:\\Roaming\\Claude\\claude_desktop_config.json"]
    assert got["Claude Code"] == ["C:\\Users\\me\\.claude.json"]
    assert got["VS Code"] == ["D:\\Roaming\\Code\\User\\mcp.json"]
    assert got["Devin Desktop"] == ["D:\\Roaming\\devin\\mcp_config.json"]
    assert got["Zed"] == ["D:\\Roaming\\Zed\\settings.json"]
    assert got["Codex"] == ["E:\\codex\\config.toml"]
    assert got["Cursor"] == ["C:\\Users\\me\\.cursor\\mcp.json"]
    no_appdata = paths("windows", {"USERPROFILE": "C:\\Users\\me"})
    assert no_appdata["Claude Desktop"] == [
        "C:\\Users\\me\\AppData\\Roaming\\Claude\\claude_desktop_config.json"
    ]


def test_project_files_only_when_asked() -> None:
    env = {"HOME": "/home/me"}
    assert not any(loc.project for loc in known_configs("linux", env))
    with_project = known_configs("linux", env, project_dir=PurePosixPath("/src/app"))
    project = [str(loc.path) for loc in with_project if loc.project]
    assert project == [
        "/src/app/.mcp.json",
        "/src/app/.vscode/mcp.json",
        "/src/app/.cursor/mcp.json",
    ]
    win = project_configs(PureWindowsPath("C:\\src\\app"))
    assert str(win[1].path) == "C:\\src\\app\\.vscode\\mcp.json"


def test_explicit_config_dialect() -> None:
    assert explicit_config(PurePosixPath("/x/config.toml")).dialect == "codex"
    assert explicit_config(PurePosixPath("/x/anything.json")).dialect == "auto"
