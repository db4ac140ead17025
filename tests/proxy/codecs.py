"""Encoders of one JSON value into one line, and three readers that must agree on it.

The acceptance tests serialize the same value the ways real servers do and ask whether
the proxy forwards every one of them. The rule (docs/proxy.md) is differential: a line
is valid when Python's ``json``, JavaScript's ``JSON.parse`` and Go's ``json.Decoder``
(a stream decoder) all read it to one and the same value, strings compared as code
points and numbers as the value each reader holds (:func:`verdict`).

Encoders (:data:`ENCODERS`, each ``value -> bytes`` without the newline):

* ``py-ascii``: ``json.dumps`` with its defaults (``ensure_ascii=True``: every non-ASCII
  character as ``\\uxxxx``, astral ones as a surrogate pair; ``", "`` and ``": "``);
* ``py-utf8``: ``json.dumps(ensure_ascii=False)``, compact;
* ``pydantic``: ``pydantic_core.to_json`` (what ``model_dump_json`` writes);
* ``orjson``, ``simplejson`` (``ensure_ascii`` default), ``ujson`` (escapes ``/`` as
  ``\\/`` by default);
* ``node``: ``JSON.stringify`` in a real Node process;
* ``go``: Go's ``json.Marshal`` (escapes ``<``, ``>``, ``&``, U+2028, U+2029; sorts
  members), built from ``tests/proxy/go/jsoncodec/main.go``;
* ``upper-hex``: non-ASCII and ``<>&'+`` as upper-case ``\\uXXXX`` (C#, Java);
* ``all-escaped``: every character as ``\\uxxxx`` (surrogate pairs included), ``/`` as
  ``\\/``;
* ``loose``: spaces and tabs around every token, before and after the value;
* ``reversed``: every object's members in reverse order;
* ``numbers``: integers as ``-0``/``NE0``-style exponents, other numbers with 17
  significant digits and ``E+XX``;
* ``crlf``: compact, with a trailing ``\\r`` (the line then ends ``\\r\\n``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pydantic_core
import simplejson
import ujson
from filelock import FileLock

REPO = Path(__file__).resolve().parents[2]
GO_SOURCE = REPO / "tests" / "proxy" / "go" / "jsoncodec" / "main.go"
GO_CACHE = REPO / ".cache" / "go-jsoncodec"
SAFE = 2**53

# ----------------------------------------------------------------------- peer processes

NODE_CODEC = r"""
const rl = require("readline").createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  const data = Buffer.from(line.slice(2), "base64");
  let out;
  if (line[0] === "E") {
    try { out = JSON.stringify(JSON.parse(data.toString("utf8"))); }
    catch (e) { out = "!" + e.name; }
  } else {
    // The TypeScript SDK's reading of one line: UTF-8 (bad bytes as U+FFFD), JSON.parse.
    let text = data.toString("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    try {
      const value = JSON.parse(text);
      out = JSON.stringify({ value: value, finite: finite(value) });
    } catch (e) { out = JSON.stringify({ error: e.name }); }
  }
  process.stdout.write(Buffer.from(out, "utf8").toString("base64") + "\n");
});
function finite(v) {
  if (typeof v === "number") return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(finite);
  if (v !== null && typeof v === "object") return Object.values(v).every(finite);
  return true;
}
"""


class _Peer:
    """A long-running codec process: one base64 request line in, one answer line out."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def ask(self, op: str, data: bytes) -> bytes:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.proc = subprocess.Popen(
                    self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE
                )
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(op.encode() + b" " + base64.b64encode(data) + b"\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the codec process {self.argv[0]} ended")
        return base64.b64decode(answer)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=10)


class GoMissing(RuntimeError):
    """Go is not installed (Debian's ``golang-go``)."""


def go_binary() -> Path:
    """The codec built from :data:`GO_SOURCE` (once per source version, under a lock)."""
    go = shutil.which("go")
    if go is None:
        raise GoMissing("go is not on PATH (Debian package golang-go)")
    digest = hashlib.sha256(GO_SOURCE.read_bytes()).hexdigest()[:16]
    binary = GO_CACHE / f"jsoncodec-{digest}"
    GO_CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(str(GO_CACHE / "build.lock")):
        if not binary.exists():
            partial = binary.with_suffix(".partial")
            env = {
                **os.environ,
                # Never the real HOME: the build cache and GOPATH stay under .cache/.
                "GOCACHE": str(GO_CACHE / "gocache"),
                "GOPATH": str(GO_CACHE / "gopath"),
                "GO111MODULE": "off",
                "GOFLAGS": "",
                "CGO_ENABLED": "0",
            }
            done = subprocess.run(
                [go, "build", "-o", str(partial), str(GO_SOURCE)],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
            if done.returncode != 0:
                raise RuntimeError(f"go build of the codec failed:\n{done.stderr}")
            partial.replace(binary)
    return binary


_node = _Peer([shutil.which("node") or "node", "-e", NODE_CODEC])
_go: _Peer | None = None


def _go_peer() -> _Peer:
    global _go
    if _go is None:
        _go = _Peer([str(go_binary())])
    return _go


def close_peers() -> None:
    _node.close()
    if _go is not None:
        _go.close()


# -------------------------------------------------------------------------- the writer


def _esc(char: str, upper: bool) -> str:
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        pair = (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))
        text = "".join(f"\\u{c:04x}" for c in pair)
    else:
        text = f"\\u{code:04x}"
    return text.upper().replace("\\U", "\\u") if upper else text


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


_ESCAPED = {
    "plain": re.compile(r'["\\\x00-\x1f]'),
    "upper": re.compile(r"""["\\\x00-\x1f<>&'+\x7f-\U0010ffff]"""),
}
"""The characters each style writes as an escape (every other one as itself)."""


def _escape(match: re.Match[str], upper: bool) -> str:
    char = match.group()
    return _SHORT.get(char) or _esc(char, upper)


def _string(text: str, style: str) -> str:
    if style == "all":  # every UTF-16 code unit as an escape, ``/`` as ``\/``
        units = text.encode("utf-16-be", "surrogatepass")
        body = "".join(
            f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2)
        ).replace("\\u002f", "\\/")
        return f'"{body}"'
    upper = style == "upper"
    return '"' + _ESCAPED[style].sub(lambda m: _escape(m, upper), text) + '"'


def _number(value: int | float, style: str) -> str:
    if style != "numbers" or value == ID_SENTINEL:
        return json.dumps(value)
    if type(value) is int:
        return "-0" if value == 0 else f"{value}E0"
    return format(value, ".16E").replace("E-0", "E-").replace("E+0", "E+")


def write(value: Any, style: str = "plain", ws: str = "", order: str = "as-is") -> str:
    """A JSON text of ``value``: ``style`` plain/upper/all/numbers, ``ws`` put around every
    token, ``order`` of object members ``as-is`` or ``reversed``."""

    def go(v: Any) -> str:
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        if type(v) is int or type(v) is float:
            return _number(v, style)
        if type(v) is str:
            return _string(v, "plain" if style == "numbers" else style)
        if type(v) is list:
            return "[" + ws + (ws + "," + ws).join(go(x) for x in v) + ws + "]"
        items = list(v.items())
        if order == "reversed":
            items.reverse()
        inner = (ws + "," + ws).join(
            _string(k, "plain" if style == "numbers" else style) + ws + ":" + ws + go(x)
            for k, x in items
        )
        return "{" + ws + inner + ws + "}"

    return ws + go(value) + ws


def _peer_encode(peer: Callable[[], _Peer], value: Any) -> bytes:
    data = peer().ask("E", json.dumps(value, ensure_ascii=False).encode())
    if data.startswith(b"!"):
        raise ValueError(f"the encoder refused the value: {data[1:].decode()}")
    return data


ENCODERS: dict[str, Callable[[Any], bytes]] = {
    "py-ascii": lambda v: json.dumps(v).encode(),
    "py-utf8": lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode(),
    "pydantic": lambda v: pydantic_core.to_json(v),
    "orjson": lambda v: orjson.dumps(v),
    "simplejson": lambda v: simplejson.dumps(v).encode(),
    "ujson": lambda v: ujson.dumps(v).encode(),
    "node": lambda v: _peer_encode(lambda: _node, v),
    "go": lambda v: _peer_encode(_go_peer, v),
    "upper-hex": lambda v: write(v, "upper").encode(),
    "all-escaped": lambda v: write(v, "all").encode(),
    "loose": lambda v: write(v, ws=" \t ").encode(),
    "reversed": lambda v: write(v, order="reversed").encode(),
    "numbers": lambda v: write(v, "numbers").encode(),
    "crlf": lambda v: write(v).encode() + b"\r",
}
"""Every encoder by name."""

ID_SENTINEL = 987654321987654
"""The id an encoded message carries; the scripted server puts the request's id there."""


# ------------------------------------------------------------------------------ readers


@dataclass
class Verdict:
    """How the three readers read one line."""

    python: Any
    node: Any
    go: Any
    problem: str | None
    """``None`` when all three read one and the same value, else what differs."""

    @property
    def agree(self) -> bool:
        return self.problem is None


_MISSING = object()


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: strings as code points, numbers by value (an exact ``int``
    against a double compares exactly), no ``True == 1``."""
    if type(a) is bool or type(b) is bool or a is None or b is None:
        return a is b
    if type(a) in (int, float) and type(b) in (int, float):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    if type(a) is str:
        return bool(a == b)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return False


class _Repeated(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Repeated
    return obj


def python_read(line: bytes) -> Any:
    """Python's reading: strict UTF-8, exact integers; ``_MISSING`` if unreadable.
    A repeated member name raises :class:`_Repeated`."""
    body = line[:-1] if line.endswith(b"\r") else line
    try:
        return json.loads(body.decode("utf-8"), object_pairs_hook=_pairs)
    except (ValueError, RecursionError):
        return _MISSING


def _doubles(data: bytes) -> Any:
    """A reading from Node or Go: every number there is a double, written in its shortest
    form, so an integer's text is read back as that double (not as an exact ``int``)."""
    return json.loads(data, parse_int=float)


def node_read(line: bytes) -> Any:
    answer = _doubles(_node.ask("D", line))
    if "error" in answer or not answer["finite"]:
        return _MISSING
    return answer["value"]


def go_read(line: bytes) -> Any:
    answer = _doubles(_go_peer().ask("D", line))
    if answer["error"] or len(answer["values"]) != 1:
        return _MISSING
    return answer["values"][0]


def _lone_surrogate(value: Any) -> bool:
    if type(value) is str:
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if type(value) is list:
        return any(_lone_surrogate(x) for x in value)
    if type(value) is dict:
        return any(_lone_surrogate(k) or _lone_surrogate(x) for k, x in value.items())
    return False


def _finite(value: Any) -> bool:
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(_finite(x) for x in value)
    if type(value) is dict:
        return all(_finite(x) for x in value.values())
    return True


def verdict(line: bytes) -> Verdict:
    """Read one line (no newline) with all three readers and say whether they agree.

    A repeated member name counts as disagreement (each reader keeps one of the two, and
    which one is the reader's choice: the proxy's limit refuses them all), and so does a
    lone surrogate (Go reads U+FFFD where the others keep the surrogate).
    """
    try:
        py = python_read(line)
    except _Repeated:
        return Verdict(_MISSING, _MISSING, _MISSING, "a member name is repeated")
    node, go = node_read(line), go_read(line)
    if py is _MISSING or not _finite(py):
        problem: str | None = "python cannot read it"
    elif node is _MISSING:
        problem = "JSON.parse cannot read it"
    elif go is _MISSING:
        problem = "json.Decoder does not read exactly one value"
    elif not same(py, node):
        problem = "JSON.parse reads another value"
    elif not same(py, go):
        problem = "json.Decoder reads another value"
    elif _lone_surrogate(py):
        problem = "a lone surrogate"
    else:
        problem = None
    return Verdict(py, node, go, problem)
