"""Strict classification of one JSON-RPC line: the proxy's allow-list.

Every line a server writes goes through :func:`classify` exactly once, and only a line it
accepts may reach the client. A line is accepted when it is exactly one JSON-RPC 2.0
message of one of three shapes:

* request: ``jsonrpc``, ``id``, ``method`` (a string), optional ``params``;
* notification: ``jsonrpc``, ``method`` (a string), optional ``params``;
* response: ``jsonrpc``, ``id``, and exactly one of ``result`` (an object) or ``error``
  (an object with an integer ``code`` and a string ``message``), and no ``method``.

``jsonrpc`` is exactly ``"2.0"``; an id is a string or a finite number. No other top-level
member is accepted (so neither ``"method": null`` on a response nor a ``"Result"`` that a
case-folding reader such as Go's ``encoding/json`` would take for ``result``). Member
names are compared after JSON unescaping (``"res\\u0075lt"`` is ``result``), and a
repeated top-level member is refused.

Framing is newline-delimited: a line holds one value. Two values on a line, half a value,
a carriage return anywhere but just before the newline (readers that split on ``\\r``
would see two lines), invalid UTF-8, a byte order mark, ``NaN``/``Infinity`` and a batch
(a JSON array; MCP removed batches in 2025-06-18) are all refused.

Classification never depends on the interpreter's limits. The line is read by the
standard library's C scanner, member by member; a value the C scanner refuses only for
its size (an integer of more than 4,300 digits) or depth (past the recursion limit) is
re-read by :func:`validate`, an iterative validator with no depth or length limit other
than the line cap, and comes back as :data:`OPAQUE` (valid, not built). Such a message is
forwarded when nothing needs its content, and refused where its content must be checked
(the answer to a listing request).

``strict=True`` parses ``result`` for checking, and accepts exactly what Python's
``json``, JavaScript's ``JSON.parse`` and Go's ``encoding/json`` read alike
(docs/proxy.md, "What is accepted"): no member name repeated at any depth; no unpaired
surrogate escape (pairs, in either hex case, are what ``json.dumps`` writes for an emoji
and are accepted); numbers read as a JavaScript client reads them; and no two names that
Go would take for one struct field, checked only where Go decodes into a struct (a
definition's own fields, a schema's keywords, the error object) and only under the
folding Go applies (:mod:`toolpin.core.gofold`); names in free maps (``properties``,
``default``, ``_meta``...) are data. A result that fails the strict reading is re-read
plainly and flagged (:attr:`Message.strict` is ``False``, :attr:`Message.unfit` says
why and where, in toolpin's words), so an answer nobody checks is still forwarded.
"""

from __future__ import annotations

import enum
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from json import decoder as _decoder
from typing import Any, Final, TypeVar, cast

from toolpin.core.canonical import _js_int, _js_number, has_lone_surrogate
from toolpin.core.gofold import fold_keys, same_field

OPAQUE: Final = object()
"""A container value that is valid JSON but was not built (too deep or too large)."""


class Shape(enum.Enum):
    """The three message shapes."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"


class Unclassified(Exception):
    """A line that is not exactly one JSON-RPC message; never forwarded.

    ``reason`` is toolpin's own words (never text from the line); ``suspect`` is true when
    the line starts like a JSON value (``{`` or ``[``), so that a lenient reader might
    make a message of it; ``batch`` holds the members of a well-formed JSON array.
    """

    def __init__(self, reason: str, *, suspect: bool = True, batch: list[Any] | None = None):
        super().__init__(reason)
        self.reason = reason
        self.suspect = suspect
        self.batch = batch


@dataclass(slots=True, eq=False, repr=False)
class Message:
    """One classified message (``id`` and ``method`` are ``None`` when absent).

    Compared by identity, and with no ``repr`` of its own: its values are server text."""

    shape: Shape
    id: Any
    method: str | None
    params: Any
    result: Any
    error: Any
    strict: bool
    id_span: tuple[int, int] | None = None
    """Where the id's value is in the decoded line (``None`` if not known)."""
    unfit: str | None = field(default=None, init=False)
    """Why a result read for checking is not fit to check (toolpin's words, never the
    server's); ``None`` when it is, or when no check was asked for."""


class _Reject(Exception):
    pass


def _reject_constant(name: str) -> None:
    raise _Reject(f"{name} is not JSON")


_local = threading.local()
"""``suspects``: the objects of the result being read whose member names might fold
together (a Go client could take two of them for one struct field)."""


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Reject("a member name is repeated")
    if len(pairs) > 1:
        joined = "\x00".join(obj)
        if not joined.isascii():
            _local.suspects.append(obj)
        else:
            lower = joined.lower()
            if lower != joined and len(set(lower.split("\x00"))) != len(obj):
                _local.suspects.append(obj)
    return obj


_Scan = Callable[[str, int], tuple[Any, int]]
_R = TypeVar("_R")


def _scanner(**hooks: Any) -> _Scan:
    """The C scanner of a standard-library decoder with these hooks (``scan_once`` is the
    documented-by-source hook that ``raw_decode`` uses)."""
    return cast(_Scan, getattr(json.JSONDecoder(**hooks), "scan_once"))  # noqa: B009


# ``scanstring`` reads one string after its opening quote.
_plain_scan: Final = _scanner(parse_constant=_reject_constant)
_strict_scan: Final = _scanner(
    object_pairs_hook=_strict_object,
    parse_float=_js_number,
    parse_int=_js_int,
    parse_constant=_reject_constant,
)
scanstring: Final = cast(
    Callable[[str, int], tuple[str, int]],
    getattr(_decoder, "scanstring"),  # noqa: B009
)
_WS: Final = re.compile(r"[ \t\n\r]*")
_skip: Final = cast(Callable[[str, int], "re.Match[str]"], _WS.match)  # always matches
_WS_CHARS: Final = " \t\n\r"
_REQUEST_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_NOTIFICATION_KEYS: Final = frozenset({"jsonrpc", "method", "params"})
_RESULT_KEYS: Final = frozenset({"jsonrpc", "id", "result"})
_ERROR_KEYS: Final = frozenset({"jsonrpc", "id", "error"})
_ANSWER_KEYS: Final = frozenset({"id", "result", "error"})
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_ERROR_MEMBERS: Final = ("code", "message", "data")
"""The error object's members; others (``stack``, ``name`` of a JavaScript ``Error``)
are allowed unless a case-insensitive reader would take one for these."""
_TOO_BIG: Final = (
    "the result is nested too deeply or holds a number too long to read (over 4,300 digits)"
)


def after_value(text: str, i: int) -> tuple[str, int]:
    """What follows the value that ends at ``i``: the next character that is not
    whitespace, and where reading goes on (past the comma and its whitespace for a
    comma, else at that character)."""
    char = text[i]
    if char in _WS_CHARS:
        i = _skip(text, i).end()
        char = text[i]
    if char == ",":
        i += 1
        if text[i] in _WS_CHARS:
            i = _skip(text, i).end()
    return char, i


def _scan_failed(exc: BaseException) -> bool:
    """Whether the C scanner failed for a limit of the interpreter, not for bad JSON."""
    return isinstance(exc, RecursionError) or (
        type(exc) is ValueError and "digits" in str(exc)  # int() over 4,300 digits
    )


def classify(line: bytes, *, strict: bool = False) -> Message:
    """Classify one line (with or without its newline); raises :class:`Unclassified`."""
    body = line[:-1] if line.endswith(b"\n") else line
    if body.endswith(b"\r"):
        body = body[:-1]
    if b"\r" in body or b"\n" in body:
        raise Unclassified("a line holding a carriage return or line break")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Unclassified("a line that is not UTF-8") from None
    fast = _sdk_response(text, strict)
    if fast is not None:
        return fast
    members, unfit, span = _members(text, strict)
    try:
        msg = _shape(members, strict and unfit is None)
    except Unclassified as exc:
        # One JSON object but not a message: suspect only if a reader could take it
        # for an answer (a member that is, or case-folds to, id, result or error).
        exc.suspect = any(type(k) is str and k.casefold() in _ANSWER_KEYS for k in members)
        raise
    msg.id_span = span
    if strict and msg.result is not None:
        msg.unfit = unfit
    return msg


_ID_TOKEN: Final = r'(-?(?:0|[1-9][0-9]{0,14})|"[^"\\\x00-\x1f]{0,256}")'
_SDK_HEAD: Final = re.compile(r'\{"jsonrpc":"2\.0","id":' + _ID_TOKEN + r',"result":')
_SDK_TAIL: Final = re.compile(r',"jsonrpc":"2\.0","id":' + _ID_TOKEN + r"\}\Z")
_TS_HEAD: Final = '{"result":'


def sdk_envelope(
    text: str, read_result: Callable[[str, int], tuple[_R, int] | None]
) -> tuple[Any, tuple[int, int], _R] | None:
    """A response written the way the SDKs write one, its result read by ``read_result``.

    ``{"jsonrpc":"2.0","id":ID,"result":R}`` (Python, Go) and
    ``{"result":R,"jsonrpc":"2.0","id":ID}`` (TypeScript), with no whitespace and a plain
    id: the top level is then exactly these three members, so only ``R`` needs reading.
    ``read_result(text, i)`` reads ``R`` at ``i`` and gives it with where it ends, or
    ``None``. Returns ``(id, where the id is, R)``; ``None`` (anything else, or any
    failure of ``read_result``) sends the caller to the general path.
    """
    head = _SDK_HEAD.match(text)
    if head is not None:
        start, token, span = head.end(), head.group(1), head.span(1)
    elif text.startswith(_TS_HEAD):
        start, token, span = len(_TS_HEAD), "", (0, 0)
    else:
        return None
    try:
        read = read_result(text, start)
    except Exception:  # the general path says what is wrong
        return None
    if read is None:
        return None
    result, end = read
    if head is not None:
        if end != len(text) - 1 or text[end] != "}":
            return None
    else:
        tail = _SDK_TAIL.match(text, end)
        if tail is None:
            return None
        token, span = tail.group(1), tail.span(1)
    id_: Any = token[1:-1] if token[0] == '"' else int(token)
    return id_, span, result


def _object_result(scan: _Scan) -> Callable[[str, int], tuple[Any, int] | None]:
    def read(text: str, i: int) -> tuple[Any, int] | None:
        _local.suspects = []
        value, end = scan(text, i)
        return (value, end) if type(value) is dict else None

    return read


_strict_result: Final = _object_result(_strict_scan)
_plain_result: Final = _object_result(_plain_scan)


def _sdk_response(text: str, strict: bool) -> Message | None:
    """A response in one of the SDKs' two shapes (:func:`sdk_envelope`), read with one
    scan of the result; ``None`` takes the general path."""
    read = sdk_envelope(text, _strict_result if strict else _plain_result)
    if read is None:
        return None
    id_, span, result = read
    unfit = _unfit(result, text) if strict else None
    msg = Message(Shape.RESPONSE, id_, None, None, result, None, strict and unfit is None, span)
    msg.unfit = unfit
    return msg


def _first(text: str) -> str:
    start = _skip(text, 0).end()
    return text[start : start + 1]


def _members(text: str, strict: bool) -> tuple[dict[str, Any], str | None, tuple[int, int] | None]:
    """The top-level members of the line's one object (values parsed), and why the
    result failed the strict reading (``None`` if it did not)."""
    try:
        return _walk(text, strict)
    except _Reject as exc:
        raise Unclassified(f"a line that is not JSON ({exc})") from None
    except (ValueError, RecursionError, StopIteration, IndexError) as exc:
        if isinstance(exc, (ValueError, RecursionError)) and _scan_failed(exc):
            members = validate(text)  # big or deep: read without the interpreter's limits
            if members is None:
                raise Unclassified("a batch (JSON array)") from None
            return members, _TOO_BIG, None
        if _first(text) == "[":
            raise Unclassified("a malformed batch (JSON array)") from None
        # Suspect unless plainly not JSON (a log line): a brace may start a message.
        suspect = "{" in text or "[" in text
        raise Unclassified("a line that is not exactly one JSON value", suspect=suspect) from None


def _walk(text: str, strict: bool) -> tuple[dict[str, Any], str | None, tuple[int, int] | None]:
    """The members of the top-level object, why ``result`` failed the strict read
    (``None`` if it did not) and where the id's value is."""
    i = 0
    if text[0] in _WS_CHARS:
        i = _skip(text, 0).end()
    if text[i] != "{":
        if text[i] == "[":
            batch, end = _plain_scan(text, i)
            if _skip(text, end).end() != len(text):
                raise Unclassified("a malformed batch (JSON array)")
            objects = any(type(m) is dict for m in batch)
            raise Unclassified("a batch (JSON array)", suspect=objects, batch=batch)
        raise StopIteration(i)
    members: dict[str, Any] = {}
    unfit: str | None = None
    span: tuple[int, int] | None = None
    i += 1
    if text[i] in _WS_CHARS:
        i = _skip(text, i).end()
    if text[i] == "}":
        raise Unclassified("an empty JSON object")
    while True:
        if text[i] != '"':
            raise StopIteration(i)
        key, i = scanstring(text, i + 1)
        if text[i] != ":":
            i = _skip(text, i).end()
            if text[i] != ":":
                raise StopIteration(i)
        i += 1
        if text[i] in _WS_CHARS:
            i = _skip(text, i).end()
        if key in members:
            raise Unclassified("a repeated top-level member")
        if strict and key == "result":
            at = i
            _local.suspects = []
            try:
                value, i = _strict_scan(text, i)
            except Exception as exc:  # any failure of the strict reading: re-read plainly
                value, i = _plain_scan(text, i)
                unfit = _unfit_reading(text, at, exc)  # flagged: not fit to check
            else:
                unfit = _unfit(value, text)
        elif key == "id":
            at = i
            value, i = _plain_scan(text, i)
            span = (at, i)
        else:
            value, i = _plain_scan(text, i)
        members[key] = value
        char, i = after_value(text, i)
        if char == ",":
            continue
        if char != "}":
            raise StopIteration(i)
        break
    i += 1
    if i != len(text) and _skip(text, i).end() != len(text):
        raise Unclassified("a line holding more than one JSON value")
    return members, unfit, span


def _valid_id(value: Any) -> bool:
    kind = type(value)
    if kind is str or kind is int:
        return True
    return kind is float and value - value == 0.0  # finite


def _shape(members: dict[str, Any], strict: bool) -> Message:
    if members.get("jsonrpc") != "2.0" or type(members["jsonrpc"]) is not str:
        raise Unclassified("a line that is not JSON-RPC 2.0")
    keys = members.keys()
    if "method" in members:
        method = members["method"]
        if "result" in members or "error" in members:
            raise Unclassified("a response that also has a method member")
        if type(method) is not str:
            raise Unclassified("a message whose method is not a string")
        params = members.get("params")
        if params is not None and type(params) is not dict and params is not OPAQUE:
            raise Unclassified("a message whose params are not an object")
        if "id" in members:
            if not keys <= _REQUEST_KEYS:
                raise Unclassified("a request with a member JSON-RPC does not define")
            if not _valid_id(members["id"]):
                raise Unclassified("a request with an invalid id")
            return Message(Shape.REQUEST, members["id"], method, params, None, None, False)
        if not keys <= _NOTIFICATION_KEYS:
            raise Unclassified("a notification with a member JSON-RPC does not define")
        return Message(Shape.NOTIFICATION, None, method, params, None, None, False)
    if "result" in members:
        if keys != _RESULT_KEYS:
            raise Unclassified("a response that is not exactly jsonrpc, id and result")
        result = members["result"]
        if type(result) is not dict and result is not OPAQUE:
            raise Unclassified("a response whose result is not an object")
        if not _valid_id(members["id"]):
            raise Unclassified("a response with an invalid id")
        ok = strict and result is not OPAQUE
        return Message(Shape.RESPONSE, members["id"], None, None, result, None, ok)
    if "error" in members:
        if keys != _ERROR_KEYS:
            raise Unclassified("an error response that is not exactly jsonrpc, id and error")
        error = members["error"]
        if error is not OPAQUE:
            if not (
                type(error) is dict
                and type(error.get("code")) is int
                and type(error.get("message")) is str
            ):
                raise Unclassified("a response with a malformed error object")
            if len(error) > 2 and any(
                k not in _ERROR_MEMBERS and any(same_field(k, m) for m in _ERROR_MEMBERS)
                for k in error
            ):
                raise Unclassified(
                    "an error object with a member that a case-insensitive reader (Go's "
                    "encoding/json) takes for code, message or data"
                )
        if not _valid_id(members["id"]):
            raise Unclassified("an error response with an invalid id")
        return Message(Shape.RESPONSE, members["id"], None, None, None, error, False)
    raise Unclassified("a message that is neither a request, a notification nor a response")


# ------------------------------------------------------------ what the strict reading checks

_FIELDS: Final = frozenset(
    # The JSON-RPC error object, and the members MCP results and definitions have as
    # struct fields in the SDKs (Go's among them).
    [
        "code",
        "message",
        "data",
        "protocolVersion",
        "capabilities",
        "serverInfo",
        "instructions",
        "_meta",
        "name",
        "title",
        "version",
        "description",
        "icons",
        "websiteUrl",
        "src",
        "mimeType",
        "sizes",
        "theme",
        "tools",
        "prompts",
        "resources",
        "resourceTemplates",
        "nextCursor",
        "listChanged",
        "subscribe",
        "logging",
        "completions",
        "experimental",
        "tasks",
        "elicitation",
        "sampling",
        "roots",
        "inputSchema",
        "outputSchema",
        "annotations",
        "execution",
        "taskSupport",
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
        "arguments",
        "required",
        "uri",
        "uriTemplate",
        "size",
        "audience",
        "priority",
        "lastModified",
        # JSON Schema keywords (a Go client may read a schema into a struct).
        "type",
        "properties",
        "items",
        "additionalProperties",
        "additionalItems",
        "$schema",
        "$id",
        "$ref",
        "$defs",
        "definitions",
        "enum",
        "const",
        "default",
        "examples",
        "format",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "multipleOf",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "patternProperties",
        "propertyNames",
        "dependentSchemas",
        "dependentRequired",
        "dependencies",
        "contains",
        "minContains",
        "maxContains",
        "prefixItems",
        "unevaluatedProperties",
        "unevaluatedItems",
        "$comment",
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$vocabulary",
        "readOnly",
        "writeOnly",
        "deprecated",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    ]
)
_FREE_VALUES: Final = frozenset({"_meta", "experimental", "default", "examples", "enum", "const"})
"""Members whose values are data, never read into a struct: any names may stand there."""
_SCHEMA_MAPS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
"""Members whose values map free names (a property's name) to schemas."""
_GO121: Final = {fold_keys(f)[0]: f for f in _FIELDS}
_ORBIT: Final = {fold_keys(f)[1]: f for f in _FIELDS}


def _field(name: str) -> str | None:
    """The struct field a Go client would read ``name`` into, if any."""
    if name in _FIELDS:
        return name
    go121, orbit = fold_keys(name)
    return _GO121.get(go121) or _ORBIT.get(orbit)


def _folds_onto_field(obj: dict[str, Any]) -> bool:
    """Whether two member names of ``obj`` would set one struct field."""
    names = list(obj)
    for a in names:
        if _field(a) is None:
            continue
        for b in names:
            if b is not a and same_field(a, b):
                return True
    return False


def _part(name: str, index: int) -> str:
    """A path step named in toolpin's words: a known member by its name, any other by
    its position (a name the server chose is never repeated back)."""
    return f".{name}" if name in _FIELDS else f".(member {index + 1})"


def _struct_clash(result: dict[str, Any], suspects: list[dict[str, Any]]) -> str | None:
    """Where (a path) an object at a struct position has two names a Go client takes for
    one field; ``None`` if nowhere. Free maps and data (``properties``' names,
    ``default``, ``_meta``...) are ordinary data: any names may stand there."""
    ids = {id(o) for o in suspects}
    stack: list[tuple[Any, str]] = [(result, "result")]
    while stack:
        node, path = stack.pop()
        if type(node) is list:
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node) if type(v) in (dict, list))
            continue
        if id(node) in ids and _folds_onto_field(node):
            return path
        for j, (key, value) in enumerate(node.items()):
            if type(value) is not dict and type(value) is not list:
                continue
            field = _field(key)
            if field is None or field in _FREE_VALUES:
                continue  # never read into a struct (Go ignores unknown members)
            here = f"{path}{_part(key, j)}"
            if field in _SCHEMA_MAPS and type(value) is dict:
                stack.extend(
                    (v, f"{here}.(member {k + 1})")
                    for k, v in enumerate(value.values())
                    if type(v) in (dict, list)
                )
            else:
                stack.append((value, here))
    return None


def _find(root: Any, hit: Callable[[Any], bool]) -> str:
    """The path to the first value (or member name) for which ``hit`` is true."""
    stack: list[tuple[Any, str]] = [(root, "result")]
    while stack:
        node, path = stack.pop()
        if hit(node):
            return path
        if type(node) is list:
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(node))))
        elif isinstance(node, dict):
            for j, (key, value) in reversed(list(enumerate(node.items()))):
                here = f"{path}{_part(key, j)}"
                if hit(key):
                    return f"{here} (its name)"
                stack.append((value, here))
    return "result"


def _lone_surrogate(node: Any) -> bool:
    return type(node) is str and has_lone_surrogate(node)


def _unfit(result: Any, text: str) -> str | None:
    """Why a result the strict reader read is still not fit to check, or ``None``."""
    if _SURROGATE_ESCAPE.search(text) is not None and has_lone_surrogate(result):
        where = _find(result, _lone_surrogate)
        return (
            "a string holds an unpaired surrogate escape (\\ud800-\\udfff), which clients "
            f"decode differently, at {where}"
        )
    suspects: list[dict[str, Any]] = _local.suspects
    if suspects and type(result) is dict:
        clash = _struct_clash(result, suspects)
        if clash is not None:
            return (
                "two member names that a case-insensitive reader (Go's encoding/json) "
                f"takes for one field, at {clash}"
            )
    return None


class _Repeated(dict):  # type: ignore[type-arg]
    """An object whose member names repeat (the diagnostic reading only)."""


_UNREADABLE: Final = object()
"""A number no double holds (the diagnostic reading only)."""


def _diagnostic_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    return _Repeated(obj) if len(obj) != len(pairs) else obj


def _diagnostic_number(text: str) -> Any:
    try:
        return _js_number(text)
    except Exception:
        return _UNREADABLE


def _diagnostic_int(text: str) -> Any:
    return int(text) if len(text) < 16 else _diagnostic_number(text)


_diagnostic_scan: Final = _scanner(
    object_pairs_hook=_diagnostic_object,
    parse_float=_diagnostic_number,
    parse_int=_diagnostic_int,
    parse_constant=_reject_constant,
)


def _unfit_reading(text: str, at: int, exc: BaseException) -> str:
    """Why the strict reading of the result at ``at`` failed, found by reading it again
    with hooks that mark instead of raise."""
    if isinstance(exc, RecursionError):
        return _TOO_BIG
    try:
        value, _ = _diagnostic_scan(text, at)
    except Exception:
        return "the result could not be read for checking"
    if isinstance(exc, _Reject) and "repeated" in str(exc):
        where = _find(value, lambda n: type(n) is _Repeated)
        return f"a member name is repeated in one object, at {where}"
    where = _find(value, lambda n: n is _UNREADABLE)
    return f"a number too large for a double (no client reads it exactly), at {where}"


# ------------------------------------------------------------------- the limit-free reader

_TOKEN: Final = re.compile(
    r'[ \t\n\r]*(?:(")|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)'
    r"|(true|false|null)|([{}\[\],:]))"
)
_STRING_BODY: Final = re.compile(r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_LITERALS: Final = {"true": True, "false": False, "null": None}


def validate(text: str) -> dict[str, Any] | None:
    """Check that ``text`` is exactly one JSON value, with no depth or size limit.

    Iterative (a stack of open containers), so nesting of any depth and numbers of any
    length are read. Returns the top-level members when the value is an object, scalars
    decoded and containers as :data:`OPAQUE` (a number that Python cannot hold exactly is
    ``OPAQUE`` too); ``None`` when it is an array. Raises :class:`Unclassified` otherwise.
    """
    match = _TOKEN.match
    body = _STRING_BODY.match
    stack: list[str] = []  # "{" or "["
    members: dict[str, Any] = {}
    top = ""
    key: str | None = None
    expect = "value"  # value | key | colon | comma | value_or_end | key_or_end
    pos = 0
    size = len(text)
    while True:
        token = match(text, pos)
        if token is None:
            if _skip(text, pos).end() == size and not stack and expect == "done":
                break
            raise Unclassified("a line that is not exactly one JSON value", suspect=top != "")
        if expect == "done":
            raise Unclassified("a line holding more than one JSON value")
        pos = token.end()
        quote, number, literal, punct = token.groups()
        start = token.start(token.lastindex or 0)
        scalar: Any = OPAQUE
        if quote is not None:
            string = body(text, pos)
            if string is None:
                raise Unclassified("a line that is not exactly one JSON value")
            pos = string.end()
            if expect in ("key", "key_or_end"):
                if len(stack) == 1:
                    key = json.loads(text[start:pos])
                    if key in members:
                        raise Unclassified("a repeated top-level member")
                expect = "colon"
                continue
            if expect not in ("value", "value_or_end"):
                raise Unclassified("a line that is not exactly one JSON value")
            scalar = json.loads(text[start:pos]) if len(stack) == 1 else OPAQUE
        elif number is not None or literal is not None:
            if expect not in ("value", "value_or_end"):
                raise Unclassified("a line that is not exactly one JSON value")
            if len(stack) == 1:
                if literal is not None:
                    scalar = _LITERALS[literal]
                elif len(number) <= 4000:
                    scalar = json.loads(number)
        elif punct in ("{", "["):
            if expect not in ("value", "value_or_end"):
                raise Unclassified("a line that is not exactly one JSON value")
            if not stack:
                top = punct
            elif len(stack) == 1 and key is not None:
                members[key] = OPAQUE
            stack.append(punct)
            expect = "key_or_end" if punct == "{" else "value_or_end"
            continue
        elif punct in ("}", "]"):
            opener, empty = ("{", "key_or_end") if punct == "}" else ("[", "value_or_end")
            if not stack or stack[-1] != opener or expect not in ("comma", empty):
                raise Unclassified("a line that is not exactly one JSON value")
            stack.pop()
            expect = "comma" if stack else "done"
            continue
        elif punct == ":":
            if expect != "colon":
                raise Unclassified("a line that is not exactly one JSON value")
            expect = "value"
            continue
        else:  # ","
            if expect != "comma" or not stack:
                raise Unclassified("a line that is not exactly one JSON value")
            expect = "key" if stack[-1] == "{" else "value"
            continue
        # a scalar value was read
        if not stack:
            expect = "done"
            continue
        if len(stack) == 1 and top == "{" and key is not None:
            members[key] = scalar
        expect = "comma"
    if top == "[":
        return None
    if top != "{":
        raise Unclassified("a line that is not a JSON object", suspect=False)
    return members
