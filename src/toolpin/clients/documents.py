"""Read server entries from a client config and rewrite one entry's command in place.

Two kinds of file: JSON (with comments and trailing commas, edited through
:mod:`toolpin.clients.jsonc` so every other byte stays) and Codex TOML (edited with
``tomlkit``, which keeps comments and layout; only ``[mcp_servers.<name>]`` is touched).

Every edit is reversible byte for byte: wrapping *inserts* the launcher and the proxy's
arguments in front of the original ``args`` items and moves the original ``command``
token, as written, into the list; unwrapping deletes exactly what was inserted and moves
the token back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from toolpin.clients import jsonc
from toolpin.clients.locations import Dialect
from toolpin.core.render import visible
from toolpin.errors import ConfigError

if TYPE_CHECKING:
    import tomlkit.items

Shape = Literal["split", "array"]
EntryPath = tuple[str, ...]

REMOTE_KEYS = ("url", "serverUrl", "httpUrl")
REMOTE_TYPES = frozenset({"http", "sse", "streamable-http", "streamableHttp", "remote"})


@dataclass(frozen=True)
class Entry:
    """One server entry of a config file."""

    name: str
    path: EntryPath
    """Keys leading to the entry's object inside the file."""
    scope: str | None
    """``project <dir>`` for Claude Code's per-project servers, else ``None``."""
    kind: Literal["stdio", "remote", "unusable"]
    argv: tuple[str, ...] = ()
    shape: Shape = "split"
    has_args: bool = True
    """False when a split entry has no ``args`` member (or ``args: null``)."""
    url: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    reason: str | None = None
    value: Any = None
    """The entry as parsed (for policy files)."""


def _env_text(value: object) -> str:
    from toolpin.clients.jsonc import RawNumber

    if isinstance(value, RawNumber):
        return value.raw
    return json.dumps(value, default=str)


def classify(name: str, path: EntryPath, scope: str | None, value: object) -> Entry:
    """What kind of server ``value`` describes."""
    if not isinstance(value, dict):
        return Entry(name, path, scope, "unusable", reason="not an object", value=value)
    env_raw = value.get("env", value.get("environment"))
    env: tuple[tuple[str, str], ...] = ()
    if isinstance(env_raw, dict):
        env = tuple((str(k), v if isinstance(v, str) else _env_text(v)) for k, v in env_raw.items())
    url = next((value[k] for k in REMOTE_KEYS if isinstance(value.get(k), str)), None)
    if url is not None or value.get("type") in REMOTE_TYPES:
        return Entry(name, path, scope, "remote", url=url, env=env, value=value)
    command = value.get("command")
    if isinstance(command, str) and command:
        args = value.get("args")
        if args is None:
            return Entry(
                name, path, scope, "stdio", (command,), "split", False, env=env, value=value
            )
        if isinstance(args, list) and all(isinstance(a, str) for a in args):
            return Entry(
                name, path, scope, "stdio", (command, *args), "split", env=env, value=value
            )
        return Entry(
            name,
            path,
            scope,
            "unusable",
            reason="args in a form toolpin does not rewrite; edit it by hand",
            value=value,
        )
    if isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        return Entry(name, path, scope, "stdio", tuple(command), "array", env=env, value=value)
    return Entry(
        name,
        path,
        scope,
        "unusable",
        reason="no command in a form toolpin rewrites; edit it by hand",
        value=value,
    )


class ConfigDocument:
    """A parsed config file that can list its entries and rewrite them."""

    def entries(self) -> list[Entry]:
        raise NotImplementedError

    def text(self) -> str:
        raise NotImplementedError

    def wrap(self, entry: Entry, prefix: Sequence[str]) -> None:
        """Run ``prefix`` (launcher + proxy arguments ending in ``--``) before the command."""
        raise NotImplementedError

    def unwrap(self, entry: Entry, inner_start: int, *, drop_args: bool) -> None:
        """Make ``argv[inner_start:]`` the command again (delete everything before it)."""
        raise NotImplementedError

    def insert_args(self, entry: Entry, argv_index: int, items: Sequence[str]) -> None:
        """Insert ``items`` before ``argv[argv_index]`` (``argv_index`` >= 1)."""
        raise NotImplementedError

    def entry_text(self, entry: Entry) -> str | None:
        """The entry's text exactly as written (a JSON value, a TOML table's body), or
        ``None`` when it cannot be told apart from the rest of the file."""
        raise NotImplementedError

    def replace_entry_text(self, entry: Entry, old: str, new: str) -> None:
        """Replace the entry's text ``old`` (from :meth:`entry_text`) with ``new``."""
        raise NotImplementedError


def open_document(text: str, dialect: Dialect) -> ConfigDocument:
    """Parse ``text`` as the given dialect; :class:`ConfigError` when it cannot be read."""
    if dialect == "codex":
        return TomlDocument(text)
    return JsonDocument(text, dialect)


# ---- JSON / JSONC --------------------------------------------------------------------


class JsonDocument(ConfigDocument):
    def __init__(self, text: str, dialect: Dialect) -> None:
        self._text = text
        self.root = jsonc.parse(text)
        if self.root.kind != "object":
            raise ConfigError("the file holds no JSON object")
        self.dialect = dialect if dialect != "auto" else self._guess()

    def _guess(self) -> Dialect:
        keys = {m.key for m in self.root.members}
        if "projects" in keys:
            return "claude-code"
        if "mcpServers" in keys:
            return "mcpServers"
        if "servers" in keys:
            return "vscode"
        if "context_servers" in keys:
            return "zed"
        if "mcp" in keys:
            return "opencode"
        return "mcpServers"

    def text(self) -> str:
        return self._text

    def _maps(self) -> list[tuple[str | None, EntryPath]]:
        top = {
            "mcpServers": ["mcpServers"],
            "vscode": ["servers", "mcpServers"],
            "claude-code": ["mcpServers"],
            "opencode": ["mcp"],
            "zed": ["context_servers"],
        }.get(self.dialect, ["mcpServers"])
        maps: list[tuple[str | None, EntryPath]] = [(None, (key,)) for key in top]
        if self.dialect == "claude-code":
            projects = self.root.get("projects")
            if projects is not None and projects.kind == "object":
                maps += [
                    (f"project {m.key}", ("projects", m.key, "mcpServers"))
                    for m in projects.members
                ]
        return maps

    def entries(self) -> list[Entry]:
        out: list[Entry] = []
        for scope, map_path in self._maps():
            node = jsonc.find(self.root, map_path)
            if node is None or node.kind != "object":
                continue
            out += [classify(m.key, (*map_path, m.key), scope, m.value.value) for m in node.members]
        return out

    def _node(self, path: Sequence[str | int]) -> jsonc.Node:
        node = jsonc.find(self.root, tuple(path))
        if node is None:
            raise ConfigError("the entry changed while it was being edited")
        return node

    def _set(self, text: str) -> None:
        self._text = text
        self.root = jsonc.parse(text)

    def wrap(self, entry: Entry, prefix: Sequence[str]) -> None:
        if entry.shape == "array":
            arr = self._node((*entry.path, "command"))
            self._set(jsonc.insert_items(self._text, arr, 0, [jsonc.dumps(p) for p in prefix]))
            return
        cmd = self._node((*entry.path, "command"))
        raw_command = self._text[cmd.start : cmd.end]
        items = [jsonc.dumps(p) for p in prefix[1:]] + [raw_command]
        self._set(jsonc.replace_value(self._text, cmd, jsonc.dumps(prefix[0])))
        obj = self._node(entry.path)
        args = obj.get("args")
        if args is None:
            self._set(
                jsonc.insert_member(
                    self._text, obj, "args", "[" + ", ".join(items) + "]", after="command"
                )
            )
        elif args.kind != "array":  # "args": null
            self._set(jsonc.replace_value(self._text, args, "[" + ", ".join(items) + "]"))
        else:
            self._set(jsonc.insert_items(self._text, args, 0, items))

    def unwrap(self, entry: Entry, inner_start: int, *, drop_args: bool) -> None:
        if entry.shape == "array":
            arr = self._node((*entry.path, "command"))
            self._set(jsonc.delete_items(self._text, arr, 0, inner_start))
            return
        args = self._node((*entry.path, "args"))
        # argv[0] is "command"; argv[i] is args[i - 1]
        inner_cmd = args.items[inner_start - 1]
        raw_command = self._text[inner_cmd.start : inner_cmd.end]
        self._set(jsonc.delete_items(self._text, args, 0, inner_start))
        self._set(
            jsonc.replace_value(self._text, self._node((*entry.path, "command")), raw_command)
        )
        if drop_args and not self._node((*entry.path, "args")).items:
            self._set(jsonc.delete_member(self._text, self._node(entry.path), "args"))

    def insert_args(self, entry: Entry, argv_index: int, items: Sequence[str]) -> None:
        if entry.shape == "array":
            arr, index = self._node((*entry.path, "command")), argv_index
        else:
            arr, index = self._node((*entry.path, "args")), argv_index - 1
        self._set(jsonc.insert_items(self._text, arr, index, [jsonc.dumps(i) for i in items]))

    def entry_text(self, entry: Entry) -> str | None:
        node = jsonc.find(self.root, entry.path)
        return None if node is None else self._text[node.start : node.end]

    def replace_entry_text(self, entry: Entry, old: str, new: str) -> None:
        node = self._node(entry.path)
        if self._text[node.start : node.end] != old:
            raise ConfigError("the entry changed while it was being edited")
        self._set(jsonc.replace_value(self._text, node, new))

    def indent_of(self, entry: Entry) -> str:
        """The leading whitespace of the line the entry's value starts on."""
        node = self._node(entry.path)
        line_start = self._text.rfind("\n", 0, node.start) + 1
        line = self._text[line_start : node.start]
        return line[: len(line) - len(line.lstrip(" \t"))]


# ---- Codex TOML ----------------------------------------------------------------------


class TomlDocument(ConfigDocument):
    def __init__(self, text: str) -> None:
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        try:
            self.doc = tomlkit.parse(text)
        except TOMLKitError as exc:
            raise ConfigError(f"not valid TOML ({str(exc).splitlines()[0]})") from None

    def text(self) -> str:
        import tomlkit

        return tomlkit.dumps(self.doc)

    def _servers(self) -> Any:
        servers = self.doc.get("mcp_servers")
        return servers if isinstance(servers, dict) else {}

    def entries(self) -> list[Entry]:
        out = []
        for name, table in self._servers().items():
            value = table.unwrap() if hasattr(table, "unwrap") else table
            entry = classify(str(name), ("mcp_servers", str(name)), None, value)
            if entry.kind == "stdio" and entry.shape == "array":
                entry = classify(str(name), entry.path, None, {"command": None})
            out.append(entry)
        return out

    def _table(self, entry: Entry) -> Any:
        return self._servers()[entry.path[1]]

    def wrap(self, entry: Entry, prefix: Sequence[str]) -> None:
        table = self._table(entry)
        raw_command = table["command"].as_string()
        items = [json.dumps(p, ensure_ascii=False) for p in prefix[1:]] + [raw_command]
        table["command"] = prefix[0]
        if "args" not in table:
            new = _toml_value("[" + ", ".join(items) + "]")
            _insert_after(table, "command", "args", new)
            return
        text = table["args"].as_string()
        spans = _toml_array_items(text)
        if spans is None:
            table["args"] = [*prefix[1:], entry.argv[0], *entry.argv[1:]]
            return
        if not spans:
            table["args"] = _toml_value("[" + ", ".join(items) + text[1:])
            return
        at = spans[0][0]
        gap = text[1:at]
        sep = "," + gap[gap.rfind("\n") :] if "\n" in gap else ", "
        table["args"] = _toml_value(text[:at] + "".join(f"{i}{sep}" for i in items) + text[at:])

    def unwrap(self, entry: Entry, inner_start: int, *, drop_args: bool) -> None:
        table = self._table(entry)
        text = table["args"].as_string()
        spans = _toml_array_items(text)
        if spans is None or len(spans) != len(entry.argv) - 1:
            table["command"] = entry.argv[inner_start]
            table["args"] = list(entry.argv[inner_start + 1 :])
        else:
            start, end = spans[inner_start - 1]
            table["command"] = _toml_value(text[start:end])
            table["args"] = _toml_value(_delete_spans(text, spans, inner_start))
        if drop_args and not entry.argv[inner_start + 1 :]:
            table.remove("args")

    def insert_args(self, entry: Entry, argv_index: int, items: Sequence[str]) -> None:
        table = self._table(entry)
        args = list(entry.argv[1:])
        args[argv_index - 1 : argv_index - 1] = list(items)
        text = table["args"].as_string()
        spans = _toml_array_items(text)
        if spans is None or argv_index - 1 >= len(spans):
            table["args"] = args
            return
        at = spans[argv_index - 1][0]
        sep = ", "
        if argv_index - 1 > 0:
            gap = text[spans[argv_index - 2][1] : at]
            after_comma = gap[gap.find(",") + 1 :]
            if gap.lstrip(" \t").startswith(",") and not after_comma.strip():
                sep = "," + after_comma
        encoded = "".join(json.dumps(i, ensure_ascii=False) + sep for i in items)
        table["args"] = _toml_value(text[:at] + encoded + text[at:])

    def entry_text(self, entry: Entry) -> str | None:
        table = self._table(entry)
        if not hasattr(table, "as_string"):
            return None
        body = str(table.as_string())
        text = self.text()
        return body if body and text.count(body) == 1 else None

    def replace_entry_text(self, entry: Entry, old: str, new: str) -> None:
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        text = self.text()
        if text.count(old) != 1:
            raise ConfigError("the entry changed while it was being edited")
        try:
            self.doc = tomlkit.parse(text.replace(old, new, 1))
        except TOMLKitError as exc:
            raise ConfigError(f"the edit would not be valid TOML ({exc})") from None


def _toml_value(text: str) -> tomlkit.items.Item:
    import tomlkit

    value = tomlkit.parse("x = " + text)["x"]
    assert isinstance(value, tomlkit.items.Item)
    return value


def _insert_after(table: Any, after: str, key: str, value: tomlkit.items.Item) -> None:
    """Add ``key`` right after ``after`` (tomlkit appends at the end, past blank lines)."""
    import tomlkit.items

    if isinstance(table, tomlkit.items.InlineTable):
        table[key] = value
        return
    value.trivia.trail = "\n"
    # tomlkit has no public "insert after"; its container method keeps the layout.
    table.value._insert_after(after, key, value)


def _delete_spans(text: str, spans: list[tuple[int, int]], stop: int) -> str:
    """``text`` without array items ``0 .. stop - 1`` (and what separates them)."""
    if stop < len(spans):
        return text[: spans[0][0]] + text[spans[stop][0] :]
    tail = spans[-1][1]
    rest = text[tail:]
    stripped = rest.lstrip(" \t")
    if stripped.startswith(","):
        tail += len(rest) - len(stripped) + 1
    return text[: spans[0][0]] + text[tail:]


def _toml_array_items(text: str) -> list[tuple[int, int]] | None:
    """Spans of the string items of the TOML array ``text``; ``None`` unless all are strings."""
    if not text.startswith("["):
        return None
    spans: list[tuple[int, int]] = []
    i, n = 1, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n,":
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c == "]":
            return spans
        elif text.startswith('"""', i) or text.startswith("'''", i):
            end = text.find(text[i : i + 3], i + 3)
            if end < 0:
                return None
            spans.append((i, end + 3))
            i = end + 3
        elif c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                return None
            spans.append((i, end + 1))
            i = end + 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                return None
            spans.append((i, j + 1))
            i = j + 1
        else:
            return None
    return None


def remote_headers(value: Mapping[str, object], dialect: str) -> list[str] | str:
    """The static headers of a remote entry as ``'Name: value'`` texts (values as written,
    ``${env:VAR}`` unexpanded), or why they cannot be read (a string).

    Codex: ``bearer_token_env_var`` (an ``Authorization: Bearer`` from that variable),
    ``http_headers`` (literal values) and ``env_http_headers`` (values from the variables
    named). Every other client: the ``headers`` object.
    """
    out: list[str] = []
    if dialect == "codex":
        bearer = value.get("bearer_token_env_var")
        if isinstance(bearer, str) and bearer:
            out.append(f"Authorization: Bearer ${{env:{bearer}}}")
        sources: tuple[tuple[str, bool], ...] = (
            ("http_headers", False),
            ("env_http_headers", True),
        )
    else:
        sources = (("headers", False),)
    for member, by_env in sources:
        table = value.get(member)
        if table is None:
            continue
        if not isinstance(table, Mapping) or not all(isinstance(v, str) for v in table.values()):
            return f"its {member} are in a form toolpin does not read"
        for k, v in table.items():
            if ":" in str(k) or "\n" in v:
                return f"the header {visible(str(k))} is in a form toolpin does not read"
            out.append(f"{k}: ${{env:{v}}}" if by_env else f"{k}: {v}")
    return out
