"""Decode each client's entry back into the command line it runs (for round-trip tests).

Written from the clients' formats, independently of the generator: JSON, base64, URL
query strings, TOML (``tomllib``) and POSIX shell words (``shlex``).
"""

from __future__ import annotations

import base64
import json
import shlex
import tomllib
from urllib.parse import parse_qsl, unquote, urlsplit


def _query(url: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(url).query, keep_blank_values=True, strict_parsing=True)


def _b64_config(url: str, prefix: str) -> tuple[str, list[str]]:
    assert url.startswith(prefix), url
    params = dict(_query(url))
    config = json.loads(base64.b64decode(params["config"], validate=True).decode("utf-8"))
    return params["name"], [config["command"], *config["args"]]


def decode(client: str, text: str, name: str) -> list[str]:
    """The argv ``text`` (the entry for ``client``) makes the client run."""
    if client == "claude-code":
        words = shlex.split(text)
        assert words[:6] == ["claude", "mcp", "add", "--transport", "stdio", name], words
        assert words[6] == "--"
        return words[7:]
    if client in ("claude-desktop", "gemini", "windsurf"):
        doc = json.loads(text)
        (key,) = doc["mcpServers"]
        assert key == name
        entry = doc["mcpServers"][key]
        return [entry["command"], *entry["args"]]
    if client in ("cursor", "cursor-web", "lmstudio", "lmstudio-web"):
        prefix = {
            "cursor": "cursor://anysphere.cursor-deeplink/mcp/install?",
            "cursor-web": "https://cursor.com/en-US/install-mcp?",
            "lmstudio": "lmstudio://add_mcp?",
            "lmstudio-web": "https://lmstudio.ai/install-mcp?",
        }[client]
        got_name, argv = _b64_config(text, prefix)
        assert got_name == name
        return argv
    if client in ("vscode", "vscode-insiders"):
        scheme = "vscode:mcp/install?" if client == "vscode" else "vscode-insiders:mcp/install?"
        assert text.startswith(scheme)
        obj = json.loads(unquote(text[len(scheme) :], errors="strict"))
        assert obj["name"] == name and obj["type"] == "stdio"
        return [obj["command"], *obj["args"]]
    if client == "vscode-cli":
        words = shlex.split(text)
        assert words[:2] == ["code", "--add-mcp"] and len(words) == 3
        obj = json.loads(words[2])
        assert obj["name"] == name
        return [obj["command"], *obj["args"]]
    if client == "codex":
        doc = tomllib.loads(text)
        (key,) = doc["mcp_servers"]
        assert key == name
        entry = doc["mcp_servers"][key]
        return [entry["command"], *entry["args"]]
    if client == "goose":
        assert text.startswith("goose://extension?")
        pairs = _query(text)
        params = dict(pairs)
        assert params["id"] == name and params["name"] == name
        return [params["cmd"], *(v for k, v in pairs if k == "arg")]
    raise AssertionError(f"no decoder for {client}")
