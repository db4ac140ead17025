"""Where MCP clients keep their server lists, on Linux, macOS and Windows.

The operating system and the environment are parameters, so every platform's paths can
be computed (and tested) anywhere. Paths come back as :class:`PurePath` of the right
flavour; the caller turns them into real paths on the running system. Sources: research
``anchors.md`` Appendix A (agent-scan's client table, client docs) and mcp-pin's table.

Dialects say where the servers sit inside a file:

=============== =====================================================================
``mcpServers``  ``{"mcpServers": {name: {command, args, env} | {url}}}``
``vscode``      ``{"servers": {...}}`` (VS Code; ``mcpServers`` also read), JSONC
``claude-code`` ``mcpServers`` plus every ``projects.<dir>.mcpServers``
``opencode``    ``{"mcp": {name: {type: "local", command: [exe, ...args]} | {url}}}``
``zed``         ``{"context_servers": {name: {command, args, env} | {url}}}``
``codex``       TOML ``[mcp_servers.<name>]`` tables
``auto``        a file named with ``--config``: ``.toml`` is Codex, JSON is read by its keys
=============== =====================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Literal

System = Literal["linux", "darwin", "windows"]
Dialect = Literal["mcpServers", "vscode", "claude-code", "opencode", "zed", "codex", "auto"]

CLIENT_NAMES = (
    "Claude Desktop",
    "Claude Code",
    "Cursor",
    "VS Code",
    "Gemini CLI",
    "Windsurf",
    "Cline",
    "Codex",
    "Devin Desktop",
    "opencode",
    "Zed",
    "Kiro",
    "LM Studio",
    "GitHub Copilot CLI",
)


@dataclass(frozen=True)
class ConfigLocation:
    """One config file a client reads MCP servers from."""

    client: str
    path: PurePath
    dialect: Dialect
    project: bool = False
    """A project's shared file (touched only with ``--project``)."""


def current_system() -> System:
    import sys

    if sys.platform == "win32":
        return "windows"
    if sys.platform == "darwin":
        return "darwin"
    return "linux"


def _home(system: System, env: Mapping[str, str]) -> PurePath:
    if system == "windows":
        profile = env.get("USERPROFILE")
        if not profile and env.get("HOMEDRIVE") and env.get("HOMEPATH"):
            profile = env["HOMEDRIVE"] + env["HOMEPATH"]
        return PureWindowsPath(profile or env.get("HOME") or "C:\\Users\\Default")
    return PurePosixPath(env.get("HOME") or "/")


def _app_config(system: System, env: Mapping[str, str], home: PurePath) -> PurePath:
    """``%APPDATA%``, ``~/Library/Application Support`` or ``$XDG_CONFIG_HOME``/``~/.config``."""
    if system == "windows":
        appdata = env.get("APPDATA")
        return PureWindowsPath(appdata) if appdata else home / "AppData" / "Roaming"
    if system == "darwin":
        return home / "Library" / "Application Support"
    return _xdg_config(system, env, home)


def _xdg_config(system: System, env: Mapping[str, str], home: PurePath) -> PurePath:
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg:
        return PureWindowsPath(xdg) if system == "windows" else PurePosixPath(xdg)
    return home / ".config"


def user_configs(system: System, env: Mapping[str, str]) -> list[ConfigLocation]:
    """Every per-user config file of every known client (present or not), in a fixed order."""
    home = _home(system, env)
    cfg = _app_config(system, env, home)
    xdg = _xdg_config(system, env, home)
    flavour = PureWindowsPath if system == "windows" else PurePosixPath
    claude_dir = env.get("CLAUDE_CONFIG_DIR")
    codex_home = env.get("CODEX_HOME")
    out = [
        ConfigLocation(
            "Claude Desktop", cfg / "Claude" / "claude_desktop_config.json", "mcpServers"
        ),
        ConfigLocation(
            "Claude Code",
            (flavour(claude_dir) if claude_dir else home) / ".claude.json",
            "claude-code",
        ),
        ConfigLocation("Cursor", home / ".cursor" / "mcp.json", "mcpServers"),
        ConfigLocation("VS Code", cfg / "Code" / "User" / "mcp.json", "vscode"),
        ConfigLocation("VS Code Insiders", cfg / "Code - Insiders" / "User" / "mcp.json", "vscode"),
        ConfigLocation("Gemini CLI", home / ".gemini" / "settings.json", "mcpServers"),
        ConfigLocation(
            "Windsurf", home / ".codeium" / "windsurf" / "mcp_config.json", "mcpServers"
        ),
        ConfigLocation(
            "Cline",
            cfg
            / "Code"
            / "User"
            / "globalStorage"
            / "saoudrizwan.claude-dev"
            / "settings"
            / "cline_mcp_settings.json",
            "mcpServers",
        ),
        ConfigLocation(
            "Cline",
            home / ".cline" / "data" / "settings" / "cline_mcp_settings.json",
            "mcpServers",
        ),
        ConfigLocation(
            "Codex",
            (flavour(codex_home) if codex_home else home / ".codex") / "config.toml",
            "codex",
        ),
        ConfigLocation(
            "Devin Desktop",
            (cfg if system == "windows" else xdg) / "devin" / "mcp_config.json",
            "mcpServers",
        ),
        ConfigLocation("opencode", xdg / "opencode" / "opencode.json", "opencode"),
        ConfigLocation("opencode", xdg / "opencode" / "opencode.jsonc", "opencode"),
        ConfigLocation(
            "Zed",
            (cfg / "Zed" if system == "windows" else xdg / "zed") / "settings.json",
            "zed",
        ),
        ConfigLocation("Kiro", home / ".kiro" / "settings" / "mcp.json", "mcpServers"),
        ConfigLocation("LM Studio", home / ".lmstudio" / "mcp.json", "mcpServers"),
        ConfigLocation("GitHub Copilot CLI", home / ".copilot" / "mcp-config.json", "mcpServers"),
    ]
    return out


def project_configs(project_dir: PurePath) -> list[ConfigLocation]:
    """The shared files of the project in ``project_dir`` (teammates read them too)."""
    return [
        ConfigLocation("project (Claude Code)", project_dir / ".mcp.json", "mcpServers", True),
        ConfigLocation("project (VS Code)", project_dir / ".vscode" / "mcp.json", "vscode", True),
        ConfigLocation(
            "project (Cursor)", project_dir / ".cursor" / "mcp.json", "mcpServers", True
        ),
    ]


def known_configs(
    system: System,
    env: Mapping[str, str],
    *,
    project_dir: PurePath | None = None,
) -> list[ConfigLocation]:
    """User files of every client, plus the project's files when ``project_dir`` is given."""
    out = user_configs(system, env)
    if project_dir is not None:
        out += project_configs(project_dir)
    return out


def explicit_config(path: PurePath) -> ConfigLocation:
    """A file named with ``--config`` (dialect read from its name and keys)."""
    return ConfigLocation("--config", path, "codex" if path.suffix == ".toml" else "auto")
