"""Strict JSON parsing and the open "tool definition hash, version 1".

Everything toolpin compares is hashed here, and nowhere else:

* :func:`parse_json` reads bytes as I-JSON with JavaScript number semantics: a repeated
  member name at any depth, ``NaN``/``Infinity``, numbers that overflow a double, invalid
  UTF-8, unpaired surrogates (unless asked to keep them) and absurd nesting are errors
  with a one-line reason. Every number becomes the IEEE-754 double a JavaScript client
  would see; integral values come back as ``int`` so that ``1``, ``1.0`` and ``1E0`` are the
  same value everywhere in toolpin.
* :func:`canonical_json` is RFC 8785 (JCS): members sorted by UTF-16 code units, no
  whitespace, ECMAScript number formatting. The general path is the ``rfc8785`` package;
  almost every value takes a fast path through the standard library's C encoder (sorted
  keys, compact separators), whose output is the same bytes unless a number is spelled
  differently by Python and ECMAScript or member names sort differently by code point
  than by UTF-16 code unit. Both are detected on the encoder's output and re-done on the
  general path, so the fast path is an optimisation, never a different answer
  (property-tested against ``rfc8785`` on parsed values and on plain Python values).
* :func:`definition_hash`, :func:`set_hash`, :func:`instructions_hash` implement the
  hash spec (docs/hash-spec.md), reproducing every published vector.

Speed (issue 10): both directions have a second fast path through ``orjson`` that is only
ever a shortcut to the same answer. :func:`parse_json` (JavaScript numbers) first lets
``orjson`` parse; its value is kept only when it is provably what the strict parser returns
(orjson refuses NaN/Infinity, invalid UTF-8, every unpaired surrogate, control characters
and bad syntax, exactly as strictly as the grammar; toolpin then checks the nesting
depth, gives every number JavaScript semantics, and proves no member name was repeated by
counting string tokens: the document's against the parsed value's). Anything else, every
error included, goes through the strict parser, so results and messages are unchanged.
:func:`canonical_many_parsed` encodes parsed values with ``orjson`` (sorted keys), whose
output is RFC 8785 under the same two conditions the standard library encoder needs,
detected the same way.

This module is part of the pure core: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import orjson as _orjson

from toolpin.core.acyclic import collector_paused
from toolpin.errors import JSONError

JSONValue = Any
"""A parsed JSON value: dict (str keys), list, str, int, float, bool or None."""

MAX_DEPTH: Final = 128
EXPORT_DEPTH: Final = MAX_DEPTH + 8
"""The nesting a saved listing may have: a definition's own limit (:data:`MAX_DEPTH`,
counted from the definition itself, on every path: proxy, ``pin``, ``check``, ``hash``)
plus the levels a document wraps it in (pages, ``result``, the listing, its array)."""
"""Deepest nesting of arrays and objects accepted (MCP schemas rarely exceed 20)."""

MAX_DOCUMENT_BYTES: Final = 64 * 1024 * 1024
"""Largest JSON document accepted (a 10 MB description fits with room to spare)."""

EMPTY_SET_HASH: Final = hashlib.sha256(b"").hexdigest()

_SAFE_INTEGRAL = 1e16  # below this, str(int(x)) is exactly how ECMAScript writes x
_BOM = b"\xef\xbb\xbf"
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _Reject(Exception):
    """Raised inside the parser's hooks; turned into :class:`JSONError`."""


def _js_number(text: str) -> int | float:
    value = float(text)
    if math.isinf(value):
        raise _Reject("a number is too large for a double")
    if value.is_integer() and abs(value) < _SAFE_INTEGRAL:
        return int(value)
    return value


def _js_int(text: str) -> int | float:
    if len(text) < 16:
        return int(text)
    return _js_number(text)


def _reject_constant(name: str) -> None:
    raise _Reject(f"{name} is not JSON")


def _object_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Reject("a member name is repeated in an object")
    return obj


def unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook`` for :func:`json.loads` that refuses a repeated member name
    (``ValueError``), for parsers that keep Python's numbers (:func:`parse_json` has its own)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("a repeated member name")
    return obj


def sorted_members(value: JSONValue) -> JSONValue:
    """A copy of ``value`` with every object's members in RFC 8785 order (UTF-16 code
    units), for output people read (lockfiles); hashing never needs it."""
    kind = type(value)
    if kind is dict:
        return {k: sorted_members(value[k]) for k in sorted(value, key=utf16_key)}
    if kind is list:
        return [sorted_members(v) for v in value]
    return value


def utf16_key(text: str) -> bytes:
    """Sort key that orders strings by UTF-16 code units, as RFC 8785 and JavaScript do."""
    return text.encode("utf-16-be", "surrogatepass")


def _decode(data: bytes | str, *, allow_bom: bool) -> str:
    if isinstance(data, str):
        return data
    if len(data) > MAX_DOCUMENT_BYTES:
        raise JSONError(f"document is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    if data.startswith(_BOM):
        if not allow_bom:
            raise JSONError("document starts with a byte order mark")
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONError(f"not valid UTF-8 (byte offset {exc.start})") from None


def deeper_than(root: Any, limit: int) -> bool:
    """Whether ``root`` nests containers more than ``limit`` levels deep (itself at 1)."""
    try:
        _check_depth(root, limit)
    except JSONError:
        return True
    return False


def _check_depth(root: Any, limit: int) -> None:
    stack: list[tuple[Any, int]] = [(root, 1)]
    pop = stack.pop
    push = stack.append
    while stack:
        node, depth = pop()
        if depth > limit:
            raise JSONError(f"nested more than {limit} levels deep")
        children = node.values() if type(node) is dict else node
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                push((child, depth + 1))


def parse_json(
    data: bytes | str,
    *,
    allow_bom: bool = False,
    allow_lone_surrogates: bool = False,
    max_depth: int = MAX_DEPTH,
    numbers: str = "js",
) -> JSONValue:
    """Parse one JSON document strictly. Raises :class:`JSONError` with a one-line reason.

    ``numbers="js"`` (the default, used for everything toolpin hashes) reads numbers as
    JavaScript does: every number is the double a JavaScript client would hold, and an
    integral one comes back as ``int`` (so ``1``, ``1.0`` and ``1E0`` are one value).
    ``numbers="python"`` keeps Python's exact integers and float values; it exists only to
    verify lockfiles of mcp-tool-pin-check, whose hash recipe depends on Python's number
    formatting. Objects keep the document's member order in both modes (the canonical
    form sorts; :func:`sorted_members` sorts for display).
    """
    with collector_paused():  # a JSON tree holds no cycles (core/acyclic.py)
        if numbers == "js" and (type(data) is bytes or type(data) is str):
            fast = _fast_parse(data, allow_bom=allow_bom, max_depth=max_depth)
            if fast is not _FALLBACK:
                return fast
        return _strict_parse(
            data,
            allow_bom=allow_bom,
            allow_lone_surrogates=allow_lone_surrogates,
            max_depth=max_depth,
            numbers=numbers,
        )


def _strict_parse(
    data: bytes | str,
    *,
    allow_bom: bool,
    allow_lone_surrogates: bool,
    max_depth: int,
    numbers: str,
) -> JSONValue:
    text = _decode(data, allow_bom=allow_bom)
    if numbers == "js":
        parse_float: Any = _js_number
        parse_int: Any = _js_int
    elif numbers == "python":
        parse_float = _python_float
        parse_int = _python_int
    else:  # pragma: no cover - programming error
        raise ValueError(f"unknown number mode {numbers!r}")
    try:
        value = json.loads(
            text,
            object_pairs_hook=_object_hook,
            parse_float=parse_float,
            parse_int=parse_int,
            parse_constant=_reject_constant,
        )
    except _Reject as exc:
        raise JSONError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise JSONError(
            f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise JSONError(f"nested more than {max_depth} levels deep") from None
    except ValueError:  # a number the converters above could not read
        raise JSONError("not valid JSON: a number cannot be read") from None
    if type(value) is dict or type(value) is list:
        _check_depth(value, max_depth)
    if not allow_lone_surrogates and (
        _SURROGATE_ESCAPE.search(text) is not None
        or (isinstance(data, str) and _SURROGATE.search(text) is not None)
    ):
        # A surrogate escape may still be half of a valid pair: look at the values.
        _reject_lone_surrogates(value)
    return value


_FALLBACK: Final = object()
_MAX_EXACT = 2**53


def _fast_load(data: bytes | str, *, allow_bom: bool) -> Any:
    """``orjson``'s value of the document, numbers not yet settled, else _FALLBACK."""
    if isinstance(data, bytes):
        if len(data) > MAX_DOCUMENT_BYTES:
            return _FALLBACK
        if data.startswith(_BOM):
            if not allow_bom:
                return _FALLBACK
            data = data[3:]
    try:
        return _orjson.loads(data)
    except ValueError:  # orjson.JSONDecodeError: the strict parser explains it
        return _FALLBACK


def _fast_parse(data: bytes | str, *, allow_bom: bool, max_depth: int) -> Any:
    """``orjson``'s value when it is exactly what the strict parser returns, else _FALLBACK.

    Never raises: every fault (a syntax error, a repeated name, too deep, a lone
    surrogate, too large) is left to the strict parser, which words the error.
    """
    value = _fast_load(data, allow_bom=allow_bom)
    if value is _FALLBACK:
        return _FALLBACK
    if isinstance(data, bytes) and data.startswith(_BOM):
        data = data[3:]
    kind = type(value)
    if kind is dict or kind is list:
        settled = _settle(value, max_depth)
        # orjson keeps the last of repeated member names: then the value holds fewer
        # strings (member names and string values) than the document spells.
        if settled is None or 2 * settled[0] != _string_quotes(data):
            return _FALLBACK
        return value
    if kind is int or kind is float:
        return _js_value(value)
    return value


def _js_value(number: Any) -> Any:
    """A parsed number as :func:`_js_number` reads its text (orjson's floats are the
    correctly rounded doubles of the text, as ``float(text)``; its integers are exact)."""
    if type(number) is int:
        if -_MAX_EXACT <= number <= _MAX_EXACT:
            return number
        number = float(number)  # the double a JavaScript client would hold
    if number.is_integer() and abs(number) < _SAFE_INTEGRAL:
        return int(number)
    return number


def _settle(root: Any, limit: int, skip: frozenset[int] = frozenset()) -> tuple[int, int] | None:
    """Give every number JavaScript semantics in place and count the strings (member
    names and string values) in ``root``, without going into the containers whose ``id``
    is in ``skip``: (that count, the depth of the deepest skipped container, 0 if none),
    None when nested deeper than ``limit`` (containers only, the root at depth 1, as
    :func:`_check_depth`)."""
    level = [root]
    depth = 1
    strings = 0
    others = 0  # values that are not strings
    deepest = 0
    while level:
        if depth > limit:
            return None
        deeper: list[Any] = []
        push = deeper.append
        for node in level:
            if skip and id(node) in skip:
                deepest = depth
                continue
            numbers = False
            if type(node) is dict:
                children: Any = node.values()
                strings += 2 * len(node)
            else:
                children = node
                strings += len(node)
            for child in children:
                kind = type(child)
                if kind is str:
                    continue
                others += 1
                if kind is dict or kind is list:
                    push(child)
                elif kind is int or kind is float:
                    numbers = True
            if numbers:
                _settle_numbers(node)
        level = deeper
        depth += 1
    return strings - others, deepest


def _settle_numbers(node: Any) -> None:
    pairs = list(node.items()) if type(node) is dict else list(enumerate(node))
    for key, child in pairs:
        kind = type(child)
        if kind is int or kind is float:
            fixed = _js_value(child)
            if fixed is not child:
                node[key] = fixed


def parse_json_around(
    data: bytes,
    find: Callable[[JSONValue], Sequence[list[JSONValue]]],
    *,
    allow_bom: bool = False,
    max_depth: int = MAX_DEPTH,
) -> tuple[JSONValue, dict[int, bytes]] | None:
    """:func:`parse_json` of ``data`` together with the canonical bytes of every element of
    the arrays ``find`` picks out of the parsed value (keyed by ``id`` of the element),
    or None when that cannot be had this way (then parse with :func:`parse_json`, which
    words every error, and encode with :func:`canonical_many_parsed`).

    A saved listing is mostly its definitions, each of which is encoded anyway to be
    hashed; this reads the document's strictness off those encodings instead of walking
    the definitions a second time:

    * repeated member names: ``orjson`` keeps the last of them, so the value then holds
      fewer strings than the document spells. The strings outside the arrays are counted
      on the value, those inside from the quotes of their encodings;
    * nesting: the deepest array's own depth plus the deepest encoding's bracket depth;
    * numbers: the encodings must be canonical as they are (:func:`_orjson_is_canonical`:
      no integral or exponent-form double, no integer beyond 2^53, which are the numbers
      :func:`parse_json` gives JavaScript semantics). Numbers outside the arrays are
      settled in place, as :func:`parse_json` does.

    ``find`` may raise; any exception it raises is the caller's to handle.
    """
    value = _fast_load(data, allow_bom=allow_bom)
    if value is _FALLBACK or not (type(value) is dict or type(value) is list):
        return None
    arrays = find(value)
    settled = _settle(value, max_depth, frozenset(id(a) for a in arrays))
    if settled is None:
        return None
    strings, deepest = settled
    dumps = _orjson.dumps
    option = _ORJSON_OPTION
    encoded: dict[int, bytes] = {}
    outputs: list[bytes] = []
    try:
        for array in arrays:
            for element in array:
                out = dumps(element, option=option)
                encoded[id(element)] = out
                outputs.append(out)
    except TypeError:  # orjson.JSONEncodeError: the general path decides
        return None
    if not _orjson_is_canonical(b"]".join(outputs)):
        return None
    quotes, depth = _quotes_and_depth(b"".join(outputs), max_depth - deepest)
    body = data[3:] if data.startswith(_BOM) else data
    if 2 * strings + quotes != _string_quotes(body):
        return None  # a repeated member name (or something stranger): the strict parser
    if outputs and deepest + depth > max_depth:
        return None
    return value, encoded


_STRUCTURE_ONLY: Final = bytes(b for b in range(256) if b not in b'"[]{}')
_SQUARE: Final = bytes.maketrans(b"{}", b"[]")
_BRACKETED_STRING: Final = re.compile(rb'"[^"]*"')


def _quotes_and_depth(encoded: bytes, limit: int) -> tuple[int, int]:
    """(string quotes, nesting depth of arrays and objects) of compact JSON text; the depth
    is ``limit + 1`` when deeper than ``limit``.

    Escaped backslashes and quotes are dropped first, then every byte but quotes and
    brackets (one pass over the text; the rest is short); the quotes are counted there.
    Strings go next: adjacent quotes (an empty string, or two strings with nothing between,
    which only joins them), then the few strings left, which held brackets. What remains
    is the brackets themselves, and each pass that drops every innermost pair takes one
    level off.
    """
    text = encoded
    if 0x5C in text:
        text = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    text = text.translate(None, _STRUCTURE_ONLY)
    quotes = text.count(b'"')
    text = text.replace(b'""', b"")
    if 0x22 in text:
        text = _BRACKETED_STRING.sub(b"", text)
    text = text.translate(_SQUARE)
    depth = 0
    while text:
        if depth >= limit:
            return quotes, limit + 1
        text = text.replace(b"[]", b"")
        depth += 1
    return quotes, depth


def _string_quotes(doc: bytes | str) -> int:
    """Quote characters that open or close a string in a valid JSON document.

    Every backslash in valid JSON starts an escape inside a string, so once the escaped
    backslashes are dropped, the quotes left that follow a backslash are escaped ones.
    """
    if isinstance(doc, bytes):
        if b"\\" not in doc:
            return doc.count(b'"')
        doc = doc.replace(b"\\\\", b"")
        return doc.count(b'"') - doc.count(b'\\"')
    if "\\" not in doc:
        return doc.count('"')
    doc = doc.replace("\\\\", "")
    return doc.count('"') - doc.count('\\"')


def _python_int(text: str) -> int:
    if len(text) > 4000:  # below Python's int/str conversion limit, far beyond any pin
        raise _Reject("an integer has more than 4000 digits")
    return int(text)


def _python_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Reject("a number is too large for a double")
    return value


def _reject_lone_surrogates(root: Any) -> None:
    if not has_lone_surrogate(root):
        return
    raise JSONError("a string holds an unpaired surrogate (\\ud800-\\udfff escape)")


def has_lone_surrogate(root: Any) -> bool:
    """True when any string or member name in ``root`` holds an unpaired surrogate."""
    stack = [root]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is str:
            if _SURROGATE.search(node):
                return True
        elif kind is dict:
            for key, child in node.items():
                if _SURROGATE.search(key):
                    return True
                stack.append(child)
        elif kind is list:
            stack.extend(node)
    return False


def normalize(value: Any) -> JSONValue:
    """Bring any JSON-like Python value into the form :func:`parse_json` returns.

    Use it for values toolpin did not parse itself (built in code, loaded by another
    library). Raises :class:`JSONError` for values JSON cannot carry.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise JSONError(f"value has no JSON form: {exc}") from None
    return parse_json(text, allow_lone_surrogates=True)


# --------------------------------------------------------------------------- canonical form


def canonical_bytes(value: JSONValue) -> bytes:
    """UTF-8 bytes of the RFC 8785 form of ``value`` (what every hash is taken over).

    ``value`` is any JSON-like Python value (dicts with string keys, lists, strings,
    numbers, booleans, None); values from :func:`parse_json` take the fast path almost
    always. Unpaired surrogates are written as lowercase ``\\udxxx`` escapes, as the spec
    and ``JSON.stringify`` do. Raises :class:`JSONError` when the value has no canonical
    form (NaN, infinity, a non-string key, absurd nesting).
    """
    data = _fast_bytes(value)
    if data is None or _needs_general_path(data):
        return _general_canonical(value).encode("utf-8")
    return data


def canonical_many(values: Iterable[JSONValue]) -> list[bytes]:
    """:func:`canonical_bytes` of each value, checking the fast path once for all of them.

    The same bytes as calling :func:`canonical_bytes` on each (the check is run over the
    outputs joined by a separator that ends every number run; only if it fires anywhere
    is each output checked on its own).
    """
    values = list(values)
    fast = [_fast_bytes(v) for v in values]
    ready = [b for b in fast if b is not None]
    if len(ready) == len(fast) and not _needs_general_path(b"]".join(ready)):
        return ready
    return [
        _general_canonical(v).encode("utf-8") if b is None or _needs_general_path(b) else b
        for v, b in zip(values, fast, strict=True)
    ]


def canonical_parsed(value: JSONValue) -> bytes:
    """:func:`canonical_bytes` of one parsed value (see :func:`canonical_many_parsed`)."""
    try:
        data = _orjson.dumps(value, option=_ORJSON_OPTION)
    except TypeError:  # orjson.JSONEncodeError
        return canonical_bytes(value)
    if _orjson_is_canonical(data) or not _needs_general_path(data):
        return data
    return canonical_bytes(value)


def canonical_many_parsed(values: Sequence[JSONValue]) -> list[bytes]:
    """:func:`canonical_many` of parsed JSON: each value holds only dicts with string keys,
    lists, strings, ints, floats, booleans and None (what :func:`parse_json` or another
    JSON parser returns). The same bytes as :func:`canonical_bytes` of each.

    ``orjson`` encodes them (members sorted by code point, compact, UTF-8, escapes as
    RFC 8785 has them, shortest round-trip numbers); that is the RFC 8785 form unless a
    number is spelled differently or names sort differently by UTF-16 code unit, which
    :func:`_needs_general_path` detects as for the standard library encoder. Those values,
    and any orjson refuses (a lone surrogate, a non-string key, an integer beyond 64
    bits, deep nesting), take :func:`canonical_bytes`.
    """
    dumps = _orjson.dumps
    option = _ORJSON_OPTION
    out: list[bytes | None] = []
    for value in values:
        try:
            out.append(dumps(value, option=option))
        except TypeError:  # orjson.JSONEncodeError
            out.append(None)
    ready = [b for b in out if b is not None]
    if len(ready) == len(out):
        joined = b"]".join(ready)
        if _orjson_is_canonical(joined) or not _needs_general_path(joined):
            return ready
    return [
        canonical_bytes(v) if b is None or _needs_general_path(b) else b
        for v, b in zip(values, out, strict=True)
    ]


# STRICT_INTEGER refuses integers beyond 2^53, which ECMAScript may round: those take the
# general path, so every integer orjson writes is spelled as ECMAScript does.
_ORJSON_OPTION: Final = _orjson.OPT_SORT_KEYS | _orjson.OPT_STRICT_INTEGER
_DIGITS: Final = frozenset(b"0123456789")
_FIND_LIMIT: Final = 256


def _digit_then(data: bytes, pattern: bytes, ends: bytes | None) -> bool:
    """Whether ``pattern`` occurs right after a digit (and, with ``ends``, right before one
    of those bytes or the end): a number spelled so. Looks at each place ``find`` gives
    (fast when the pattern is rare); past a few hundred places, one byte-class scan."""
    index = data.find(pattern)
    seen = 0
    after = len(pattern)
    while index != -1:
        if index and data[index - 1] in _DIGITS:
            if ends is None:
                return True
            following = data[index + after : index + after + 1]
            if not following or following in ends:
                return True
        seen += 1
        if seen > _FIND_LIMIT:
            classes = data.translate(_CLASSES)
            if ends is None:
                return b"0e+" in classes
            return b"0.0," in classes or classes.endswith(b"0.0")
        index = data.find(pattern, index + 1)
    return False


def _orjson_is_canonical(data: bytes) -> bool:
    """True when orjson's output ``data`` is certainly RFC 8785 already (False: not sure).

    orjson writes integers as ECMAScript does (below 2^53, see STRICT_INTEGER) and
    floats with the shortest round-trip digits, so its spelling differs only in exponent
    form (always ``e+``/``e-`` after a digit) and for integral floats (``1.0``: ``.0``
    ending a number); names sort differently only with a character above U+FFFF (UTF-8
    lead byte F0-F4) and one in U+E000..U+FFFF (EE, EF). A string that merely looks like
    one of these makes this False, never wrong.
    """
    # A byte (an int) is looked for at memchr speed; "+" is rare in text, and "-" and
    # "." are then looked at only where they follow a digit.
    if 0x2B in data and _digit_then(data, b"e+", None):
        return False
    if 0x2D in data and _digit_then(data, b"e-", None):
        return False
    if 0x2E in data and _digit_then(data, b".0", b",]}"):
        return False
    if data.isascii():
        return True
    astral = 0xF0 in data or 0xF1 in data or 0xF2 in data or 0xF3 in data or 0xF4 in data
    return not (astral and (0xEE in data or 0xEF in data))


def _no_default(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _c_encoder() -> Any:
    # One C encoder object, built once: ``JSONEncoder.encode`` builds a new one per call.
    make = getattr(json.encoder, "c_make_encoder", None)
    quote = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or quote is None:  # pragma: no cover - CPython always has _json
        return None
    return make(None, _no_default, quote, None, ":", ",", True, False, False)


_C_ENCODER: Final = _c_encoder()


def _fast_bytes(value: JSONValue) -> bytes | None:
    """The C encoder's sorted compact UTF-8 (``None``: an unpaired surrogate is in it)."""
    try:
        kind = type(value)
        if _C_ENCODER is not None and (kind is dict or kind is list):
            text = "".join(_C_ENCODER(value, 0))
        else:
            text = _ENCODE(value)
    except RecursionError:
        raise JSONError("nested too deeply to canonicalize") from None
    except (TypeError, ValueError) as exc:
        raise JSONError(f"value has no canonical form: {exc}") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # an unpaired surrogate
        return None


# The fast path is the standard library's C encoder with sorted keys. Its output is the
# RFC 8785 form unless (a) a number is spelled differently by Python and ECMAScript: an
# exponent ("1e-07" / "1e-7", "1e+16" / "10000000000000000"), an integral float ("1.0" /
# "1"; never produced by parse_json) or an integer of 16 digits or more (exact in Python,
# maybe rounded in ECMAScript; parse_json never produces one beyond 2^53); or (b) member
# names sort differently by code point than by UTF-16 code unit, which needs a character
# above U+FFFF (UTF-8 lead byte F0-F4) and one in U+E000..U+FFFF (lead byte EE or EF) in
# the same text. All of it is read from one byte-class translation of the UTF-8 output.
# A test may fire on text inside a string; that only costs the general path.
def _reused_encoder() -> Callable[[Any], str]:
    """The C encoder built once: ``JSONEncoder.encode`` builds a new one on every call,
    which costs more than encoding a small definition. Same output, same errors."""
    general = json.JSONEncoder(
        ensure_ascii=False, separators=(",", ":"), allow_nan=False, sort_keys=True
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - a Python without the C accelerator
        return general.encode

    def default(value: Any) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    # markers=None: no cycle check (parsed JSON has no cycles; a cycle is a RecursionError)
    basestring = (
        getattr(json.encoder, "c_encode_basestring", None) or json.encoder.encode_basestring
    )
    c_encode = make(None, default, basestring, None, ":", ",", True, False, False)

    def encode(value: Any) -> str:
        if type(value) is str:
            return general.encode(value)
        chunks: list[str] = c_encode(value, 0)
        return "".join(chunks)

    return encode


_ENCODE: Final = _reused_encoder()


def _byte_classes() -> bytes:
    table = bytearray(b" " * 256)
    for byte in b"0123456789":
        table[byte] = ord("0")
    table[ord("e")] = ord("e")
    table[ord("+")] = table[ord("-")] = ord("+")
    table[ord(".")] = ord(".")
    for byte in b",}]":
        table[byte] = ord(",")
    for byte in range(0xF0, 0xF5):
        table[byte] = ord("A")
    table[0xEE] = table[0xEF] = ord("E")
    return bytes(table)


_CLASSES: Final = _byte_classes()
_LONG_INTEGER: Final = b"0" * 16


def _needs_general_path(data: bytes) -> bool:
    classes = data.translate(_CLASSES)
    return (
        b"0e+0" in classes
        or b"0.0," in classes
        or classes.endswith(b"0.0")
        or _LONG_INTEGER in classes
        or (b"A" in classes and b"E" in classes)
    )


def canonical_json(value: JSONValue) -> str:
    """The RFC 8785 form of ``value`` as text (see :func:`canonical_bytes`)."""
    return canonical_bytes(value).decode("utf-8")


def _general_canonical(value: JSONValue) -> str:
    import rfc8785  # only for the rare value the fast path cannot take

    if has_lone_surrogate(value):
        return "".join(_serialize_with_surrogates(value))
    try:
        return rfc8785.dumps(_for_rfc8785(value)).decode("utf-8")
    except rfc8785.CanonicalizationError as exc:
        raise JSONError(f"value has no canonical form: {exc}") from None
    except RecursionError:
        raise JSONError("nested too deeply to canonicalize") from None


_INT_LIMIT = 2**53 - 1


def _for_rfc8785(value: Any) -> Any:
    # rfc8785 refuses integers beyond 2^53-1; as doubles they format identically.
    kind = type(value)
    if kind is int and not -_INT_LIMIT <= value <= _INT_LIMIT:
        return float(value)
    if kind is dict:
        return {k: _for_rfc8785(v) for k, v in value.items()}
    if kind is list:
        return [_for_rfc8785(v) for v in value]
    return value


def _escape_string(text: str) -> str:
    body = json.dumps(text, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", body)


def _serialize_with_surrogates(value: Any) -> Iterable[str]:
    # Only for the rare value that carries unpaired surrogates (allowed by `toolpin hash`).
    kind = type(value)
    if kind is dict:
        yield "{"
        for index, key in enumerate(sorted(value, key=utf16_key)):
            if index:
                yield ","
            yield _escape_string(key)
            yield ":"
            yield from _serialize_with_surrogates(value[key])
        yield "}"
    elif kind is list:
        yield "["
        for index, item in enumerate(value):
            if index:
                yield ","
            yield from _serialize_with_surrogates(item)
        yield "]"
    elif kind is str:
        yield _escape_string(value)
    else:
        import rfc8785

        yield rfc8785.dumps(_for_rfc8785(value)).decode("ascii")


# ------------------------------------------------------------------------------- the hashes


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256."""
    return hashlib.sha256(data).hexdigest()


def definition_hash(value: JSONValue) -> str:
    """Hash of one definition: SHA-256 of its canonical form."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def _utf8(text: str) -> bytes:
    # WHATWG UTF-8 encode: an unpaired surrogate becomes U+FFFD.
    return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def set_hash(lines: Iterable[tuple[str, str]]) -> str:
    """Set hash of a listing from its ``(name, definition hash)`` pairs, in any order.

    Sorted by name in UTF-16 code units, ties by hash; ``name:hash`` lines joined by
    ``\\n`` with no trailing newline; SHA-256 of the UTF-8 text. Empty: hash of "".
    """
    return set_hash_of_sorted(sorted(lines, key=lambda pair: (utf16_key(pair[0]), pair[1])))


def set_hash_of_sorted(ordered: Sequence[tuple[str, str]]) -> str:
    """:func:`set_hash` of pairs already in its order (UTF-16 name order, ties by hash)."""
    text = "\n".join([f"{name}:{digest}" for name, digest in ordered])
    if text.isascii():
        return hashlib.sha256(text.encode("ascii")).hexdigest()
    return hashlib.sha256(_utf8(text)).hexdigest()


def instructions_hash(instructions: str | None) -> str | None:
    """SHA-256 of the instructions text exactly as received; ``None`` when there is none."""
    if instructions is None:
        return None
    return hashlib.sha256(_utf8(instructions)).hexdigest()


def pretty_json(value: JSONValue, *, indent: int = 2) -> str:
    """Canonical member order and number formatting, pretty-printed for people and diffs."""
    compact = canonical_json(value)
    try:
        fast = _ENCODE(value)
    except (TypeError, ValueError):  # pragma: no cover - canonical_json raised already
        fast = ""
    if fast == compact:
        return json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=True)
    # Re-indent the canonical text so numbers and member order stay as RFC 8785 has them.
    return _reindent(compact, indent)


def _reindent(compact: str, indent: int) -> str:
    out: list[str] = []
    depth = 0
    in_string = False
    escaped = False
    pad = " " * indent
    i = 0
    n = len(compact)
    while i < n:
        ch = compact[i]
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif ch in "{[":
            closing = "}" if ch == "{" else "]"
            if i + 1 < n and compact[i + 1] == closing:
                out.append(ch + closing)
                i += 2
                continue
            depth += 1
            out.append(ch + "\n" + pad * depth)
        elif ch in "}]":
            depth -= 1
            out.append("\n" + pad * depth + ch)
        elif ch == ",":
            out.append(",\n" + pad * depth)
        elif ch == ":":
            out.append(": ")
        else:
            out.append(ch)
        i += 1
    return "".join(out)
