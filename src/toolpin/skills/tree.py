"""One skill folder read, bounded and without following a link out of it.

Every entry is looked at with ``lstat`` semantics (:func:`os.scandir`, no following):

* a regular file is read (opened with ``O_NOFOLLOW``, checked again with ``fstat``) up to
  :data:`MAX_FILE_BYTES`; it is *text* when it is UTF-8 without NUL bytes, else *binary*
  (pinned by its digest only, and said so);
* a directory is walked (at most :data:`MAX_DEPTH` deep, :data:`MAX_FILES` entries);
* a symbolic link is recorded as a link (its target text is what is pinned), never
  followed; a link whose target leaves the folder (absolute, or climbing out with ``..``)
  is refused, because what it points at could change unseen;
* anything else (a FIFO, a socket, a device), an unreadable entry or a name that is not
  UTF-8 is refused.

Every refusal is a :class:`SkillError` (exit 2) naming the skill and the entry, made
visible. The folder's *tree digest* is SHA-256 of the canonical JSON of the sorted
``[path, type, sha256]`` triples: the session-start hook computes the same with the
standard library alone (a test keeps the two equal).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
from dataclasses import dataclass
from typing import Final, Literal

from toolpin.core.canonical import JSONValue, canonical_bytes, definition_hash
from toolpin.core.render import visible
from toolpin.errors import InputError

MAX_FILE_BYTES: Final = 8 * 1024 * 1024
MAX_TOTAL_BYTES: Final = 64 * 1024 * 1024
MAX_FILES: Final = 2000
MAX_DEPTH: Final = 16
SKILL_FILE: Final = "SKILL.md"

FileType = Literal["text", "binary", "link"]


class SkillError(InputError):
    """A skill folder toolpin cannot pin as it is (exit 2, one line)."""


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One entry of a skill folder: ``path`` relative to it, with ``/`` separators."""

    path: str
    type: FileType
    sha256: str
    size: int
    target: str | None = None
    """A link's target, as written in the link."""

    def to_json(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {
            "path": self.path,
            "type": self.type,
            "sha256": self.sha256,
            "size": self.size,
        }
        if self.target is not None:
            out["target"] = self.target
        return out


@dataclass(frozen=True)
class SkillTree:
    """A skill folder as read: its files (sorted), the text of its text files, and
    ``SKILL.md`` as canonical data."""

    files: tuple[SkillFile, ...]
    texts: dict[str, str]
    document: dict[str, JSONValue]

    @property
    def digest(self) -> str:
        """The tree digest (see the module doc)."""
        return tree_digest(self.files)

    @property
    def skill_hash(self) -> str:
        """SHA-256 of the canonical JSON of ``SKILL.md``'s frontmatter and body."""
        return definition_hash(self.document)


def tree_digest(files: tuple[SkillFile, ...] | list[SkillFile]) -> str:
    """SHA-256 of the canonical JSON of the ``[path, type, sha256]`` triples, by path."""
    triples: JSONValue = [[f.path, f.type, f.sha256] for f in sorted(files, key=_order)]
    return hashlib.sha256(canonical_bytes(triples)).hexdigest()


def _order(file: SkillFile) -> bytes:
    return file.path.encode("utf-8")


def _fail(name: str, rel: str, reason: str) -> SkillError:
    where = f"{visible(name)}/{visible(rel)}" if rel else visible(name)
    return SkillError(f"cannot pin the skill {where}: {reason}")


def read_tree(root: str, *, name: str) -> SkillTree:
    """Read the skill folder ``root`` (``name`` is how errors call it)."""
    from toolpin.skills.frontmatter import FrontmatterError, skill_document

    real = os.path.realpath(root)
    if not os.path.isdir(real):
        raise _fail(name, "", "not a folder")
    files: list[SkillFile] = []
    texts: dict[str, str] = {}
    budget = [MAX_TOTAL_BYTES]
    _walk(real, "", 0, name, files, texts, budget)
    files.sort(key=_order)
    skill = next((f for f in files if f.path == SKILL_FILE), None)
    if skill is None or skill.type != "text":
        reason = "SKILL.md is not a UTF-8 text file" if skill else "it has no SKILL.md"
        raise _fail(name, "", reason)
    try:
        document = skill_document(texts[SKILL_FILE])
    except FrontmatterError as exc:
        raise _fail(name, SKILL_FILE, exc.message) from None
    return SkillTree(tuple(files), texts, document)


def _walk(
    folder: str,
    prefix: str,
    depth: int,
    name: str,
    files: list[SkillFile],
    texts: dict[str, str],
    budget: list[int],
) -> None:
    if depth > MAX_DEPTH:
        raise _fail(name, prefix, f"folders nested deeper than {MAX_DEPTH} levels")
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError as exc:
        raise _fail(
            name, prefix, f"cannot list it ({exc.strerror or type(exc).__name__})"
        ) from None
    for entry in entries:
        try:
            entry.name.encode("utf-8")
        except UnicodeEncodeError:
            raise _fail(name, prefix, "a file name is not valid UTF-8") from None
        rel = f"{prefix}/{entry.name}" if prefix else entry.name
        if len(files) >= MAX_FILES:
            raise _fail(name, "", f"more than {MAX_FILES} files")
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError as exc:
            raise _fail(name, rel, exc.strerror or type(exc).__name__) from None
        if stat.S_ISLNK(mode):
            files.append(_link(entry.path, rel, name))
        elif stat.S_ISDIR(mode):
            _walk(entry.path, rel, depth + 1, name, files, texts, budget)
        elif stat.S_ISREG(mode):
            files.append(_regular(entry.path, rel, name, texts, budget))
        else:
            raise _fail(name, rel, f"not a regular file ({_kind(mode)})")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "an unknown kind of entry"


def _link(path: str, rel: str, name: str) -> SkillFile:
    try:
        target = os.readlink(path)
    except OSError as exc:
        raise _fail(name, rel, exc.strerror or type(exc).__name__) from None
    try:
        data = target.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(name, rel, "a link target is not valid UTF-8") from None
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    if target.startswith(("/", "\\")) or os.path.isabs(target) or resolved.split("/")[0] == "..":
        raise _fail(name, rel, "a link that points outside the skill folder (refused)")
    return SkillFile(rel, "link", hashlib.sha256(data).hexdigest(), len(data), target)


def _regular(path: str, rel: str, name: str, texts: dict[str, str], budget: list[int]) -> SkillFile:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | os.O_CLOEXEC)
    except OSError as exc:
        raise _fail(name, rel, exc.strerror or type(exc).__name__) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _fail(name, rel, "changed while it was read")
        chunks: list[bytes] = []
        left = MAX_FILE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise _fail(name, rel, exc.strerror or type(exc).__name__) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        raise _fail(name, rel, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    budget[0] -= len(data)
    if budget[0] < 0:
        raise _fail(name, "", f"its files hold more than {MAX_TOTAL_BYTES // (1024 * 1024)} MiB")
    digest = hashlib.sha256(data).hexdigest()
    text = _text(data)
    if text is None:
        return SkillFile(rel, "binary", digest, len(data))
    texts[rel] = text
    return SkillFile(rel, "text", digest, len(data))


def _text(data: bytes) -> str | None:
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
