"""Where skills are: the known locations, or the paths a command was given.

Known locations (the same the session-start hook reads):

* ``user``: ``~/.claude/skills/*/`` (``$CLAUDE_CONFIG_DIR/skills`` when that is set);
* ``project``: ``<project>/.claude/skills/*/``;
* ``agents``: ``<project>/.agents/skills/*/`` (agents that read Agent Skills from a folder);
* ``plugin``: installed Claude Code plugins, ``<config>/plugins/cache/<marketplace>/
  <plugin>/<version>/skills/*/``.

A skill is a folder holding ``SKILL.md``. Its *key* (what its pin is filed under) is its
absolute path, except a plugin's, which leaves the version out, so that an update shows
as a change of the same skill: of several cached versions of a plugin, the one
``installed_plugins.json`` names is read (each is its own skill when it names none). Its *name*
is what people read: ``user/NAME``, ``project/NAME``, ``agents/NAME``,
``plugin/MARKETPLACE/PLUGIN/NAME``, or the path for a skill given by path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from toolpin.core.render import visible
from toolpin.errors import InputError
from toolpin.skills.tree import SKILL_FILE

MAX_SKILLS: Final = 1000
"""The most skill folders one command looks at."""
MAX_INSTALLED_BYTES: Final = 4 * 1024 * 1024
"""The largest ``installed_plugins.json`` read."""


@dataclass(frozen=True, slots=True)
class SkillRef:
    """One skill folder found: where it is, its key and its name."""

    path: str
    key: str
    name: str


def config_dir(environ: Mapping[str, str]) -> Path:
    """Claude Code's config folder: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    custom = environ.get("CLAUDE_CONFIG_DIR")
    if custom:
        return Path(custom).expanduser()
    return Path(environ.get("HOME") or Path.home()) / ".claude"


def skill_folders(folder: Path) -> list[Path]:
    """The sub-folders of ``folder`` that hold a ``SKILL.md`` (sorted)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if (folder / n / SKILL_FILE).is_file()]


def _plugin_skills(config: Path) -> list[SkillRef]:
    cache = config / "plugins" / "cache"
    installed = installed_paths(config)
    found: list[SkillRef] = []
    for market in _dirs(cache):
        for plugin in _dirs(market):
            versions = [v for v in _dirs(plugin) if (v / "skills").is_dir()]
            versions = installed_versions(versions, installed)
            for version in versions:
                for skill in skill_folders(version / "skills"):
                    parts = [market.name, plugin.name, skill.name]
                    if len(versions) > 1:
                        parts.insert(2, version.name)
                    label = "/".join(parts)
                    found.append(SkillRef(str(skill), f"plugin:{label}", f"plugin/{label}"))
    return found


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


def _dirs(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if (folder / n).is_dir()]


def known(project: Path, environ: Mapping[str, str] | None = None) -> list[SkillRef]:
    """Every skill in the known locations, for the project folder ``project``."""
    env = os.environ if environ is None else environ
    config = config_dir(env)
    project = project.absolute()
    refs: list[SkillRef] = []
    for scope, folder in (
        ("user", config / "skills"),
        ("project", project / ".claude" / "skills"),
        ("agents", project / ".agents" / "skills"),
    ):
        refs += [SkillRef(str(s), str(s), f"{scope}/{s.name}") for s in skill_folders(folder)]
    refs += _plugin_skills(config)
    return _unique(refs)


def _unique(refs: Iterable[SkillRef]) -> list[SkillRef]:
    seen: dict[str, SkillRef] = {}
    for ref in refs:
        seen.setdefault(ref.key, ref)
        if len(seen) > MAX_SKILLS:
            raise InputError(f"more than {MAX_SKILLS} skill folders; name the ones to look at")
    return list(seen.values())


def given(
    paths: Iterable[str], project: Path, environ: Mapping[str, str] | None = None
) -> list[SkillRef]:
    """The skills a command was given: each a skill folder, a folder of skill folders, or
    the name of a skill in the known locations (``project/deploy``)."""
    names = {r.name: r for r in known(project, environ)}
    by_path = {os.path.abspath(r.path): r for r in names.values()}
    refs: list[SkillRef] = []
    for raw in paths:
        absolute = os.path.abspath(raw)
        if os.path.isdir(absolute):
            if os.path.isfile(os.path.join(absolute, SKILL_FILE)):
                refs.append(by_path.get(absolute) or SkillRef(absolute, absolute, absolute))
                continue
            inner = skill_folders(Path(absolute))
            if not inner:
                raise InputError(f"no skill in {visible(raw)} (no folder with a SKILL.md)")
            for skill in inner:
                path = str(skill)
                refs.append(by_path.get(path) or SkillRef(path, path, path))
        elif raw in names:
            refs.append(names[raw])
        else:
            raise InputError(
                f"{visible(raw)} is neither a skill folder nor a known skill",
                advice="See the known skills with: toolpin skills check",
            )
    return _unique(refs)
