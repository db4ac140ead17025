"""Install entries that put ``toolpin run`` in front of one MCP server, for every client.

:func:`install_links` turns a server's argv into the entry each client takes, every one of
them starting ``<launcher> run --name N -- <argv>``:

================= ===========================================================================
``claude-code``   ``claude mcp add --transport stdio N -- <launcher> run ...`` (POSIX shell)
``claude-desktop`` ``claude_desktop_config.json``: ``{"mcpServers": {N: {command, args}}}``
``cursor``        ``cursor://anysphere.cursor-deeplink/mcp/install?name=N&config=<base64 JSON>``
``cursor-web``    ``https://cursor.com/en-US/install-mcp?name=N&config=<base64 JSON>``
``vscode``        ``vscode:mcp/install?<URL-encoded JSON {name, type, command, args}>``
``vscode-insiders`` the same with ``vscode-insiders:``
``vscode-cli``    ``code --add-mcp '<JSON>'``
``codex``         ``~/.codex/config.toml``: ``[mcp_servers."N"]`` (tomlkit quotes keys as needed)
``gemini``        ``~/.gemini/settings.json``: ``{"mcpServers": {N: {command, args}}}``
``windsurf``      ``~/.codeium/windsurf/mcp_config.json``: ``{"mcpServers": {...}}``
``lmstudio``      ``lmstudio://add_mcp?name=N&config=<base64 JSON>``
``lmstudio-web``  ``https://lmstudio.ai/install-mcp?name=N&config=<base64 JSON>``
``goose``         ``goose://extension?cmd=<launcher>&arg=...&id=N&name=N&description=...``
================= ===========================================================================

Formats: Cursor ``cursor.com/docs/mcp/install-links``; VS Code
``code.visualstudio.com/docs/copilot/guides/mcp-developer-guide``; LM Studio
``lmstudio.ai/docs/app/mcp/deeplink``; Goose ``block.github.io/goose`` (extension deeplinks);
Codex ``[mcp_servers.<name>]`` with ``env_vars``; Gemini CLI ``mcpServers`` with ``$VAR``
expansion (research ``anchors.md`` Appendix A and ``presentation.md`` §2).

Secrets never appear in an entry: ``env`` takes variable *names* only, and each client gets
its own mechanism (VS Code ``inputs`` with ``password: true`` and ``${input:NAME}``; Cursor
and Windsurf ``${env:NAME}``; Gemini ``${NAME}``; Codex ``env_vars``; Goose's ``env=`` prompt).
A client without one (Claude Desktop, LM Studio) gets a note instead of a value, and Claude
Code passes its own environment on to the server.

Fail closed on input: a name is ``[A-Za-z0-9][A-Za-z0-9_.-]{0,63}``; an argv element with a
control, bidi, zero-width or tag character (:func:`toolpin.core.render.visible` would
change it), a newline, a NUL, or a ``$`` (which most clients expand as a variable) is
refused, so every output decodes back to exactly the argv given. The browser generator
(``site/static/install.js``) implements the same rules and must give the same bytes; a
test runs it under node against this module.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

from toolpin.core.render import visible
from toolpin.errors import InputError

NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
ENV_PATTERN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
SERVER_ID_PATTERN: Final = re.compile(r"[0-9a-f]{16}")
MAX_ARGS: Final = 256
MAX_ARG_CHARS: Final = 4096

CLIENTS: Final = (
    "claude-code",
    "claude-desktop",
    "cursor",
    "cursor-web",
    "vscode",
    "vscode-insiders",
    "vscode-cli",
    "codex",
    "gemini",
    "windsurf",
    "lmstudio",
    "lmstudio-web",
    "goose",
)
"""Every output, in the order they are printed."""

CLIENT_TITLES: Final = {
    "claude-code": "Claude Code",
    "claude-desktop": "Claude Desktop",
    "cursor": "Cursor (deeplink)",
    "cursor-web": "Cursor (web link)",
    "vscode": "VS Code (deeplink)",
    "vscode-insiders": "VS Code Insiders (deeplink)",
    "vscode-cli": "VS Code (command line)",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "windsurf": "Windsurf",
    "lmstudio": "LM Studio (deeplink)",
    "lmstudio-web": "LM Studio (web link)",
    "goose": "Goose (deeplink)",
}

LINK_CLIENTS: Final = frozenset(
    {"cursor", "cursor-web", "vscode", "vscode-insiders", "lmstudio", "lmstudio-web", "goose"}
)
"""Outputs that are links (the page shows them as buttons)."""

__all__ = [
    "CLIENTS",
    "CLIENT_TITLES",
    "LINK_CLIENTS",
    "InstallLinks",
    "InstallRequest",
    "default_name",
    "install_links",
    "readme_link",
]


ABSOLUTE_COMMAND: Final = re.compile(r"/|[A-Za-z]:[\\/]|\\\\")
"""A launcher that is an absolute path (POSIX, ``C:\\``, ``\\\\server``); the same test as
install.js, so both say the same about a bare command."""


@dataclass(frozen=True)
class InstallRequest:
    """What to install: the server's argv, its name, the variables it needs, the launcher."""

    argv: tuple[str, ...]
    name: str
    env: tuple[str, ...] = ()
    launcher: tuple[str, ...] = ("toolpin",)

    def proxied(self) -> list[str]:
        """``<launcher> run --name N -- <argv>``: the command line every entry runs."""
        return [*self.launcher, "run", "--name", self.name, "--", *self.argv]


@dataclass(frozen=True)
class InstallLinks:
    """Each client's entry (``outputs``, keyed as :data:`CLIENTS`) and notes about secrets."""

    request: InstallRequest
    outputs: dict[str, str]
    notes: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.request.name,
            "argv": list(self.request.argv),
            "env": list(self.request.env),
            "command": self.request.proxied(),
            "outputs": dict(self.outputs),
            "notes": dict(self.notes),
        }


def _check_arg(value: str, what: str) -> None:
    if not value and what == "the command":
        raise InputError("the server command is empty")
    if len(value) > MAX_ARG_CHARS:
        raise InputError(f"{what} is longer than {MAX_ARG_CHARS} characters")
    if "$" in value:
        raise InputError(
            f"{what} contains '$', which most clients expand as a variable",
            advice="Pass secrets and paths that vary as environment variables: --env NAME.",
        )
    if visible(value) != value:
        raise InputError(
            f"{what} contains a control, newline, invisible or direction-changing character "
            f"({visible(value)[:80]})"
        )


def _validate(request: InstallRequest) -> None:
    if not NAME_PATTERN.fullmatch(request.name):
        raise InputError(
            f"the server name {visible(request.name)[:80]!r} is not allowed",
            advice="A name is 1-64 of A-Z a-z 0-9 _ . - and starts with a letter or digit.",
        )
    if not request.argv:
        raise InputError("no server command given (put it after --)")
    if len(request.argv) > MAX_ARGS:
        raise InputError(f"the server command has more than {MAX_ARGS} arguments")
    for position, arg in enumerate(request.argv):
        _check_arg(arg, "the command" if position == 0 else f"argument {position}")
    if not request.launcher or not request.launcher[0]:
        raise InputError("the launcher is empty")
    for arg in request.launcher:
        _check_arg(arg, "the launcher")
    seen: set[str] = set()
    for var in request.env:
        if "=" in var:
            raise InputError(
                "--env takes a variable name only, never a value",
                advice="Secret values stay in your environment or the client's prompt.",
            )
        if not ENV_PATTERN.fullmatch(var):
            raise InputError(f"{visible(var)[:80]!r} is not an environment variable name")
        if var in seen:
            raise InputError(f"--env {var} is given twice")
        seen.add(var)


_NAME_JUNK: Final = re.compile(r"[^A-Za-z0-9_.-]+")


_RUNNERS: Final = frozenset(
    {"npx", "bunx", "uvx", "pipx", "pnpm", "yarn", "node", "python", "python3", "deno", "uv"}
)
_SUBCOMMANDS: Final = frozenset({"run", "dlx", "exec", "x", "tool"})


def default_name(argv: Sequence[str]) -> str:
    """A server name from its argv: for a runner (``npx``, ``uvx``, ``node``, ...) its first
    argument that is not an option or a subcommand, else the command; the last path
    segment, without a version (``@1.2``, ``==1.2``) or script suffix, reduced to the name
    alphabet; ``server`` when nothing is left.
    """
    if not argv:
        return "server"
    token = argv[0]
    runner = token.replace("\\", "/").rsplit("/", 1)[-1]
    if runner in _RUNNERS:
        rest = [a for a in argv[1:] if a and not a.startswith("-") and a not in _SUBCOMMANDS]
        if rest:
            token = rest[0]
    token = token.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if "==" in token:
        token = token.split("==", 1)[0]
    if "@" in token[1:]:
        token = token[0] + token[1:].split("@", 1)[0]
    token = token.lstrip("@")
    for suffix in (".js", ".mjs", ".cjs", ".py", ".exe"):
        if token.endswith(suffix) and len(token) > len(suffix):
            token = token[: -len(suffix)]
            break
    token = _NAME_JUNK.sub("-", token)
    token = re.sub(r"^[^A-Za-z0-9]+", "", token)[:64]
    return token if NAME_PATTERN.fullmatch(token) else "server"


# ---- encoders (each mirrored in site/static/install.js) -------------------------------


def _compact(value: Any) -> str:
    """``JSON.stringify(value)``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _pretty(value: Any) -> str:
    """``JSON.stringify(value, null, 2)``."""
    return json.dumps(value, ensure_ascii=False, indent=2)


def _uri(text: str) -> str:
    """``encodeURIComponent(text)``."""
    return quote(text, safe="-_.!~*'()")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _server(request: InstallRequest, env: dict[str, str] | None) -> dict[str, Any]:
    command, *args = request.proxied()
    entry: dict[str, Any] = {"command": command, "args": args}
    if env:
        entry["env"] = env
    return entry


def _codex(request: InstallRequest) -> str:
    import tomlkit

    command, *args = request.proxied()
    table = tomlkit.table()
    table.add("command", command)
    table.add("args", args)
    if request.env:
        table.add("env_vars", list(request.env))
    servers = tomlkit.table(is_super_table=True)
    servers.add(request.name, table)
    doc = tomlkit.document()
    doc.add("mcp_servers", servers)
    return tomlkit.dumps(doc)


def install_links(request: InstallRequest) -> InstallLinks:
    """Every client's entry for ``request``; raises :class:`InputError` on refused input."""
    _validate(request)
    name, env = request.name, request.env
    out: dict[str, str] = {}
    notes: dict[str, str] = {}

    claude = ["claude", "mcp", "add", "--transport", "stdio", name, "--", *request.proxied()]
    out["claude-code"] = shlex.join(claude)

    out["claude-desktop"] = _pretty({"mcpServers": {name: _server(request, None)}})

    cursor = _b64(_compact(_server(request, {v: "${env:" + v + "}" for v in env})))
    query = f"name={_uri(name)}&config={_uri(cursor)}"
    out["cursor"] = f"cursor://anysphere.cursor-deeplink/mcp/install?{query}"
    out["cursor-web"] = f"https://cursor.com/en-US/install-mcp?{query}"

    command, *args = request.proxied()
    vscode: dict[str, Any] = {"name": name, "type": "stdio", "command": command, "args": args}
    if env:
        vscode["env"] = {v: "${input:" + v + "}" for v in env}
        vscode["inputs"] = [
            {"type": "promptString", "id": v, "description": v, "password": True} for v in env
        ]
    vscode_json = _compact(vscode)
    out["vscode"] = f"vscode:mcp/install?{_uri(vscode_json)}"
    out["vscode-insiders"] = f"vscode-insiders:mcp/install?{_uri(vscode_json)}"
    out["vscode-cli"] = shlex.join(["code", "--add-mcp", vscode_json])

    out["codex"] = _codex(request)

    gemini_env = {v: "${" + v + "}" for v in env}
    out["gemini"] = _pretty({"mcpServers": {name: _server(request, gemini_env)}})

    windsurf_env = {v: "${env:" + v + "}" for v in env}
    out["windsurf"] = _pretty({"mcpServers": {name: _server(request, windsurf_env)}})

    lmstudio = f"name={_uri(name)}&config={_uri(_b64(_compact(_server(request, None))))}"
    out["lmstudio"] = f"lmstudio://add_mcp?{lmstudio}"
    out["lmstudio-web"] = f"https://lmstudio.ai/install-mcp?{lmstudio}"

    goose = [f"cmd={_uri(command)}", *(f"arg={_uri(a)}" for a in args)]
    goose += [f"id={_uri(name)}", f"name={_uri(name)}"]
    goose.append(f"description={_uri(name + ' behind toolpin run')}")
    goose += [f"env={_uri(v + '=' + v)}" for v in env]
    out["goose"] = "goose://extension?" + "&".join(goose)

    if env:
        names = ", ".join(env)
        notes["claude-code"] = f"Claude Code passes its own environment on: export {names} first."
        notes["claude-desktop"] = (
            f"Claude Desktop has no variable mechanism: add {names} to this entry's env "
            "yourself; no secret value is ever put in a generated entry."
        )
        notes["lmstudio"] = (
            f"LM Studio has no variable mechanism: add {names} under env in mcp.json yourself."
        )
        notes["lmstudio-web"] = notes["lmstudio"]
    if not ABSOLUTE_COMMAND.match(request.launcher[0]):
        bare = (
            f"Claude Desktop does not read your shell's PATH, so a bare "
            f"{request.launcher[0]} may not start: give its absolute path "
            f"(`command -v {request.launcher[0]}` prints it)."
        )
        notes["claude-desktop"] = f"{notes['claude-desktop']} {bare}" if env else bare
    return InstallLinks(request, out, notes)


def readme_link(base_url: str, server_id: str) -> str:
    """A Markdown install link for a server's README: names the server by its log id only.

    It points at the server's page on the site, which shows the ``toolpin run`` line built
    from the verified log; no command ever travels in the URL (the install page ignores
    any ``cmd=`` and only links ``#server=<id>`` to that page).
    """
    if not SERVER_ID_PATTERN.fullmatch(server_id):
        raise InputError("a server id is 16 lower-case hex characters (see `toolpin log`)")
    if not re.fullmatch(r"https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?", base_url):
        raise InputError("--base-url must be a plain https:// URL")
    base = base_url.rstrip("/")
    return f"[Install with toolpin]({base}/servers/{server_id}.html)"
