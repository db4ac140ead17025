"""``SKILL.md`` as canonical data: its YAML frontmatter (parsed safely, bounded) and body.

A ``SKILL.md`` that starts with a ``---`` line has frontmatter up to the next ``---``
line; the rest is the body. The frontmatter is parsed with PyYAML's safe loader, with
anchors and aliases refused (an alias can multiply a small text into a huge value) and a
size and depth bound, and reduced to JSON values: strings, integers in the exact range,
finite floats, booleans, null, lists and string-keyed mappings (dates become their ISO
text). Anything else is refused with a one-line reason.
"""

from __future__ import annotations

import datetime
import math
from typing import Any, Final

from toolpin.core.canonical import JSONValue
from toolpin.errors import InputError

MAX_FRONTMATTER_BYTES: Final = 64 * 1024
"""The longest frontmatter read (the Agent Skills limits make a real one a few hundred bytes)."""
MAX_DEPTH: Final = 16
_EXACT: Final = 2**53 - 1


class FrontmatterError(InputError):
    """A ``SKILL.md`` whose frontmatter cannot be read as plain data (exit 2)."""


def split(text: str) -> tuple[str | None, str]:
    """``(frontmatter, body)`` of a ``SKILL.md`` text; ``None`` when it has none."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r") == "---":
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    raise FrontmatterError("the frontmatter has no closing --- line")


def _refuse_aliases(yaml: Any, raw: str) -> None:
    """Refuse anchors and aliases, looking at the parser's events before anything is built."""
    for event in yaml.parse(raw, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise FrontmatterError("the frontmatter uses a YAML anchor or alias (refused)")


def parse(raw: str) -> JSONValue:
    """The frontmatter ``raw`` as a JSON value (see the module doc)."""
    import yaml  # type: ignore[import-untyped]

    if len(raw.encode("utf-8", "surrogatepass")) > MAX_FRONTMATTER_BYTES:
        raise FrontmatterError(f"the frontmatter is longer than {MAX_FRONTMATTER_BYTES} bytes")
    try:
        _refuse_aliases(yaml, raw)
        value = yaml.safe_load(raw)
    except FrontmatterError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise FrontmatterError(f"the frontmatter is not valid YAML{where}") from None
    except RecursionError:
        raise FrontmatterError("the frontmatter is nested too deeply") from None
    return _plain(value, 0)


def _plain(value: Any, depth: int) -> JSONValue:
    if depth > MAX_DEPTH:
        raise FrontmatterError(f"the frontmatter is nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if abs(value) > _EXACT:
            raise FrontmatterError("the frontmatter holds an integer too large to keep exactly")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FrontmatterError("the frontmatter holds a number that is not finite")
        return value
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(item, depth + 1) for item in value]
    if isinstance(value, dict):
        out: dict[str, JSONValue] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise FrontmatterError("the frontmatter has a key that is not text")
            out[key] = _plain(item, depth + 1)
        return out
    raise FrontmatterError(f"the frontmatter holds a {type(value).__name__} value")


def skill_document(text: str) -> dict[str, JSONValue]:
    """``{"frontmatter": ..., "body": ...}``: what the skill hash covers."""
    head, body = split(text)
    return {"frontmatter": None if head is None else parse(head), "body": body}
