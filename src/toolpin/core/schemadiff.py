"""Structural, direction-aware diff of two JSON Schemas (one MCP tool's input or output schema).

:func:`diff_schema` compares the pinned and the observed schema and returns one
:class:`SchemaFinding` per changed fact: what changed, where (a dotted path as
mcp-tool-pin-check 0.2.2 prints it, plus an RFC 6901 JSON Pointer), an mcp-warden-style
class, and whether the new schema now accepts (``direction="input"``) or may produce
(``direction="output"``) more than the pin ("widened"). :func:`finding_line` renders the
human line; for the kinds mcp-tool-pin-check has, the text is byte-identical to its own.

Why hand-written: no chosen dependency diffs JSON Schema, and the candidates measured in
``research/ecosystem.md`` (jsoncompat, jsonschema-diff, deepdiff) either ignore description
changes or know nothing about schema semantics. This module is stdlib only and does no I/O.

Principles (the rule table lives in ``docs/schemadiff.md``):

* Values follow JavaScript number semantics: ``1`` and ``1.0`` (and ``0`` and ``-0.0``) are
  the same value; ``true`` and ``1`` are not. Object member order carries no meaning.
* Every difference between the two values yields at least one finding; a rule that cannot
  explain a difference falls back to ``keyword_changed`` / ``value_changed``.
* Each rule knows the local *effect* of a change (relaxes, tightens, neutral, unknown).
  Whether that widens the whole schema depends on the *polarity* of the place: inside
  ``not`` a relaxation tightens; inside ``if`` any semantic change may widen. "Unknown"
  effects (a comparison that could not be finished) count as widened: fail closed.
* In-document ``$ref`` is followed on both sides with a budget and cycle detection; the work
  is bounded by ``max_depth`` and ``max_refs`` and never raises on any JSON value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Final, Literal, TypeGuard
from urllib.parse import unquote

import orjson as _orjson

__all__ = ["Direction", "SchemaFinding", "diff_schema", "finding_line"]

Direction = Literal["input", "output"]


@dataclass(frozen=True, slots=True)
class SchemaFinding:
    """One changed fact between the pinned and the observed schema."""

    kind: str
    """What changed, e.g. ``property_added``, ``enum_loosened``, ``type_broadened``."""
    path: str
    """Dotted path relative to the schema root, as mcp-tool-pin-check prints it."""
    pointer: str
    """RFC 6901 JSON Pointer to the same place (``""`` is the root)."""
    cls: str
    """mcp-warden-style class, e.g. ``schema-property-added``."""
    widened: bool
    """The new schema accepts (input) / may produce (output) more than the pin."""
    detail: str
    """Short detail, e.g. ``added "archived"``, ``5 -> 10``, ``false -> absent``."""


# ---------------------------------------------------------------------------------------------
# Constants

_DEPTH_CAP: Final = 160
"""Hard ceiling on ``max_depth`` so the recursive walk stays far from Python's stack limit."""

_STEP_BUDGET: Final = 25_000
"""Most schema pairs compared in one diff; past it one ``value_changed`` finding ends the walk."""

_DETAIL_LIMIT: Final = 80

_OUTPUT_ENUM_TAIL: Final = "; a new output enum value can break downstream exhaustive switches"


class _Missing:
    """Marker for an absent member (distinct from JSON ``null``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"


_MISSING: Final = _Missing()
_EMPTY: Final[dict[str, object]] = {}

# Local effect of one change.
_RELAX: Final = "relax"
_TIGHTEN: Final = "tighten"
_NEUTRAL: Final = "neutral"
_UNKNOWN: Final = "unknown"

# Polarity of a place in the schema: inside `not` a relaxation tightens, inside `if` any
# semantic change may widen.
_POS: Final = 1
_NEG: Final = -1
_COND: Final = 0

_FIRST_KEYWORDS: Final = (
    "properties",
    "required",
    "enum",
    "maxLength",
    "pattern",
    "additionalProperties",
)
_COSMETIC: Final = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
    }
)
_OPAQUE: Final = frozenset(
    {
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$dynamicRef",
        "$recursiveAnchor",
        "$recursiveRef",
        "$vocabulary",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)
_UPPER_BOUNDS: Final = frozenset(
    {"maxLength", "maxItems", "maxContains", "maxProperties", "maximum"}
)
_LOWER_BOUNDS: Final = frozenset(
    {"minLength", "minItems", "minContains", "minProperties", "minimum"}
)
_SUBSCHEMA_POLARITY: Final[dict[str, int]] = {
    "not": _NEG,
    "if": _COND,
    "then": _POS,
    "else": _POS,
    "contains": _POS,
    "propertyNames": _POS,
    "additionalItems": _POS,
    "unevaluatedItems": _POS,
    "unevaluatedProperties": _POS,
}
_MAP_SINGULAR: Final[dict[str, str]] = {
    "patternProperties": "patternProperty",
    "$defs": "definition",
    "definitions": "definition",
    "dependentSchemas": "dependentSchema",
    "dependencies": "dependency",
}
_INTEGRAL_FLOAT = re.compile(r"[0-9]\.0(?![0-9])|[0-9]e[+-]?[0-9]")
"""Text json.dumps may give a float that equals an integer (``1.0``, ``-0.0``, ``1e+16``)."""
_INTEGRAL_BYTES = re.compile(rb"[0-9]\.0(?![0-9])|[0-9]e[+-]?[0-9]")
"""The same in orjson's bytes (``1.0``, ``-0.0``, ``1e16``)."""
_ARRAY_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")

_Seg = str | int
_Path = tuple[_Seg, ...]


# ---------------------------------------------------------------------------------------------
# Small value helpers


def _is_num(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _num_text(value: float) -> str:
    """A number as JavaScript would print it for integral values, else Python's repr."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer():
        return str(int(value))
    return repr(value)


def _short(text: str, limit: int = _DETAIL_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _scalar_canon(value: object) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return _num_text(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return "?" + json.dumps(repr(value), ensure_ascii=False)


def _key_text(key: object) -> str:
    return key if isinstance(key, str) else str(key)


def _trivially_true(schema: object) -> bool:
    """True for a schema that accepts everything (``true``, ``{}``, annotations only)."""
    if schema is True:
        return True
    return isinstance(schema, dict) and all(k in _COSMETIC for k in schema)


def _string_members(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]


def _ap_state(schema: dict[object, object]) -> str:
    """``open`` / ``closed`` / ``schema`` for the ``additionalProperties`` of one object."""
    ap = schema.get("additionalProperties", _MISSING)
    if ap is _MISSING or _trivially_true(ap):
        return "open"
    if ap is False:
        return "closed"
    return "schema"


def _py_str(value: object) -> str:
    """Detail text of an added/removed scalar, as mcp-tool-pin-check prints it (``str``)."""
    if value is _MISSING or value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int | float):
        return _num_text(value)
    if isinstance(value, str):
        return _short(value)
    return _short(_canon_text(value))


def _py_repr(value: object) -> str:
    """Detail text of a replaced scalar, as mcp-tool-pin-check prints it (``repr``)."""
    if isinstance(value, str):
        return _short(repr(value))
    return _py_str(value)


def _canon_text(value: object) -> str:
    """Canonical JSON text of a value: sorted keys, compact, JS numbers, raw non-ASCII.

    One iterative pass (no recursion limit, linear in the size of the value). Used for
    details and for the sort order of enum values, never for equality.
    """
    out: list[str] = []
    busy: set[int] = set()
    stack: list[tuple[bool, object]] = [(False, value)]
    while stack:
        literal, item = stack.pop()
        if literal:
            if isinstance(item, str):
                out.append(item)
            else:
                busy.discard(id(item))  # end of a container
            continue
        if not isinstance(item, dict | list | tuple):
            out.append(_scalar_canon(item))
            continue
        if id(item) in busy:  # a Python-level cycle: not JSON, but never loop
            out.append('"<cycle>"')
            continue
        busy.add(id(item))
        stack.append((True, item))
        if isinstance(item, dict):
            pairs = sorted(((_key_text(k), v) for k, v in item.items()), key=_first)
            stack.append((True, "}"))
            for index in range(len(pairs) - 1, -1, -1):
                key, member = pairs[index]
                stack.append((False, member))
                stack.append((True, json.dumps(key, ensure_ascii=False) + ":"))
                if index:
                    stack.append((True, ","))
            stack.append((True, "{"))
        else:
            stack.append((True, "]"))
            for index in range(len(item) - 1, -1, -1):
                stack.append((False, item[index]))
                if index:
                    stack.append((True, ","))
            stack.append((True, "["))
    return "".join(out)


class _Interner:
    """Gives every distinct JSON value an integer: equal values (JS semantics) get equal ids.

    Hash-consing: a container's key is built from its members' ids, so each subtree is
    processed once, iteratively, and equality anywhere in the walk is an integer compare.
    Memo entries keep their object alive, so an ``id()`` cannot be reused meanwhile.
    """

    __slots__ = ("_ids", "_memo")

    _CYCLE: Final = -1

    def __init__(self) -> None:
        self._ids: dict[tuple[object, ...], int] = {}
        self._memo: dict[int, tuple[object, int]] = {}

    def _intern(self, key: tuple[object, ...]) -> int:
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        return found

    def _known(self, item: object) -> int | None:
        if not isinstance(item, dict | list | tuple):
            return self._intern(("s", _scalar_canon(item)))
        hit = self._memo.get(id(item))
        return hit[1] if hit is not None and hit[0] is item else None

    def id_of(self, value: object) -> int:
        known = self._known(value)
        if known is not None:
            return known
        busy: set[int] = set()
        stack: list[tuple[bool, object]] = [(False, value)]
        while stack:
            done, item = stack.pop()
            if self._known(item) is not None:
                continue
            assert isinstance(item, dict | list | tuple)
            members = list(item.values()) if isinstance(item, dict) else list(item)
            if not done:
                busy.add(id(item))
                stack.append((True, item))
                stack.extend(
                    (False, m)
                    for m in members
                    if isinstance(m, dict | list | tuple) and id(m) not in busy
                )
                continue
            busy.discard(id(item))
            key: tuple[object, ...]
            if isinstance(item, dict):
                entries = sorted((_key_text(k), self._member(v)) for k, v in item.items())
                key = ("d", *entries)
            else:
                key = ("l", *map(self._member, members))
            self._memo[id(item)] = (item, self._intern(key))
        found = self._known(value)
        return self._CYCLE if found is None else found

    def _member(self, value: object) -> int:
        known = self._known(value)
        return self._CYCLE if known is None else known


def _first(pair: tuple[str, object]) -> str:
    return pair[0]


def _resolve(root: object, ref: object) -> object:
    """Resolve an in-document ``$ref`` ("#", "#/a/b~1c", percent-encoded); else _MISSING."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return _MISSING
    fragment = unquote(ref[1:])
    if fragment == "":
        return root
    if not fragment.startswith("/"):
        return _MISSING  # plain-name fragments ($anchor) are not resolved
    current = root
    for raw in fragment[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict):
            if token not in current:
                return _MISSING
            current = current[token]
        elif isinstance(current, list):
            if not _ARRAY_INDEX.match(token) or int(token) >= len(current):
                return _MISSING
            current = current[int(token)]
        else:
            return _MISSING
    return current


def _dotted(path: _Path) -> str:
    parts: list[str] = []
    for seg in path:
        if isinstance(seg, int):
            parts.append(f"[{seg}]")
        else:
            parts.append(("." if parts else "") + seg)
    return "".join(parts)


def _pointer(path: _Path) -> str:
    return "".join("/" + str(seg).replace("~", "~0").replace("/", "~1") for seg in path)


def _compose(parent: int, child: int) -> int:
    if _COND in (parent, child):
        return _COND
    return parent * child


def _widened(effect: str, polarity: int) -> bool:
    if effect == _NEUTRAL:
        return False
    if effect == _UNKNOWN or polarity == _COND:
        return True
    return effect == (_RELAX if polarity == _POS else _TIGHTEN)


def _effect_cls(effect: str) -> str:
    if effect == _RELAX:
        return "schema-constraint-relaxed"
    if effect == _TIGHTEN:
        return "schema-constraint-tightened"
    return "schema-modified"


def _bound(schema: dict[object, object], upper: bool) -> tuple[float, int] | None:
    """The tightest effective bound (value, strictness key) from the plain and exclusive forms.

    For an upper bound a larger key is looser; for a lower bound a smaller key is looser.
    """
    plain = schema.get("maximum" if upper else "minimum", _MISSING)
    excl = schema.get("exclusiveMaximum" if upper else "exclusiveMinimum", _MISSING)
    candidates: list[tuple[float, int]] = []
    if _is_num(plain) and not _is_nan(plain):
        strict = excl is True  # draft-4 boolean form
        candidates.append((plain, (0 if strict else 1) if upper else (1 if strict else 0)))
    if _is_num(excl) and not _is_nan(excl):
        candidates.append((excl, 0 if upper else 1))
    if not candidates:
        return None
    return min(candidates) if upper else max(candidates)


def _bound_effect(old: dict[object, object], new: dict[object, object], upper: bool) -> str:
    before, after = _bound(old, upper), _bound(new, upper)
    if before == after:
        return _NEUTRAL
    if after is None:
        return _RELAX
    if before is None:
        return _TIGHTEN
    looser = after > before if upper else after < before
    return _RELAX if looser else _TIGHTEN


def _exact(value: float) -> Fraction | None:
    if isinstance(value, int):
        return Fraction(value)
    if not math.isfinite(value):
        return None
    try:
        return Fraction(Decimal(repr(value)))
    except (InvalidOperation, ValueError):
        return None


# ---------------------------------------------------------------------------------------------
# The walk


@dataclass(frozen=True, slots=True)
class _Site:
    """Two schema objects being compared at one place."""

    old: dict[object, object]
    new: dict[object, object]
    path: _Path
    depth: int
    polarity: int


_Handler = Callable[["_Walker", str, object, object, _Site], None]


class _Walker:
    def __init__(
        self,
        old_root: object,
        new_root: object,
        direction: Direction,
        max_depth: int,
        max_refs: int,
    ) -> None:
        self.old_root = old_root
        self.new_root = new_root
        self.direction = direction
        self.max_depth = max_depth
        self.refs_left = max_refs
        self.steps_left = _STEP_BUDGET
        self.findings: list[SchemaFinding] = []
        self.ids = _Interner()
        self.keep: list[object] = []  # temporaries whose ids are memoised
        self.active: set[tuple[int, int]] = set()

    # -- emitting ---------------------------------------------------------------------------

    def emit(
        self,
        kind: str,
        path: _Path,
        effect: str,
        polarity: int,
        detail: str,
        cls: str | None = None,
    ) -> None:
        self.findings.append(
            SchemaFinding(
                kind=kind,
                path=_dotted(path),
                pointer=_pointer(path),
                cls=cls if cls is not None else _effect_cls(effect),
                widened=_widened(effect, polarity),
                detail=detail,
            )
        )

    def changed(
        self, kw: str, site: _Site, detail: str | None = None, cls: str | None = None
    ) -> None:
        self.emit(
            "keyword_changed",
            (*site.path, kw),
            _NEUTRAL,
            site.polarity,
            kw if detail is None else detail,
            cls or "schema-modified",
        )

    # -- values -----------------------------------------------------------------------------

    def same(self, old: object, new: object) -> bool:
        if old is new:
            return True
        if old is _MISSING or new is _MISSING:
            return False
        if not isinstance(old, dict | list | tuple) and not isinstance(new, dict | list | tuple):
            return _scalar_canon(old) == _scalar_canon(new)
        # Fast path: orjson (one encoder, so one spelling per value). Equal text is equal
        # JSON, unless it holds a null (orjson writes NaN and the infinities so). Different
        # text is different JSON unless an integral float (1.0, -0.0, 1e16) may hide a
        # JS-equal number. What orjson cannot write takes the standard library encoder.
        try:
            old_bytes = _orjson.dumps(old, option=_orjson.OPT_SORT_KEYS)
            new_bytes = _orjson.dumps(new, option=_orjson.OPT_SORT_KEYS)
        except TypeError:  # orjson.JSONEncodeError: a big integer, a non-str key, a cycle
            pass
        else:
            if old_bytes == new_bytes:
                if b"null" not in old_bytes:
                    return True
            elif not (_INTEGRAL_BYTES.search(old_bytes) or _INTEGRAL_BYTES.search(new_bytes)):
                return False
        try:
            old_text = json.dumps(old, sort_keys=True, ensure_ascii=False)
            new_text = json.dumps(new, sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            pass
        else:
            if old_text == new_text:
                return True
            if not (_INTEGRAL_FLOAT.search(old_text) or _INTEGRAL_FLOAT.search(new_text)):
                return False
        return self.ids.id_of(old) == self.ids.id_of(new)

    def text(self, value: object) -> str:
        if value is _MISSING:
            return "absent"
        return _short(_canon_text(value))

    # -- schema level -----------------------------------------------------------------------

    def walk(self, old: object, new: object, path: _Path, depth: int, polarity: int) -> None:
        if self.same(old, new):
            return
        self.steps_left -= 1
        if self.steps_left < 0:
            if self.steps_left == -1:
                self.emit("value_changed", path, _UNKNOWN, polarity, "comparison limit reached")
            return
        if depth > self.max_depth:
            self.emit("value_changed", path, _UNKNOWN, polarity, "schema nesting limit reached")
            return
        if isinstance(old, bool) or isinstance(new, bool):
            self.boolean(old, new, path, depth, polarity)
            return
        if not isinstance(old, dict) or not isinstance(new, dict):
            self.emit("value_changed", path, _NEUTRAL, polarity, "schema value replaced")
            return
        if self.inline_ref(old, new, path, depth, polarity):
            return
        before = len(self.findings)
        site = _Site(old, new, path, depth, polarity)
        keys = set(old) | set(new)
        order: list[object] = [kw for kw in _FIRST_KEYWORDS if kw in keys]
        order += sorted((k for k in keys if k not in _FIRST_KEYWORDS), key=_key_text)
        for kw in order:
            o, n = old.get(kw, _MISSING), new.get(kw, _MISSING)
            if self.same(o, n):
                continue
            if not isinstance(kw, str):
                self.emit(
                    "keyword_changed",
                    (*path, _key_text(kw)),
                    _NEUTRAL,
                    polarity,
                    _key_text(kw),
                    "schema-modified",
                )
                continue
            _HANDLERS.get(kw, _unknown_keyword)(self, kw, o, n, site)
        if len(self.findings) == before:  # never leave a difference unexplained
            self.emit("value_changed", path, _NEUTRAL, polarity, "representation changed")

    def boolean(self, old: object, new: object, path: _Path, depth: int, polarity: int) -> None:
        def form(value: object) -> str:
            if isinstance(value, bool):
                return "true" if value else "false"
            return "schema" if isinstance(value, dict) else "other"

        detail = f"{form(old)} -> {form(new)}"
        if isinstance(old, bool) and isinstance(new, bool):
            effect = _RELAX if new else _TIGHTEN
        elif old is False and isinstance(new, dict):
            effect = _RELAX
        elif isinstance(old, dict) and new is False:
            effect = _TIGHTEN
        elif old is True and isinstance(new, dict):
            self.emit("boolean_schema_changed", path, _NEUTRAL, polarity, detail)
            self.walk(_EMPTY, new, path, depth + 1, polarity)
            return
        elif isinstance(old, dict) and new is True:
            self.emit("boolean_schema_changed", path, _NEUTRAL, polarity, detail)
            self.walk(old, _EMPTY, path, depth + 1, polarity)
            return
        else:
            self.emit("value_changed", path, _NEUTRAL, polarity, "schema value replaced")
            return
        self.emit("boolean_schema_changed", path, effect, polarity, detail)

    # -- $ref -------------------------------------------------------------------------------

    def follow(
        self, old: object, new: object, key: tuple[int, int], path: _Path, depth: int, pol: int
    ) -> None:
        """Walk two resolved targets, with cycle detection and the reference budget."""
        if key in self.active:
            self.emit("value_changed", path, _NEUTRAL, pol, "reference cycle")
            return
        if self.refs_left <= 0:
            self.emit("value_changed", path, _UNKNOWN, pol, "reference limit reached")
            return
        self.refs_left -= 1
        self.active.add(key)
        try:
            self.walk(old, new, path, depth + 1, pol)
        finally:
            self.active.discard(key)

    def inline_ref(
        self,
        old: dict[object, object],
        new: dict[object, object],
        path: _Path,
        depth: int,
        polarity: int,
    ) -> bool:
        """A schema replaced by a pure ``$ref`` (or the reverse): compare through the target."""
        if ("$ref" in old) == ("$ref" in new):
            return False
        ref_side, is_old = (old, True) if "$ref" in old else (new, False)
        if any(k != "$ref" and k not in _COSMETIC for k in ref_side):
            return False
        ref = ref_side["$ref"]
        target = _resolve(self.old_root if is_old else self.new_root, ref)
        if target is _MISSING:
            return False
        self.emit(
            "ref_removed" if is_old else "ref_added",
            (*path, "$ref"),
            _NEUTRAL,
            polarity,
            _short(str(ref)),
            "schema-ref-inlined",
        )
        view: object = target
        siblings = {k: v for k, v in ref_side.items() if k != "$ref"}
        if siblings and isinstance(target, dict):
            view = {**target, **siblings}
            self.keep.append(view)
        if is_old:
            self.follow(view, new, (id(target), id(new)), path, depth, polarity)
        else:
            self.follow(old, view, (id(old), id(target)), path, depth, polarity)
        return True


# ---------------------------------------------------------------------------------------------
# Keyword handlers: (walker, keyword, old value, new value, site); values may be _MISSING.


def _objects(
    w: _Walker, kw: str, o: object, n: object, site: _Site
) -> tuple[dict[Any, Any], dict[Any, Any]] | None:
    """Both sides of a keyword whose value is an object (an absent one is empty); ``None``
    when either side is something else, which is recorded as a plain change."""
    old = _EMPTY if o is _MISSING else o
    new = _EMPTY if n is _MISSING else n
    if not isinstance(old, dict) or not isinstance(new, dict):
        w.changed(kw, site)
        return None
    return old, new


def _properties(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    sides = _objects(w, kw, o, n, site)
    if sides is None:
        return
    old, new = sides
    required = set(_string_members(site.new.get("required")))
    # A new required output member widens the output only if the pin closed the object.
    required_effect = (
        _RELAX if w.direction == "output" and _ap_state(site.old) != "open" else _TIGHTEN
    )
    for name in sorted(new.keys() - old.keys(), key=_key_text):
        optional = name not in required
        effect = _RELAX if optional else required_effect
        cls = (
            "schema-unconstrained-added" if _trivially_true(new[name]) else "schema-property-added"
        )
        detail = "optional" if optional else "required"
        w.emit(
            "property_added", (*site.path, kw, _key_text(name)), effect, site.polarity, detail, cls
        )
    for name in sorted(old.keys() - new.keys(), key=_key_text):
        w.emit(
            "property_removed",
            (*site.path, kw, _key_text(name)),
            _NEUTRAL,
            site.polarity,
            _key_text(name),
            "schema-property-removed",
        )
    for name in sorted(old.keys() & new.keys(), key=_key_text):
        w.walk(
            old[name], new[name], (*site.path, kw, _key_text(name)), site.depth + 1, site.polarity
        )


def _required(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    old_names, new_names = set(_string_members(o)), set(_string_members(n))
    path = (*site.path, kw)
    before = len(w.findings)
    for name in sorted(old_names - new_names):
        w.emit("required_removed", path, _RELAX, site.polarity, name, "schema-required-removed")
    declared = site.new.get("properties")
    for name in sorted(new_names - old_names):
        cls = (
            "schema-required-added"
            if isinstance(declared, dict) and name in declared
            else "schema-required-unconstrained-added"
        )
        w.emit("required_added", path, _TIGHTEN, site.polarity, name, cls)
    if len(w.findings) > before:
        return
    if (
        isinstance(o, list)
        and isinstance(n, list)
        and sorted(map(w.ids.id_of, o)) == sorted(map(w.ids.id_of, n))
    ):
        w.emit(
            "required_reordered",
            path,
            _NEUTRAL,
            site.polarity,
            "order changed",
            "schema-cosmetic-modified",
        )
    else:
        w.changed(kw, site)


def _enum(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    path = (*site.path, kw)
    pol = site.polarity
    if isinstance(o, list) and n is _MISSING:
        w.emit("enum_removed", path, _RELAX, pol, "enum removed", "schema-enum-removed")
    elif o is _MISSING and isinstance(n, list):
        w.emit("enum_added", path, _TIGHTEN, pol, "enum added", "schema-enum-added")
    elif isinstance(o, list) and isinstance(n, list):
        old_ids = {w.ids.id_of(v): v for v in o}
        new_ids = {w.ids.id_of(v): v for v in n}
        added = sorted(_canon_text(v) for i, v in new_ids.items() if i not in old_ids)
        removed = sorted(_canon_text(v) for i, v in old_ids.items() if i not in new_ids)
        if added:
            w.emit(
                "enum_loosened",
                path,
                _RELAX,
                pol,
                "added " + ", ".join(added),
                "schema-enum-widened",
            )
        if removed:
            w.emit(
                "enum_tightened",
                path,
                _TIGHTEN,
                pol,
                "removed " + ", ".join(removed),
                "schema-enum-narrowed",
            )
        if not added and not removed:
            w.emit(
                "enum_reordered",
                path,
                _NEUTRAL,
                pol,
                "order or duplicates changed",
                "schema-cosmetic-modified",
            )
    else:
        w.emit("enum_changed", path, _NEUTRAL, pol, "enum changed", "schema-modified")


def _number_change(kw: str, o: object, n: object, upper: bool) -> tuple[str, str, str]:
    """(kind, local effect, detail) of a numeric bound, by mcp-tool-pin-check's maxLength rules."""
    if _is_num(o) and _is_num(n):
        detail = f"{_num_text(o)} -> {_num_text(n)}"
        if n > o if upper else n < o:
            return f"{kw}_loosened", _RELAX, detail
        if n < o if upper else n > o:
            return f"{kw}_tightened", _TIGHTEN, detail
        return f"{kw}_changed", _NEUTRAL, detail  # NaN
    if _is_num(o) and n is _MISSING:
        return f"{kw}_removed", _RELAX, _py_str(o)
    if o is _MISSING:
        return f"{kw}_added", _TIGHTEN, _py_str(n)
    return f"{kw}_changed", _NEUTRAL, f"{_py_repr(o)} -> {_py_repr(n)}"


def _numeric(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    """maxLength (exactly as mcp-tool-pin-check) and every other numeric bound."""
    upper = kw in _UPPER_BOUNDS
    kind, local, detail = _number_change(kw, o, n, upper)
    effect = _bound_effect(site.old, site.new, upper) if kw in ("maximum", "minimum") else local
    w.emit(kind, (*site.path, kw), effect, site.polarity, detail, _effect_cls(local))


def _exclusive(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    """exclusiveMaximum/-Minimum: numeric (draft 6+) or the draft-4 boolean modifier.

    Whether it widens is decided by the effective bound together with maximum/minimum.
    """
    upper = kw == "exclusiveMaximum"
    if not isinstance(o, bool) and not isinstance(n, bool):
        kind, local, detail = _number_change(kw, o, n, upper)
    else:
        detail = f"{_py_repr(o)} -> {_py_repr(n)}"
        flag_forms = all(v is _MISSING or isinstance(v, bool) for v in (o, n))
        if flag_forms and o is True:
            kind, local = (f"{kw}_removed" if n is _MISSING else f"{kw}_loosened"), _RELAX
        elif flag_forms and n is True:
            kind, local = (f"{kw}_added" if o is _MISSING else f"{kw}_tightened"), _TIGHTEN
        else:
            kind, local = f"{kw}_changed", _NEUTRAL
    effect = _bound_effect(site.old, site.new, upper)
    w.emit(kind, (*site.path, kw), effect, site.polarity, detail, _effect_cls(local))


def _multiple_of(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    path, pol = (*site.path, kw), site.polarity
    if _is_num(o) and _is_num(n):
        detail = f"{_num_text(o)} -> {_num_text(n)}"
        before, after = _exact(o), _exact(n)
        if before is None or after is None or before <= 0 or after <= 0:
            w.emit(f"{kw}_changed", path, _NEUTRAL, pol, detail)
        elif (before / after).denominator == 1:  # every old multiple is a new multiple
            w.emit(f"{kw}_loosened", path, _RELAX, pol, detail)
        elif (after / before).denominator == 1:
            w.emit(f"{kw}_tightened", path, _TIGHTEN, pol, detail)
        else:
            w.emit(f"{kw}_changed", path, _UNKNOWN, pol, detail, "schema-modified")
    elif _is_num(o) and n is _MISSING:
        w.emit(f"{kw}_removed", path, _RELAX, pol, _py_str(o))
    elif o is _MISSING:
        w.emit(f"{kw}_added", path, _TIGHTEN, pol, _py_str(n))
    else:
        w.emit(f"{kw}_changed", path, _NEUTRAL, pol, f"{_py_repr(o)} -> {_py_repr(n)}")


def _pattern(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    path, pol = (*site.path, kw), site.polarity
    if isinstance(o, str) and n is _MISSING:
        w.emit("pattern_removed", path, _RELAX, pol, "pattern removed")
    elif o is _MISSING:
        w.emit("pattern_added", path, _TIGHTEN, pol, "pattern added")
    else:  # regex containment is not decided: a replacement is never called a widening
        w.emit("pattern_changed", path, _NEUTRAL, pol, "pattern replaced")


def _format(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    path, pol = (*site.path, kw), site.polarity
    if isinstance(o, str) and n is _MISSING:
        w.emit(f"{kw}_removed", path, _RELAX, pol, w.text(o))
    elif o is _MISSING:
        w.emit(f"{kw}_added", path, _TIGHTEN, pol, w.text(n))
    elif isinstance(o, str) and isinstance(n, str):
        w.emit(f"{kw}_changed", path, _UNKNOWN, pol, f"{w.text(o)} -> {w.text(n)}")
    else:
        w.emit(f"{kw}_changed", path, _NEUTRAL, pol, f"{w.text(o)} -> {w.text(n)}")


def _additional_properties(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    def state(value: object) -> str:
        if value is _MISSING:
            return "absent"
        if isinstance(value, bool):
            return "true" if value else "false"
        return "schema" if isinstance(value, dict) else "other"

    before, after = state(o), state(n)
    path, pol = (*site.path, kw), site.polarity
    if before == "schema" and after == "schema":
        w.walk(o, n, path, site.depth + 1, pol)
        return
    detail = f"{before} -> {after}"
    opened = (before in ("false", "schema") and after in ("true", "absent")) or (
        before == "false" and after == "schema"
    )
    if opened:
        w.emit(
            "additionalProperties_widened",
            path,
            _RELAX,
            pol,
            detail,
            "schema-additional-props-opened",
        )
    elif before in ("true", "absent") and after in ("true", "absent"):
        w.emit(
            "additionalProperties_changed", path, _NEUTRAL, pol, detail, "schema-cosmetic-modified"
        )
    elif (before in ("true", "absent") and after in ("false", "schema")) or (
        before == "schema" and after == "false"
    ):
        w.emit(
            "additionalProperties_changed",
            path,
            _TIGHTEN,
            pol,
            detail,
            "schema-additional-props-closed",
        )
    else:
        w.emit("additionalProperties_changed", path, _NEUTRAL, pol, detail, "schema-modified")


def _type(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    def names(value: object) -> set[str] | _Missing | None:
        if value is _MISSING:
            return None  # any type
        if isinstance(value, str):
            return {value}
        if isinstance(value, list) and all(isinstance(t, str) for t in value):
            return {t for t in value if isinstance(t, str)}
        return _MISSING  # not a type value: opaque

    def covers(types: set[str], name: str) -> bool:
        return name in types or (name == "integer" and "number" in types)

    before, after = names(o), names(n)
    path, pol = (*site.path, kw), site.polarity
    detail = f"{w.text(o)} -> {w.text(n)}"
    if isinstance(before, _Missing) or isinstance(after, _Missing):
        w.changed(kw, site)
    elif before is None:
        w.emit("type_added", path, _TIGHTEN, pol, w.text(n), "schema-type-narrowed")
    elif after is None:
        w.emit("type_removed", path, _RELAX, pol, w.text(o), "schema-type-broadened")
    else:
        gained = any(not covers(before, t) for t in after)
        lost = any(not covers(after, t) for t in before)
        if gained and lost:
            w.emit("type_changed", path, _UNKNOWN, pol, detail, "schema-type-changed")
        elif gained:
            w.emit("type_broadened", path, _RELAX, pol, detail, "schema-type-broadened")
        elif lost:
            w.emit("type_narrowed", path, _TIGHTEN, pol, detail, "schema-type-narrowed")
        else:
            w.emit("type_restated", path, _NEUTRAL, pol, detail, "schema-cosmetic-modified")


def _const(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    path, pol = (*site.path, kw), site.polarity
    if n is _MISSING:
        w.emit("const_removed", path, _RELAX, pol, w.text(o))
    elif o is _MISSING:
        w.emit("const_added", path, _TIGHTEN, pol, w.text(n))
    else:
        w.emit(
            "const_changed", path, _UNKNOWN, pol, f"{w.text(o)} -> {w.text(n)}", "schema-modified"
        )


def _flag(tight_when_true: bool) -> _Handler:
    """Boolean keywords: ``uniqueItems`` (true is tighter), ``nullable`` (true is looser)."""

    def handler(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
        path, pol = (*site.path, kw), site.polarity
        detail = f"{w.text(o)} -> {w.text(n)}"
        flags = all(v is _MISSING or isinstance(v, bool) for v in (o, n))
        if not flags or (o is True) == (n is True):
            w.emit(f"{kw}_changed", path, _NEUTRAL, pol, detail)
            return
        relaxes = (o is True) == tight_when_true
        if relaxes:
            kind = f"{kw}_removed" if n is _MISSING else f"{kw}_loosened"
            w.emit(kind, path, _RELAX, pol, detail)
        else:
            kind = f"{kw}_added" if o is _MISSING else f"{kw}_tightened"
            w.emit(kind, path, _TIGHTEN, pol, detail)

    return handler


def _tail_open(schema: dict[object, object], tail_kw: str) -> bool:
    return _trivially_true(schema.get(tail_kw, True))


def _subschema(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    """One subschema keyword: not, if/then/else, contains, propertyNames, items, ..."""
    path, pol = (*site.path, kw), site.polarity
    if kw == "items" and (isinstance(o, list) or isinstance(n, list)):
        if isinstance(o, list) and isinstance(n, list):
            _schema_list(w, kw, o, n, site)
            return
        if o is not _MISSING and n is not _MISSING:
            w.changed(kw, site)
            return
    if o is _MISSING or n is _MISSING:
        added = o is _MISSING
        value = n if added else o
        if kw == "if":
            has_branches = any(k in s for s in (site.old, site.new) for k in ("then", "else"))
            effect = _UNKNOWN if has_branches else _NEUTRAL
        elif kw != "not" and _trivially_true(value):
            effect = _NEUTRAL
        else:
            effect = _TIGHTEN if added else _RELAX
        w.emit(f"{kw}_added" if added else f"{kw}_removed", path, effect, pol, kw)
        return
    w.walk(o, n, path, site.depth + 1, _compose(pol, _SUBSCHEMA_POLARITY.get(kw, _POS)))


def _branch_effect(kw: str, added: bool, site: _Site) -> str:
    if kw in ("anyOf", "oneOf"):
        return _RELAX if added else _TIGHTEN
    if kw == "allOf":
        return _TIGHTEN if added else _RELAX
    # positional: prefixItems, items (array form); the tail keyword decides past the end
    tail_kw = "items" if kw == "prefixItems" else "additionalItems"
    if _tail_open(site.new if added else site.old, tail_kw):
        return _TIGHTEN if added else _RELAX
    return _UNKNOWN


def _schema_list(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    """anyOf / oneOf / allOf (matched, order-free) and prefixItems / items (positional)."""
    path, pol = (*site.path, kw), site.polarity
    if o is _MISSING:
        w.emit(f"{kw}_added", path, _TIGHTEN, pol, kw)
        return
    if n is _MISSING:
        w.emit(f"{kw}_removed", path, _RELAX, pol, kw)
        return
    if not isinstance(o, list) or not isinstance(n, list):
        w.changed(kw, site)
        return
    before = len(w.findings)
    pairs: list[tuple[int, int]] = []
    if kw in ("anyOf", "oneOf", "allOf"):
        # identical branches pair up wherever they moved; the rest pair up in order
        by_value: dict[int, list[int]] = {}
        for i in range(len(o) - 1, -1, -1):
            by_value.setdefault(w.ids.id_of(o[i]), []).append(i)
        matched: set[int] = set()
        unmatched_new: list[int] = []
        for j, value in enumerate(n):
            bucket = by_value.get(w.ids.id_of(value))
            if bucket:
                matched.add(bucket.pop())
            else:
                unmatched_new.append(j)
        unmatched_old = [i for i in range(len(o)) if i not in matched]
        pairs = list(zip(unmatched_old, unmatched_new, strict=False))
        extra_new = unmatched_new[len(pairs) :]
        extra_old = unmatched_old[len(pairs) :]
    else:
        common = min(len(o), len(n))
        pairs = [(i, i) for i in range(common)]
        extra_new = list(range(common, len(n)))
        extra_old = list(range(common, len(o)))
    events: list[tuple[int, int]] = [(j, i) for i, j in pairs]
    events += [(j, -1) for j in extra_new]
    for j, i in sorted(events):
        if i >= 0:
            w.walk(o[i], n[j], (*path, j), site.depth + 1, pol)
        else:
            effect = _branch_effect(kw, True, site)
            w.emit("branch_added", (*path, j), effect, pol, kw, "schema-branch-added")
    for i in extra_old:
        effect = _branch_effect(kw, False, site)
        w.emit("branch_removed", (*path, i), effect, pol, kw, "schema-branch-removed")
    if len(w.findings) == before:
        w.emit("branches_reordered", path, _NEUTRAL, pol, kw, "schema-cosmetic-modified")


def _name_lists(w: _Walker, base: str, o: object, n: object, path: _Path, pol: int) -> None:
    """Two lists of property names (dependentRequired / dependencies entries)."""
    if not isinstance(o, list) or not isinstance(n, list):
        w.emit("keyword_changed", path, _NEUTRAL, pol, str(path[-1]), "schema-modified")
        return
    old_names, new_names = set(_string_members(o)), set(_string_members(n))
    removed, added = sorted(old_names - new_names), sorted(new_names - old_names)
    if removed:
        w.emit(f"{base}_loosened", path, _RELAX, pol, "removed " + ", ".join(removed))
    if added:
        w.emit(f"{base}_tightened", path, _TIGHTEN, pol, "added " + ", ".join(added))
    if not removed and not added:
        w.emit(
            f"{base}_reordered", path, _NEUTRAL, pol, "order changed", "schema-cosmetic-modified"
        )


def _schema_map(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    """Name -> subschema maps: patternProperties, $defs, definitions, dependentSchemas, ..."""
    sides = _objects(w, kw, o, n, site)
    if sides is None:
        return
    old, new = sides
    singular, pol = _MAP_SINGULAR[kw], site.polarity

    def effect(added: bool, value: object) -> str:
        if kw in ("$defs", "definitions"):
            return _NEUTRAL
        if kw == "patternProperties":
            state = _ap_state(site.new if added else site.old)
            if state == "open":
                return _NEUTRAL if _trivially_true(value) else (_TIGHTEN if added else _RELAX)
            return (_RELAX if added else _TIGHTEN) if state == "closed" else _UNKNOWN
        if _trivially_true(value) or value == []:
            return _NEUTRAL
        return _TIGHTEN if added else _RELAX

    def cls(added: bool, eff: str) -> str:
        if kw in ("$defs", "definitions"):
            return "schema-definition-added" if added else "schema-definition-removed"
        return _effect_cls(eff)

    for added, side, other in ((True, new, old), (False, old, new)):
        event = f"{singular}_added" if added else f"{singular}_removed"
        for name in sorted(side.keys() - other.keys(), key=_key_text):
            eff = effect(added, side[name])
            text = _key_text(name)
            w.emit(event, (*site.path, kw, text), eff, pol, _short(text), cls(added, eff))
    for name in sorted(old.keys() & new.keys(), key=_key_text):
        a, b = old[name], new[name]
        path = (*site.path, kw, _key_text(name))
        if w.same(a, b):
            continue
        if kw == "dependencies" and (isinstance(a, list) or isinstance(b, list)):
            _name_lists(w, singular, a, b, path, pol)
        else:
            w.walk(a, b, path, site.depth + 1, pol)


def _dependent_required(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    sides = _objects(w, kw, o, n, site)
    if sides is None:
        return
    old, new = sides
    pol = site.polarity
    for event, side, other, moved in (
        (f"{kw}_added", new, old, _TIGHTEN),
        (f"{kw}_removed", old, new, _RELAX),
    ):
        for name in sorted(side.keys() - other.keys(), key=_key_text):
            eff = _NEUTRAL if side[name] == [] else moved
            text = _key_text(name)
            w.emit(event, (*site.path, kw, text), eff, pol, _short(text))
    for name in sorted(old.keys() & new.keys(), key=_key_text):
        if not w.same(old[name], new[name]):
            _name_lists(w, kw, old[name], new[name], (*site.path, kw, _key_text(name)), pol)


def _ref(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    path, pol = (*site.path, kw), site.polarity
    if isinstance(o, str) and isinstance(n, str):
        old_target = _resolve(w.old_root, o)
        new_target = _resolve(w.new_root, n)
        resolved = old_target is not _MISSING and new_target is not _MISSING
        detail = f"{_short(o, 60)} -> {_short(n, 60)}"
        effect = _NEUTRAL if resolved else _UNKNOWN
        w.emit("ref_retargeted", path, effect, pol, detail, "schema-ref-retargeted")
        if resolved:
            w.follow(
                old_target, new_target, (id(old_target), id(new_target)), path, site.depth, pol
            )
    elif isinstance(o, str) and n is _MISSING:
        target = _resolve(w.old_root, o)
        effect = _NEUTRAL if target is not _MISSING and _trivially_true(target) else _RELAX
        w.emit("ref_removed", path, effect, pol, _short(o), "schema-constraint-relaxed")
    elif o is _MISSING and isinstance(n, str):
        target = _resolve(w.new_root, n)
        effect = _NEUTRAL if target is not _MISSING and _trivially_true(target) else _TIGHTEN
        w.emit("ref_added", path, effect, pol, _short(n), "schema-constraint-tightened")
    else:
        w.changed(kw, site)


def _cosmetic(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    w.changed(kw, site, cls="schema-cosmetic-modified")


def _dollar_schema(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    w.changed(kw, site, cls="schema-version-migrated")


def _opaque(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    w.changed(kw, site)


def _unknown_keyword(w: _Walker, kw: str, o: object, n: object, site: _Site) -> None:
    """Not a keyword this module knows: walked like mcp-tool-pin-check does.

    Object values are compared as schemas and lists of objects index by index, keeping the
    parent's polarity: a validator that knows the keyword may apply it, so fail closed.
    """
    path = (*site.path, kw)
    if isinstance(o, dict) and isinstance(n, dict):
        w.walk(o, n, path, site.depth + 1, site.polarity)
        return
    if (
        isinstance(o, list)
        and isinstance(n, list)
        and ((o and isinstance(o[0], dict)) or (n and isinstance(n[0], dict)))
    ):
        for i in range(max(len(o), len(n))):
            if i < len(o) and i < len(n):
                w.walk(o[i], n[i], (*path, i), site.depth + 1, site.polarity)
            else:
                w.emit(
                    "keyword_changed",
                    (*path, i),
                    _NEUTRAL,
                    site.polarity,
                    "branch added or removed",
                    "schema-modified",
                )
        return
    w.changed(kw, site)


_HANDLERS: Final[dict[str, _Handler]] = {
    "properties": _properties,
    "required": _required,
    "enum": _enum,
    "pattern": _pattern,
    "format": _format,
    "additionalProperties": _additional_properties,
    "type": _type,
    "const": _const,
    "multipleOf": _multiple_of,
    "exclusiveMaximum": _exclusive,
    "exclusiveMinimum": _exclusive,
    "uniqueItems": _flag(tight_when_true=True),
    "nullable": _flag(tight_when_true=False),
    "items": _subschema,
    "anyOf": _schema_list,
    "oneOf": _schema_list,
    "allOf": _schema_list,
    "prefixItems": _schema_list,
    "dependentRequired": _dependent_required,
    "$ref": _ref,
    "$schema": _dollar_schema,
    **dict.fromkeys(_UPPER_BOUNDS | _LOWER_BOUNDS, _numeric),
    **dict.fromkeys(_SUBSCHEMA_POLARITY, _subschema),
    **dict.fromkeys(_MAP_SINGULAR, _schema_map),
    **dict.fromkeys(_COSMETIC, _cosmetic),
    **dict.fromkeys(_OPAQUE, _opaque),
}


# ---------------------------------------------------------------------------------------------
# Public API


def diff_schema(
    old: object,
    new: object,
    *,
    direction: Direction = "input",
    max_depth: int = 64,
    max_refs: int = 256,
) -> list[SchemaFinding]:
    """Compare the pinned schema ``old`` with the observed schema ``new``.

    Returns one finding per changed fact, in a deterministic order (mcp-tool-pin-check's
    keyword order first: properties, required, enum, maxLength, pattern,
    additionalProperties, then the other keywords sorted; depth-first). Equal values (JSON
    equality with JavaScript number semantics) give ``[]``; different values give at least
    one finding. Never raises for any JSON value.

    ``max_depth`` bounds the schema nesting walked (capped at 160); ``max_refs`` bounds the
    number of ``$ref`` targets followed. Either limit gives a ``value_changed`` finding.
    """
    if direction not in ("input", "output"):
        raise ValueError("direction must be 'input' or 'output'")
    walker = _Walker(old, new, direction, max(0, min(max_depth, _DEPTH_CAP)), max(0, max_refs))
    try:
        walker.walk(old, new, (), 0, _POS)
    except RecursionError:  # pragma: no cover - guarded by _DEPTH_CAP
        walker.emit("value_changed", (), _UNKNOWN, _POS, "schema nesting limit reached")
    return walker.findings


_TEXT: Final[dict[str, Callable[[SchemaFinding], str]]] = {
    "property_added": lambda f: (
        f"property added: {f.path}" + (" (optional)" if f.detail == "optional" else "")
    ),
    "property_removed": lambda f: f"property removed: {f.path}",
    "required_removed": lambda f: (
        f"required removed: {f.detail}" + ("" if f.path == "required" else f" ({f.path})")
    ),
    "required_added": lambda f: (
        f"required added: {f.detail}" + ("" if f.path == "required" else f" ({f.path})")
    ),
    "enum_loosened": lambda f: f"enum loosened: {f.path} ({f.detail})",
    "enum_tightened": lambda f: f"enum tightened: {f.path} ({f.detail})",
    "enum_removed": lambda f: f"enum removed: {f.path}",
    "maxLength_loosened": lambda f: f"maxLength loosened: {f.path} ({f.detail})",
    "maxLength_tightened": lambda f: f"maxLength tightened: {f.path} ({f.detail})",
    "maxLength_removed": lambda f: f"maxLength removed: {f.path} ({f.detail})",
    "pattern_removed": lambda f: f"pattern removed: {f.path}",
    "additionalProperties_widened": lambda f: (
        f"additionalProperties widened: {f.path} ({f.detail})"
    ),
}


def _plain_text(f: SchemaFinding) -> str:
    render = _TEXT.get(f.kind)
    return render(f) if render is not None else f"{f.kind}: {f.path} ({f.detail})"


def finding_line(f: SchemaFinding, *, direction: Direction = "input") -> str:
    """The human line for one finding, mcp-tool-pin-check compatible where it has the kind.

    Input: ``[widened] property added: properties.limit (optional)``. Output: the
    reference's sentence for a widened enum, ``output widened: <text>`` for other widenings
    and ``output changed: <text>`` otherwise. Paths and details may hold server text: pass
    the line through the render layer before printing it.
    """
    text = _plain_text(f)
    if direction == "output":
        if f.kind == "enum_loosened" and f.widened:
            return f"output widened: {f.path} ({f.detail}){_OUTPUT_ENUM_TAIL}"
        return ("output widened: " if f.widened else "output changed: ") + text
    return ("[widened] " if f.widened else "") + text
