"""How real clients read the proxy's output, for differential tests.

Three readers of one byte stream (what the proxy wrote to its client):

* :func:`python_reader`: the Python SDK's stdio client: split on ``\\n``, strict UTF-8,
  ``json.loads`` per line (a line it cannot read is skipped);
* :func:`node_reader`: the TypeScript SDK's ``ReadBuffer``: split on ``\\n``, drop one
  trailing ``\\r``, ``Buffer.toString("utf8")`` (bad bytes become U+FFFD), ``JSON.parse``
  in a real Node process;
* :func:`go_reader`: Go's ``encoding/json.Decoder`` loop, which reads a stream of values
  with no regard for lines (several values per line, one value over several lines,
  invalid UTF-8 read as U+FFFD). Written here in Python: ``raw_decode`` from the current
  offset, skipping JSON whitespace; after an error it resumes at the next line (more
  lenient than Go, which gives up: a lenient reader is the stronger test).

Each returns, per line of the stream, the message it read there (``None``: nothing),
with every number as a double (what JavaScript and Go's ``interface{}`` hold), so the
readings compare by value.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import threading
from typing import Any

NODE_LOOP = r"""
const rl = require("readline").createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (b64) => {
  const stream = Buffer.from(b64, "base64");
  const out = [];
  let start = 0;
  for (;;) {
    const nl = stream.indexOf(10, start);
    if (nl < 0) break;
    let line = stream.subarray(start, nl).toString("utf8");
    if (line.endsWith("\r")) line = line.slice(0, -1);
    start = nl + 1;
    try { out.push(JSON.stringify(JSON.parse(line))); } catch (e) { out.push(null); }
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
"""


def _doubles(text: str) -> Any:
    return json.loads(text, parse_int=float, parse_float=float)


def split_lines(stream: bytes) -> list[bytes]:
    """The newline-terminated lines of a stream (a last line without one is dropped:
    no client reads it before more bytes come)."""
    lines = stream.split(b"\n")
    return [line + b"\n" for line in lines[:-1]]


def python_reader(stream: bytes) -> list[Any]:
    out: list[Any] = []
    for line in split_lines(stream):
        try:
            text = line.decode("utf-8")
            out.append(json.loads(text, parse_int=float, parse_float=float))
        except (ValueError, RecursionError):
            out.append(None)
    return out


class _Node:
    def __init__(self) -> None:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is needed for the differential tests")
        self.proc = subprocess.Popen(
            [node, "-e", NODE_LOOP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.lock = threading.Lock()

    def read(self, stream: bytes) -> list[Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(base64.b64encode(stream) + b"\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError("the node reader ended")
        return [None if x is None else _doubles(x) for x in json.loads(answer)]


_node: _Node | None = None
_node_lock = threading.Lock()


def node_reader(stream: bytes) -> list[Any]:
    global _node
    with _node_lock:
        if _node is None or _node.proc.poll() is not None:
            _node = _Node()
        node = _node
    return node.read(stream)


_SKIP = re.compile(r"[ \t\r\n]*").match
_decoder = json.JSONDecoder(parse_int=float, parse_float=float)


def go_reader(stream: bytes) -> list[Any]:
    """Values a stream decoder reads, by the line each starts on; a value that ends on
    another line than it starts, or a second value on a line, makes that line's entry
    the string ``"<framing>"`` (it would be read, so it must never be forwarded)."""
    text = stream.decode("utf-8", "replace")
    starts = [0]
    nl = text.find("\n")
    while nl >= 0:
        starts.append(nl + 1)
        nl = text.find("\n", nl + 1)
    out: list[Any] = [None] * (len(starts) - 1)

    def line_of(offset: int) -> int:
        low, high = 0, len(starts) - 1
        while low < high:
            mid = (low + high + 1) // 2
            if starts[mid] <= offset:
                low = mid
            else:
                high = mid - 1
        return low

    pos = 0
    while pos < len(text):
        pos = _SKIP(text, pos).end()
        if pos >= len(text):
            break
        try:
            value, end = _decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            nl = text.find("\n", pos)
            if nl < 0:
                break
            pos = nl + 1
            continue
        first, last = line_of(pos), line_of(end - 1)
        if first >= len(out):
            break  # a value in the unterminated tail
        if first != last or out[first] is not None:
            out[first] = "<framing>"
        else:
            out[first] = value
        pos = end
    return out


def readings(stream: bytes) -> dict[str, list[Any]]:
    """Every reader's messages, per line."""
    return {
        "python": python_reader(stream),
        "node": node_reader(stream),
        "go": go_reader(stream),
    }


def _own_refusal(line: bytes) -> bool:
    """toolpin's answer to a malformed line or a batch (a null id, or a batch of errors)."""
    value = json.loads(line)
    items = value if isinstance(value, list) else [value]
    return all(
        isinstance(m, dict)
        and set(m) == {"jsonrpc", "id", "error"}
        and str(m["error"].get("message", "")).startswith("toolpin ")
        and (m["id"] is None or isinstance(value, list))
        for m in items
    )


def assert_readers_agree(stream: bytes) -> None:
    """Every line the proxy wrote is one message that each reader reads alike."""
    from toolpin.proxy.classify import Unclassified, classify

    lines = split_lines(stream)
    seen = readings(stream)
    for index, line in enumerate(lines):
        try:
            classify(line)
        except Unclassified as exc:
            if not _own_refusal(line):
                raise AssertionError(
                    f"the proxy wrote an unclassified line ({exc.reason})"
                ) from None
        values = {name: result[index] for name, result in seen.items()}
        assert values["go"] != "<framing>", f"line {index}: a stream decoder reads it otherwise"
        read = [v for v in values.values() if v is not None]
        assert read, f"line {index}: no reader reads it"
        assert all(v == read[0] for v in read), f"line {index}: the readers disagree"
