"""Skill pins: one self-verifying file per skill under ``TOOLPIN_HOME/skills``.

A pin file is ``<sha256(key)[:32]>.json``::

    {
      "toolpinSkill": 1,
      "key": "...", "name": "...", "pinnedAt": "...",
      "treeDigest": "<hex>",        # SHA-256 of the sorted [path, type, sha256] triples
      "skillHash": "<hex>",         # SHA-256 of SKILL.md's frontmatter and body, canonical
      "files": [{"path", "type": "text|binary|link", "sha256", "size", "target"?}],
      "texts": {"<path>": "<text>"},   # every text file, for the review's diff
      "digest": "sha256:<hex>"
    }

Reading a pin re-checks everything it claims: each text's SHA-256 and size, the tree
digest and the skill hash; a pin that does not verify is
refused (:class:`~toolpin.errors.StoreError`, exit 2), never read as "no pin". Writes
are atomic, under a cross-process lock, and each one is preceded by its audit entry
(``skill-pin`` or ``skill-approve`` in the pin store's hash-chained audit log), which
holds the name in a safe alphabet, the pin file's name, hashes and label keys only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolpin.core.canonical import JSONValue, definition_hash, parse_json
from toolpin.core.render import visible
from toolpin.errors import InputError, JSONError, StoreError, StoreWriteError
from toolpin.skills.tree import SKILL_FILE, SkillFile, SkillTree, tree_digest

FORMAT_KEY: Final = "toolpinSkill"
FORMAT_VERSION: Final = 1
MAX_PIN_BYTES: Final = 96 * 1024 * 1024
_HEX64: Final = frozenset("0123456789abcdef")
_TYPES: Final = frozenset({"text", "binary", "link"})
_SAFE_NAME: Final = re.compile(r"[^A-Za-z0-9_.@/:-]+")
"""What of a skill's name the audit log keeps (its pin file's name identifies it exactly)."""


@dataclass(frozen=True)
class SkillPin:
    """A verified pin of one skill."""

    key: str
    name: str
    pinned_at: str
    tree: SkillTree
    """The pinned files, texts and ``SKILL.md``, as reading the folder gave them then (its
    ``digest`` is the pin's)."""


def pin_json(key: str, name: str, pinned_at: str, tree: SkillTree) -> dict[str, Any]:
    """The JSON form of a pin (member order is part of the format)."""
    return {
        FORMAT_KEY: FORMAT_VERSION,
        "key": key,
        "name": name,
        "pinnedAt": pinned_at,
        "treeDigest": tree.digest,
        "skillHash": tree.skill_hash,
        "files": [f.to_json() for f in tree.files],
        "texts": {path: tree.texts[path] for path in sorted(tree.texts)},
    }


def _is_hex(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX64


def pin_from_json(raw: JSONValue, *, where: str) -> SkillPin:
    """Verify a parsed pin (also a lock's ``skills`` entry); :class:`InputError` if not."""
    from toolpin.skills.frontmatter import FrontmatterError, skill_document

    def bad(what: str) -> InputError:
        return InputError(f"{where}: {what}; was it edited by hand?")

    if not isinstance(raw, dict):
        raise bad("not a skill pin")
    key, name, at = raw.get("key"), raw.get("name"), raw.get("pinnedAt")
    if not (isinstance(key, str) and isinstance(name, str) and isinstance(at, str)):
        raise bad("key, name and pinnedAt must be text")
    files_raw, texts_raw = raw.get("files"), raw.get("texts")
    if not isinstance(files_raw, list) or not isinstance(texts_raw, dict):
        raise bad("files must be a list and texts an object")
    files: list[SkillFile] = []
    for item in files_raw:
        if not isinstance(item, dict):
            raise bad("a file entry is not an object")
        path, kind, sha, size = (item.get(k) for k in ("path", "type", "sha256", "size"))
        target = item.get("target")
        if not isinstance(path, str) or kind not in _TYPES or not _is_hex(sha):
            raise bad("a file entry has a bad path, type or sha256")
        if type(size) is not int or size < 0:
            raise bad("a file entry has a bad size")
        if (kind == "link") != isinstance(target, str):
            raise bad("a link entry needs a target, and only a link has one")
        files.append(
            SkillFile(path, kind, str(sha), size, target if isinstance(target, str) else None)
        )
    paths = [f.path for f in files]
    if paths != sorted(set(paths), key=lambda p: p.encode("utf-8", "surrogatepass")):
        raise bad("files are not sorted by path, or a path repeats")
    texts: dict[str, str] = {}
    by_path = {f.path: f for f in files}
    for path, text in texts_raw.items():
        entry = by_path.get(path)
        if entry is None or entry.type != "text" or not isinstance(text, str):
            raise bad("a text does not belong to a text file")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise bad("a text is not valid UTF-8") from None
        if hashlib.sha256(data).hexdigest() != entry.sha256 or len(data) != entry.size:
            raise bad(f"the text of {visible(path)} does not match its sha256")
        texts[path] = text
    if {f.path for f in files if f.type == "text"} != set(texts):
        raise bad("a text file has no text")
    if raw.get("treeDigest") != tree_digest(files):
        raise bad("the tree digest does not match the files")
    if SKILL_FILE not in texts:
        raise bad("it has no SKILL.md text")
    try:
        document = skill_document(texts[SKILL_FILE])
    except FrontmatterError as exc:
        raise bad(exc.message) from None
    if raw.get("skillHash") != definition_hash(document):
        raise bad("the skill hash does not match SKILL.md")
    return SkillPin(key, name, at, SkillTree(tuple(files), texts, document))


class SkillStore:
    """The skill pins under ``home`` (default: ``TOOLPIN_HOME``)."""

    def __init__(self, home: Path | None = None) -> None:
        from toolpin.util.fs import toolpin_home

        self.home = home if home is not None else toolpin_home()
        self.folder = self.home / "skills"
        self.audit_path = self.home / "audit.log"

    def path_for(self, key: str) -> Path:
        digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()
        return self.folder / f"{digest[:32]}.json"

    def read(self, key: str) -> SkillPin | None:
        """The verified pin of ``key``; None when there is none. A pin that does not
        verify raises :class:`StoreError` (fail closed)."""
        from toolpin.util.fs import read_input

        path = self.path_for(key)
        if not os.path.lexists(path):
            return None
        data = read_input(path, cap=MAX_PIN_BYTES, error=StoreError)
        try:
            doc = parse_json(data)
        except JSONError as exc:
            raise StoreError(f"the skill pin {path} is not valid JSON: {exc.message}") from None
        if not isinstance(doc, dict) or doc.get(FORMAT_KEY) != FORMAT_VERSION:
            raise StoreError(f"the skill pin {path} is not a version 1 skill pin")
        try:
            pin = pin_from_json(doc, where=f"the skill pin {path}")
        except InputError as exc:
            raise StoreError(exc.message, advice="Delete it and pin the skill again.") from None
        if pin.key != key:
            raise StoreError(f"the skill pin {path} belongs to another skill")
        return pin

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The store's cross-process lock (every write happens under it)."""
        from toolpin.util.fs import ensure_private_dir, locked

        try:
            ensure_private_dir(self.folder)
        except OSError as exc:
            raise StoreWriteError(
                f"cannot create {self.folder}: {exc.strerror or type(exc).__name__}"
            ) from None
        with locked(self.folder / ".lock"):
            yield

    def write(
        self, key: str, name: str, tree: SkillTree, *, event: str, fields: Mapping[str, Any]
    ) -> None:
        """Record ``tree`` as the pin of ``key`` (call under :meth:`locked`): the audit
        entry first, then the pin file, atomically."""
        from toolpin.lockfile.native import dumps_with_digest
        from toolpin.pins import audit
        from toolpin.util.fs import atomic_write

        path = self.path_for(key)
        data = dumps_with_digest(pin_json(key, name, audit.now_iso(), tree))
        try:
            entry = {"skill": _SAFE_NAME.sub("_", name)[:120], "pin": path.stem, **fields}
            audit.append(self.audit_path, event, entry)
            atomic_write(path, data, mode=0o600)
        except OSError as exc:
            raise StoreWriteError(
                f"cannot write {path}: {exc.strerror or type(exc).__name__}"
            ) from None
