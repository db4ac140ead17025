#!/usr/bin/env python3
"""SessionStart hook: one line of context naming the local MCP servers that run without
the toolpin proxy.

Standard library only, no network, no writes: it reads Claude Code's config files and
prints at most one JSON object (``hookSpecificOutput.additionalContext``). Every scope
Claude Code reads servers from:

* user and local scope: ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json`` when set),
  its top-level ``mcpServers`` and ``projects[<project dir>].mcpServers``;
* project scope: ``<project dir>/.mcp.json`` (minus servers the user disabled for it);
* managed scope: ``managed-mcp.json`` in the system location of each OS;
* plugins: ``<config dir>/plugins/cache/**/.mcp.json`` (bounded depth).

A server is protected when its argv *is* a proxy (``toolpin run ...``, ``uvx toolpin@V
run ...``, ``python -m toolpin run ...``, or mcp-pin's forms), decided by parsing the argv
the way ``toolpin wrap`` does, never by a substring. toolpin's own servers (``toolpin
lookup``) are not counted. Remote (URL) servers cannot be behind a stdio proxy and are
counted separately. Any unreadable file is skipped: the hook never fails a session.

The same line then names the skills that changed since ``toolpin skills pin`` recorded
them (``changed_skills.py`` beside this script; no skill text).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_NAMES = 8
MAX_PLUGIN_FILES = 64
_SAFE = re.compile(r"[^A-Za-z0-9_.@/-]+")
_TOOLPIN_SPEC = re.compile(r"toolpin(@[^\s]+|==[^\s]+)?")
_MCP_PIN_SPEC = re.compile(r"mcp-pin(@.*)?")
_RUNNER_SUFFIXES = (".cmd", ".exe", ".bat", ".ps1")


def runner_name(command: str) -> str:
    """The basename of ``command`` without a Windows launcher suffix, lower-cased."""
    lowered = re.split(r"[\\/]", command)[-1].lower()
    for suffix in _RUNNER_SUFFIXES:
        if lowered.endswith(suffix):
            return lowered[: -len(suffix)]
    return lowered


def run_index(argv: list[str]) -> int | None:
    """Where the proxy's ``run`` sits in ``argv``, or None when argv runs a server directly.

    The same rules as ``toolpin.clients.wrap.recognise_wrap`` (a test keeps them equal):
    toolpin's forms first, then mcp-pin's.
    """
    if not argv:
        return None
    runner = runner_name(argv[0])
    if runner == "toolpin" and len(argv) > 1 and argv[1] == "run":
        return 1
    if runner.startswith("python") or runner == "py":
        for i in range(1, min(len(argv) - 2, 4)):
            if argv[i] == "-m" and argv[i + 1] == "toolpin" and argv[i + 2] == "run":
                return i + 2
    elif runner in ("uvx", "uv", "pipx"):
        for i in range(1, min(len(argv) - 1, 8)):
            if _TOOLPIN_SPEC.fullmatch(argv[i]) and argv[i + 1] == "run":
                return i + 1
    if runner == "mcp-pin":
        return 0
    first_dd = argv.index("--") if "--" in argv else len(argv)
    return next((i for i in range(1, first_dd) if _MCP_PIN_SPEC.fullmatch(argv[i])), None)


def is_wrapped(argv: list[str]) -> bool:
    """True when ``argv`` runs a server behind a pinning proxy (toolpin's or mcp-pin's)."""
    return run_index(argv) is not None


def is_toolpin_itself(argv: list[str]) -> bool:
    """toolpin's own commands (``toolpin lookup``): not a server to wrap."""
    if not argv:
        return False
    runner = runner_name(argv[0])
    if runner == "toolpin":
        return True
    if runner.startswith("python") or runner == "py":
        window = range(1, min(len(argv) - 1, 4))
        return any(argv[i] == "-m" and argv[i + 1] == "toolpin" for i in window)
    if runner in ("uvx", "uv", "pipx"):
        return any(_TOOLPIN_SPEC.fullmatch(a) for a in argv[1:8])
    return False


def read_json(path: Path) -> Any:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def servers_of(doc: Any, *, flat: bool = False) -> dict[str, Any]:
    """The ``mcpServers`` table of a document (plugin files may be a flat table)."""
    if not isinstance(doc, dict):
        return {}
    table = doc.get("mcpServers")
    if isinstance(table, dict):
        return table
    if flat and all(isinstance(v, dict) for v in doc.values()):
        return doc
    return {}


def managed_file() -> Path:
    if sys.platform == "darwin":
        return Path("/Library/Application Support/ClaudeCode/managed-mcp.json")
    if sys.platform == "win32":
        env = os.environ  # case-insensitive on Windows
        base = env.get("PROGRAMW6432") or env.get("PROGRAMFILES") or "C:\\Program Files"
        return Path(base) / "ClaudeCode" / "managed-mcp.json"
    return Path("/etc/claude-code/managed-mcp.json")


def project_dir(hook_input: dict[str, Any]) -> Path:
    for value in (os.environ.get("CLAUDE_PROJECT_DIR"), hook_input.get("cwd")):
        if isinstance(value, str) and value:
            return Path(value)
    return Path.cwd()


def local_scope(user_doc: Any, project: Path) -> tuple[dict[str, Any], set[str]]:
    """``projects[<dir>]``: its servers and the project servers the user disabled."""
    projects = user_doc.get("projects") if isinstance(user_doc, dict) else None
    if not isinstance(projects, dict):
        return {}, set()
    for candidate in (project, *project.parents):
        entry = projects.get(str(candidate))
        if isinstance(entry, dict):
            disabled = entry.get("disabledMcpjsonServers")
            names = disabled if isinstance(disabled, list) else []
            off = {x for x in names if isinstance(x, str)}
            return servers_of(entry), off
    return {}, set()


def plugin_files(config_dir: Path) -> list[Path]:
    cache = config_dir / "plugins" / "cache"
    found: list[Path] = []
    for pattern in ("*/*/.mcp.json", "*/*/*/.mcp.json"):
        for path in sorted(cache.glob(pattern)):
            found.append(path)
            if len(found) >= MAX_PLUGIN_FILES:
                return found
    return found


def collect(hook_input: dict[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    """``{scope: [(name, entry)]}`` over every Claude Code config scope."""
    home = Path(os.environ.get("HOME") or os.environ.get("USERPROFILE") or Path.home())
    custom = os.environ.get("CLAUDE_CONFIG_DIR")
    config_dir = Path(custom) if custom else home / ".claude"
    user_file = (Path(custom) if custom else home) / ".claude.json"
    project = project_dir(hook_input)
    user_doc = read_json(user_file)
    local, disabled = local_scope(user_doc, project)
    project_servers = servers_of(read_json(project / ".mcp.json"))
    scopes: dict[str, list[tuple[str, Any]]] = {
        "user": list(servers_of(user_doc).items()),
        "local": list(local.items()),
        "project": [(n, e) for n, e in project_servers.items() if n not in disabled],
        "managed": list(servers_of(read_json(managed_file())).items()),
        "plugin": [],
    }
    for path in plugin_files(config_dir):
        scopes["plugin"] += list(servers_of(read_json(path), flat=True).items())
    return scopes


def argv_of(entry: dict[str, Any]) -> list[str] | None:
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        return None
    args = entry.get("args")
    rest = [a for a in args if isinstance(a, str)] if isinstance(args, list) else []
    return [command, *rest]


def classify(scopes: dict[str, list[tuple[str, Any]]]) -> tuple[list[str], int]:
    """The names of unprotected local servers (in scope order, unique) and the remote count."""
    unprotected: list[str] = []
    remote = 0
    for entries in scopes.values():
        for name, entry in entries:
            if not isinstance(entry, dict) or entry.get("disabled") is True:
                continue
            kind = entry.get("type")
            if isinstance(entry.get("url"), str) or kind in ("http", "sse", "streamable-http"):
                remote += 1
                continue
            argv = argv_of(entry)
            if argv is None or is_wrapped(argv) or is_toolpin_itself(argv):
                continue
            safe = _SAFE.sub("_", str(name))[:40] or "_"
            if safe not in unprotected:
                unprotected.append(safe)
    return unprotected, remote


def message(unprotected: list[str], remote: int) -> str | None:
    if not unprotected:
        return None
    shown = ", ".join(unprotected[:MAX_NAMES])
    more = f", and {len(unprotected) - MAX_NAMES} more" if len(unprotected) > MAX_NAMES else ""
    count = len(unprotected)  # this hook runs alone: no toolpin import, so no render.counted
    servers = "local MCP server runs" if count == 1 else "local MCP servers run"
    line = (
        f"toolpin: {count} {servers} here without toolpin "
        f"({shown}{more}). "
        "Their tool definitions can change after approval without anyone noticing. "
        "If the user wants that covered, they can run: toolpin wrap"
    )
    if remote:
        servers, them = ("remote server", "it") if remote == 1 else ("remote servers", "them")
        line += f" ({remote} {servers}: toolpin wrap --remote covers {them})"
    return line + "."


def skills_note(hook_input: dict[str, Any]) -> str | None:
    """The changed-skills sentence (``changed_skills.py``), or None; never an error."""
    import importlib.util

    beside = Path(__file__).resolve().with_name("changed_skills.py")
    spec = importlib.util.spec_from_file_location("changed_skills", beside)
    if spec is None or spec.loader is None:
        return None
    changed_skills = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(changed_skills)
    except (OSError, ImportError, SyntaxError):
        return None
    home = Path(os.environ.get("HOME") or os.environ.get("USERPROFILE") or Path.home())
    custom = os.environ.get("CLAUDE_CONFIG_DIR")
    config_dir = Path(custom) if custom else home / ".claude"
    try:
        return changed_skills.note(project_dir(hook_input), config_dir)
    except (OSError, ValueError, RecursionError):
        return None


def main() -> int:
    try:
        raw = sys.stdin.read(1 << 20) if not sys.stdin.isatty() else ""
        hook_input = json.loads(raw) if raw.strip() else {}
    except (OSError, ValueError):
        hook_input = {}
    if not isinstance(hook_input, dict):
        hook_input = {}
    line = message(*classify(collect(hook_input)))
    skills = skills_note(hook_input)
    if skills is not None:
        line = skills if line is None else f"{line} {skills}"
    if line is not None:
        context = {"hookEventName": "SessionStart", "additionalContext": line}
        output = {"hookSpecificOutput": context}
        sys.stdout.write(json.dumps(output) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
