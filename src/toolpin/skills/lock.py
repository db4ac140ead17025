"""A project's skills in the team lock (``toolpin lock --skills DIR``).

The lock's optional top-level ``skills`` member::

    "skills": {
      "root": ".claude/skills",              # relative to the lock's folder, inside it
      "items": {"<folder name>": {<a skill pin without toolpinSkill>}}
    }

Every item verifies itself as a skill pin does (:func:`toolpin.skills.store.pin_from_json`):
a lock whose skills were edited by hand is refused (exit 2). An item whose tree is
unchanged keeps its ``pinnedAt``, so re-locking an unchanged project gives the same bytes.
A lock without the member is exactly as before (older locks read as they always did).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolpin.core.render import visible
from toolpin.errors import InputError, LockfileError
from toolpin.skills.check import SkillOutcome, compare
from toolpin.skills.locate import SkillRef, skill_folders
from toolpin.skills.store import FORMAT_KEY, SkillPin, pin_from_json, pin_json
from toolpin.skills.tree import read_tree

MEMBER: Final = "skills"


@dataclass(frozen=True)
class LockedSkills:
    """The verified ``skills`` member of a lock."""

    root: str
    """As recorded: relative to the lock's folder, ``/``-separated."""
    items: Mapping[str, SkillPin]

    def folder(self, lock_path: Path) -> Path:
        return lock_path.absolute().parent / self.root


def ref_of(folder: Path) -> SkillRef:
    """A locked skill's reference: its key is its folder name, its name ``skills/NAME``."""
    return SkillRef(str(folder), folder.name, f"skills/{folder.name}")


def root_of(folder: Path, lock_path: Path) -> str:
    """``folder`` relative to the lock's folder; it must be inside it."""
    base = os.path.abspath(lock_path.absolute().parent)
    rel = os.path.relpath(os.path.abspath(folder), base).replace(os.sep, "/")
    if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        raise InputError(
            f"the skills folder {visible(str(folder))} is not inside the lock's folder",
            advice="Keep the lock at the project's root, beside .claude/skills.",
        )
    return rel


def record(folder: Path, lock_path: Path, previous: LockedSkills | None) -> dict[str, Any]:
    """The ``skills`` member for the skills in ``folder`` now (any unreadable skill
    folder stops here, before the lock is written)."""
    from toolpin.util.clock import utc_now

    if not folder.is_dir():
        raise InputError(f"no skills folder at {visible(str(folder))}")
    root = root_of(folder, lock_path)
    now = utc_now(millis=True)
    items: dict[str, Any] = {}
    for skill in skill_folders(folder):
        ref = ref_of(skill)
        tree = read_tree(ref.path, name=ref.name)
        before = previous.items.get(skill.name) if previous is not None else None
        at = before.pinned_at if before is not None and before.tree.digest == tree.digest else now
        doc = pin_json(skill.name, skill.name, at, tree)
        del doc[FORMAT_KEY]
        items[skill.name] = doc
    return {"root": root, "items": items}


def read(raw: Any, lock_path: Path) -> LockedSkills:
    """Verify a lock's ``skills`` member; :class:`LockfileError` (exit 2) if it does not."""
    if not isinstance(raw, dict) or not isinstance(raw.get("items"), dict):
        raise LockfileError(f"{lock_path}: skills must be an object with items")
    root = raw.get("root")
    if not isinstance(root, str) or not root or root.startswith("/") or "\\" in root:
        raise LockfileError(f"{lock_path}: skills root must be a relative path")
    if posixpath.normpath(root).split("/")[0] == "..":
        raise LockfileError(f"{lock_path}: skills root must be inside the lock's folder")
    items: dict[str, SkillPin] = {}
    for name, item in raw["items"].items():
        where = f"{lock_path}: skill {visible(name)!r}"
        try:
            pin = pin_from_json(item, where=where)
        except InputError as exc:
            raise LockfileError(exc.message) from None
        if pin.key != name:
            raise LockfileError(f"{where}: its key is not its name; was it edited by hand?")
        items[name] = pin
    return LockedSkills(root, items)


def check(locked: LockedSkills, lock_path: Path) -> tuple[list[SkillOutcome], list[str]]:
    """Each skill folder under the recorded root compared with the lock, and the names
    of the locked skills no longer there."""
    folder = locked.folder(lock_path)
    found = skill_folders(folder) if folder.is_dir() else []
    outcomes = [
        compare(
            ref_of(skill),
            read_tree(str(skill), name=f"skills/{skill.name}"),
            locked.items.get(skill.name),
        )
        for skill in found
    ]
    names = {skill.name for skill in found}
    return outcomes, sorted(set(locked.items) - names)
