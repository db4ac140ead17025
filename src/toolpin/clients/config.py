"""Client configs as servers are started from them: ``read_config`` and ``${VAR}`` expansion.

Reads a shared MCP config (``mcpServers``, VS Code's ``servers``, Codex TOML), skips the
servers the config disables, undoes toolpin's own wrapping, and fills ``${VAR}``,
``${VAR:-default}`` and ``${env:VAR}`` from the environment the way clients do. Used by
the team lock and the crawler.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from toolpin.core.render import visible
from toolpin.errors import (
    ConfigError,
)
from toolpin.pins.serverid import server_id
from toolpin.util.fs import read_input

if TYPE_CHECKING:
    pass


DEFAULT_CONFIG: Final = ".mcp.json"
_VAR: Final = re.compile(
    r"\$\{(?:env:([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?)\}"
)


def expand(text: str, env: Mapping[str, str], predefined: Mapping[str, str] | None = None) -> str:
    """Fill ``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}``; other forms stay literal.

    An unset or empty variable takes the default, or ``""``. ``predefined`` holds the
    client's own variables (VS Code's ``${workspaceFolder}``), which win over the
    environment for the ``${NAME}`` form.
    """

    def one(match: re.Match[str]) -> str:
        if match.group(2) is not None and predefined and match.group(2) in predefined:
            return predefined[match.group(2)]
        name = match.group(1) or match.group(2)
        value = env.get(name, "")
        if value == "":
            return match.group(3) or ""
        return value

    return _VAR.sub(one, text)


@dataclass(frozen=True)
class ConfiguredServer:
    """One local server of the config, as written and as it will run."""

    name: str
    written: tuple[str, ...]
    """The command as written in the config (what the id is computed from)."""
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None

    @property
    def server_id(self) -> str:
        """The id every machine computes from the command as written."""
        return server_id(self.written)


@dataclass(frozen=True)
class RemoteServer:
    """A remote (HTTP) server of a config: its URL as written (``${VAR}`` unexpanded)."""

    name: str
    url: str | None
    transport: str | None
    """The entry's ``type`` (``http``, ``sse``, ``streamable-http``...), when given."""
    headers: tuple[str, ...] = ()
    """Its static headers as ``'Name: value'``, as written (``${env:VAR}`` unexpanded)."""
    header_problem: str | None = None
    """Why its headers cannot be used (a form toolpin does not read), when they cannot."""


@dataclass(frozen=True)
class Config:
    """The servers of a config file: local ones, remote ones, and the skipped ones."""

    path: Path
    servers: tuple[ConfiguredServer, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    remotes: tuple[RemoteServer, ...] = ()

    def skip_reason(self, name: str) -> str | None:
        """Why the config's server ``name`` is not locked, when it is listed but skipped."""
        return next((why for skipped, why in self.skipped if skipped == name), None)


def project_dir(config_path: Path) -> Path:
    """The directory a client starts the config's servers in.

    The config's own directory, except for ``.vscode/mcp.json`` and ``.cursor/mcp.json``,
    whose servers start in the workspace folder above.
    """
    folder = config_path.absolute().parent
    if folder.name in (".vscode", ".cursor"):
        return folder.parent
    return folder


def _flag_values(argv: tuple[str, ...], flag: str) -> tuple[str, ...]:
    """Every value of ``flag`` in ``argv`` (``--flag V`` and ``--flag=V``)."""
    found: list[str] = []
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith(flag + "="):
            found.append(arg.split("=", 1)[1])
    return tuple(found)


def _disabled(value: object) -> bool:
    return isinstance(value, dict) and (
        value.get("disabled") is True or value.get("enabled") is False
    )


MAX_CONFIG_BYTES: Final = 32 * 1024 * 1024
"""The largest config file read (the same cap as ``wrap``)."""


def read_config(path: Path, *, environ: Mapping[str, str] | None = None) -> Config:
    """Read the servers of a shared MCP config (JSON, JSON with comments, or Codex TOML).

    Servers start in the project directory (:func:`project_dir`); a relative ``cwd`` is
    taken from there. Remote servers, entries without a usable command and servers the
    config disables (``"disabled": true``, ``"enabled": false``) are listed as skipped.
    """
    from toolpin.clients.documents import JsonDocument, open_document, remote_headers
    from toolpin.clients.wrap import recognise_wrap

    environ = os.environ if environ is None else environ
    if not os.path.lexists(path):
        raise ConfigError(f"no config at {path}", advice="Give one with --config FILE.")
    data = read_input(path, cap=MAX_CONFIG_BYTES, error=ConfigError)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"cannot read {path}: not UTF-8 text") from None
    dialect = "codex" if path.suffix == ".toml" else "auto"
    try:
        document = open_document(text, dialect)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise ConfigError(f"cannot read {path}: {exc.message}") from None
    base = project_dir(path)
    predefined = None
    if isinstance(document, JsonDocument) and document.dialect == "vscode":
        predefined = {"workspaceFolder": str(base)}
    servers: list[ConfiguredServer] = []
    skipped: list[tuple[str, str]] = []
    remotes: list[RemoteServer] = []
    seen: set[str] = set()
    for entry in document.entries():
        if entry.name in seen:
            raise ConfigError(
                f"{path} lists two servers named {visible(entry.name)!r}",
                advice="A lock is keyed by server name; give each server its own.",
            )
        seen.add(entry.name)
        if _disabled(entry.value):
            skipped.append((entry.name, "disabled in the config"))
            continue
        if entry.kind == "remote":
            skipped.append((entry.name, "remote server"))
            value = entry.value if isinstance(entry.value, dict) else {}
            kind = value.get("type")
            headers = remote_headers(value, getattr(document, "dialect", "codex"))
            remotes.append(
                RemoteServer(
                    entry.name,
                    entry.url,
                    kind if isinstance(kind, str) else None,
                    headers=tuple(headers) if isinstance(headers, list) else (),
                    header_problem=headers if isinstance(headers, str) else None,
                )
            )
            continue
        if entry.kind != "stdio":
            skipped.append((entry.name, entry.reason or "not a usable server entry"))
            continue
        written = tuple(entry.argv)
        form = recognise_wrap(written)
        url = form.flag_value("--url") if form is not None and form.by == "toolpin" else None
        if form is not None and form.inner_start is None and url is not None:
            # toolpin run --url: a remote server behind toolpin (wrap --remote).
            transport = form.flag_value("--transport")
            remotes.append(
                RemoteServer(
                    entry.name, url, transport, headers=_flag_values(form.flags, "--header")
                )
            )
            skipped.append((entry.name, "remote server"))
            continue
        if form is not None:
            start = form.inner_start
            if start is None or start >= len(written):
                skipped.append((entry.name, "wrapped in a form toolpin does not recognise"))
                continue
            written = written[start:]
        env = {k: expand(v, environ, predefined) for k, v in entry.env}
        cwd_raw = entry.value.get("cwd") if isinstance(entry.value, dict) else None
        cwd = base
        if isinstance(cwd_raw, str) and cwd_raw:
            cwd = base / expand(cwd_raw, environ, predefined)
        servers.append(
            ConfiguredServer(
                name=entry.name,
                written=written,
                argv=tuple(expand(a, environ, predefined) for a in written),
                env=env,
                cwd=str(cwd),
            )
        )
    if not servers and not skipped:
        raise ConfigError(f"{path} lists no MCP servers (mcpServers or servers)")
    return Config(path=path, servers=tuple(servers), skipped=tuple(skipped), remotes=tuple(remotes))


# ------------------------------------------------------------------------------ locking
