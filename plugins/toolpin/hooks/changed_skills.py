"""The skills part of the SessionStart note: one line naming the skills that changed
since ``toolpin skills pin`` (or ``approve``) recorded them, and the new ones.

Standard library only, no network, no writes, no skill text. It finds the skill folders
where ``toolpin skills`` looks (``~/.claude/skills``, ``$CLAUDE_CONFIG_DIR/skills``, the
project's ``.claude/skills`` and ``.agents/skills``, installed plugins' ``skills``),
computes each folder's tree digest the way ``toolpin.skills.tree`` does (a test keeps the
two equal) and compares it with the pin's ``treeDigest``. Nothing is said when the user
never pinned a skill (there is no ``skills`` folder in toolpin's home). A folder that
cannot be read counts as changed: ``toolpin skills check`` then says why.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import stat
import sys
from pathlib import Path

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_FILES = 2000
MAX_DEPTH = 16
MAX_SKILLS = 1000
MAX_PIN_BYTES = 96 * 1024 * 1024
MAX_NAMES = 8
MAX_INSTALLED_BYTES = 4 * 1024 * 1024
_SAFE = re.compile(r"[^A-Za-z0-9_.@/-]+")


class Unreadable(Exception):
    """A skill folder the digest cannot be computed for."""


def toolpin_home() -> Path | None:
    """``$TOOLPIN_HOME``, else the platform's user data dir as ``platformdirs`` has it."""
    env = os.environ
    if env.get("TOOLPIN_HOME"):
        return Path(env["TOOLPIN_HOME"]).expanduser()
    home = env.get("HOME") or env.get("USERPROFILE")
    if sys.platform == "win32":
        base = env.get("LOCALAPPDATA")
        return Path(base) / "toolpin" if base else None
    if not home:
        return None
    if sys.platform == "darwin":
        return Path(home) / "Library" / "Application Support" / "toolpin"
    data = env.get("XDG_DATA_HOME", "").strip()
    return Path(data) / "toolpin" if data else Path(home) / ".local" / "share" / "toolpin"


def _children(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if (folder / n / "SKILL.md").is_file()]


def _dirs(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if (folder / n).is_dir()]


def installed_paths(config: Path) -> set[str] | None:
    """The real paths of the plugin versions ``installed_plugins.json`` names (its
    ``plugins`` table: ``{"NAME@MARKETPLACE": [{"installPath": ...}, ...]}``), or None
    when it cannot be read as that."""
    try:
        with open(config / "plugins" / "installed_plugins.json", "rb") as handle:
            data = handle.read(MAX_INSTALLED_BYTES + 1)
        doc = json.loads(data) if len(data) <= MAX_INSTALLED_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None
    table = doc.get("plugins") if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        return None
    found: set[str] = set()
    for records in table.values():
        for record in records if isinstance(records, list) else [records]:
            where = record.get("installPath") if isinstance(record, dict) else None
            if isinstance(where, str) and where:
                found.add(os.path.realpath(os.path.expanduser(where)))
    return found


def installed_versions(versions: list[Path], installed: set[str] | None) -> list[Path]:
    """Of several version folders of one plugin, the ones Claude Code has installed (all
    of them when it says none of them)."""
    if installed is None or len(versions) < 2:
        return versions
    chosen = [v for v in versions if os.path.realpath(v) in installed]
    return chosen or versions


def known(project: Path, config: Path) -> list[tuple[str, str, str]]:
    """``(path, key, name)`` of every skill, as ``toolpin.skills.locate.known``."""
    project = project.absolute()
    found: list[tuple[str, str, str]] = []
    for scope, folder in (
        ("user", config / "skills"),
        ("project", project / ".claude" / "skills"),
        ("agents", project / ".agents" / "skills"),
    ):
        found += [(str(s), str(s), f"{scope}/{s.name}") for s in _children(folder)]
    installed = installed_paths(config)
    for market in _dirs(config / "plugins" / "cache"):
        for plugin in _dirs(market):
            versions = [v for v in _dirs(plugin) if (v / "skills").is_dir()]
            versions = installed_versions(versions, installed)
            for version in versions:
                for skill in _children(version / "skills"):
                    parts = [market.name, plugin.name, skill.name]
                    if len(versions) > 1:
                        parts.insert(2, version.name)
                    label = "/".join(parts)
                    found.append((str(skill), f"plugin:{label}", f"plugin/{label}"))
    unique: dict[str, tuple[str, str, str]] = {}
    for item in found:
        unique.setdefault(item[1], item)
    return list(unique.values())[:MAX_SKILLS]


def tree_digest(root: str) -> str:
    """The tree digest of a skill folder (``toolpin.skills.tree``'s rules)."""
    triples: list[list[str]] = []
    _walk(os.path.realpath(root), "", 0, triples)
    triples.sort(key=lambda t: t[0].encode("utf-8"))
    text = json.dumps(triples, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _walk(folder: str, prefix: str, depth: int, triples: list[list[str]]) -> None:
    if depth > MAX_DEPTH:
        raise Unreadable
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        raise Unreadable from None
    for entry in entries:
        try:
            entry.name.encode("utf-8")
        except UnicodeEncodeError:
            raise Unreadable from None
        rel = f"{prefix}/{entry.name}" if prefix else entry.name
        if len(triples) >= MAX_FILES:
            raise Unreadable
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            raise Unreadable from None
        if stat.S_ISLNK(mode):
            triples.append([rel, "link", _link(entry.path, rel)])
        elif stat.S_ISDIR(mode):
            _walk(entry.path, rel, depth + 1, triples)
        elif stat.S_ISREG(mode):
            triples.append([rel, *_regular(entry.path)])
        else:
            raise Unreadable


def _link(path: str, rel: str) -> str:
    try:
        target = os.readlink(path)
        data = target.encode("utf-8")
    except (OSError, UnicodeEncodeError):
        raise Unreadable from None
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    if target.startswith(("/", "\\")) or os.path.isabs(target) or resolved.split("/")[0] == "..":
        raise Unreadable
    return hashlib.sha256(data).hexdigest()


def _regular(path: str) -> list[str]:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        raise Unreadable from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unreadable
        chunks, left = [], MAX_FILE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        raise Unreadable from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        raise Unreadable
    kind = "text"
    if b"\x00" in data:
        kind = "binary"
    else:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            kind = "binary"
    return [kind, hashlib.sha256(data).hexdigest()]


def pinned_digest(store: Path, key: str) -> str | None:
    """The ``treeDigest`` of a skill's pin: None when it has none, ``""`` when the pin
    cannot be read (then no digest matches it)."""
    name = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    try:
        with open(store / f"{name}.json", "rb") as handle:
            data = handle.read(MAX_PIN_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError:
        return ""  # a pin that cannot be read: the skill counts as changed
    try:
        doc = json.loads(data) if len(data) <= MAX_PIN_BYTES else None
    except ValueError:
        doc = None
    digest = doc.get("treeDigest") if isinstance(doc, dict) else None
    return digest if isinstance(digest, str) else ""


def classify(project: Path, config: Path, home: Path) -> tuple[list[str], list[str]]:
    """The names of the changed skills and of the new (never pinned) ones."""
    store = home / "skills"
    changed: list[str] = []
    new: list[str] = []
    for path, key, name in known(project, config):
        pinned = pinned_digest(store, key)
        safe = _SAFE.sub("_", name)[:60] or "_"
        if pinned is None:
            new.append(safe)
            continue
        try:
            now = tree_digest(path)
        except Unreadable:
            now = None
        if now != pinned:
            changed.append(safe)
    return changed, new


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_NAMES])
    more = f", and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else ""
    return f"({shown}{more})"


def message(changed: list[str], new: list[str]) -> str | None:
    """The one line, or None when every skill is as pinned."""
    parts = []
    if changed:
        verb = "skill changed" if len(changed) == 1 else "skills changed"
        parts.append(f"{len(changed)} {verb} since it was pinned {_names(changed)}")
        if len(changed) > 1:
            parts[-1] = parts[-1].replace("since it was", "since they were")
    if new:
        verb = "skill is" if len(new) == 1 else "skills are"
        parts.append(f"{len(new)} {verb} not pinned yet {_names(new)}")
    if not parts:
        return None
    return (
        "toolpin: " + " and ".join(parts) + ". Skills are instructions to the model; "
        "the user can see what changed in a terminal with: toolpin skills review."
    )


def note(project: Path, config: Path) -> str | None:
    """The skills line for this session, or None (also when skills were never pinned)."""
    home = toolpin_home()
    if home is None or not (home / "skills").is_dir():
        return None
    return message(*classify(project, config, home))
