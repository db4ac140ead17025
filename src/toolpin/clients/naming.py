"""The ``--name`` that ``toolpin wrap`` writes: one that no other client or project shares.

With ``--name`` a pin is found by its name (:mod:`toolpin.pins.serverid`), so two config
entries that both say ``filesystem`` would share one pin, and a different command in each
would be a change to review on every switch between them. ``wrap`` therefore qualifies
the config key with where it was found:

``filesystem@claude-desktop``
    an entry of a client's own (user) config;
``filesystem@cursor:myapp-3f9a2c1d``
    an entry of a project: a project's shared file (``.cursor/mcp.json``, ``.mcp.json``,
    ``.vscode/mcp.json``) or Claude Code's per-project servers in ``~/.claude.json``. The
    project part is the folder's name and 8 hex digits of SHA-256 over its absolute path
    when it was wrapped, so two projects with the same folder name still differ, while a
    committed file keeps one name on every clone.

The qualifier uses only ``[a-z0-9-]`` for the client and ``[A-Za-z0-9._-]`` for the
folder, so the name reads the same in every config format and terminal.
:func:`config_key` gives the config key back (``run --lock`` looks a server up in the
team lock by that key when the qualified name is not in it).
"""

from __future__ import annotations

import hashlib
import re

_SLUG_OUT = re.compile(r"[^a-z0-9]+")
_FOLDER_OUT = re.compile(r"[^A-Za-z0-9._-]+")
_QUALIFIER = re.compile(r"@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?::[A-Za-z0-9._-]{0,32}-[0-9a-f]{8})?")
FOLDER_CHARS = 24
"""At most this many characters of the project folder's name are kept."""


def client_slug(client: str) -> str:
    """``Claude Desktop`` -> ``claude-desktop``."""
    return _SLUG_OUT.sub("-", client.lower()).strip("-") or "client"


def project_tag(folder: str) -> str:
    """``myapp-3f9a2c1d`` for the project folder at the absolute path ``folder``."""
    digest = hashlib.sha256(folder.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    base = folder.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    base = _FOLDER_OUT.sub("-", base).strip("-.")[:FOLDER_CHARS].strip("-.")
    return f"{base}-{digest}"


def wrapped_name(key: str, client: str, project: str | None = None) -> str:
    """The ``--name`` for the entry ``key`` of ``client``, in ``project`` (an absolute
    folder path) when the entry belongs to one."""
    qualifier = client_slug(client)
    if project is not None:
        qualifier += ":" + project_tag(project)
    return f"{key}@{qualifier}"


def config_key(name: str) -> str | None:
    """The config key inside a name :func:`wrapped_name` wrote, else ``None``."""
    at = name.rfind("@")
    if at <= 0 or _QUALIFIER.fullmatch(name, at) is None:
        return None
    return name[:at]
