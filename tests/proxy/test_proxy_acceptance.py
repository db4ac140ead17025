"""Differential acceptance: every line the three readers read alike is forwarded.

The refusal side is tested elsewhere (test_proxy_fuzz, test_proxy_hostile). Here the same
listing is serialized by every encoder of :mod:`tests.proxy.codecs` (Python's ``json``
both ways, pydantic, orjson, simplejson, ujson, Node's ``JSON.stringify``, Go's
``encoding/json``, upper-case and all-escaped ``\\u``, loose whitespace, reversed member
order, number spellings, a trailing ``\\r``), each line first checked to be one value that
Python, ``JSON.parse`` and Go's ``json.Decoder`` read alike, and sent verbatim by the
scripted server (its ``raw`` key) through ``toolpin run`` to the MCP Python SDK client.

One store per example: the first session pins (its connect check is answered in one
encoding), the second is unchanged (its connect check in another), and in both the client
lists once per encoder, each answer in the next encoding; every answer must reach the
client value for value, the audit log must hold one ``pin`` and nothing else, and the
pinned hashes must equal ``toolpin hash`` of the listing file in every encoding.
A few lines the readers read differently (a repeated name, a lone surrogate, an integer
past 2^53) are refused, so both sides are covered.

``TOOLPIN_ACCEPT_EXAMPLES`` sets the budget (``make fuzz`` runs 300).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError, StdioServerParameters
from mcp.types import ListToolsResult

from tests.proxy import codecs as C
from tests.proxy.harness import SCRIPTED, Proxy, Scripted, proxy_env, run_cli, tool
from toolpin.cli import main as toolpin_main

EXAMPLES = int(os.environ.get("TOOLPIN_ACCEPT_EXAMPLES", "25"))
# TOOLPIN_ACCEPT_SHRINK=1 lets hypothesis shrink a failing example (slow: minutes).
ENCODERS = list(C.ENCODERS)
PROTOCOL = "2025-11-25"

# ------------------------------------------------------------------------------ strings

PIECES = [
    "\U0001f600",  # an emoji: json.dumps writes a surrogate pair
    "\U00020000",  # CJK extension B
    "\U000e0041\U000e007f",  # tag characters
    "\U0010ffff",
    "e\u0301",  # a combining mark
    "\u0300",  # a combining mark alone
    "\x00",
    "\x1f",
    "\x7f",
    "\u2028\u2029",
    "\ufeff",
    "\uffff",
    "<>&'+",
    "/",
    "\\u",  # a backslash before u (no escape: the backslash is escaped)
    "\\ud83d\\ude00",  # the text of a surrogate escape, as data
    "C:\\users\\me",
    "C:\\\\Users\\\\Default\\\\ud83d",
    "^\\\\u[0-9a-fA-F]{4}$",  # a regular expression matching \u escapes
    '\\"',
    "\t\n\r\b\f",
    "ß",
    "ǅ",
    "\u212a",  # Kelvin sign: Go's EqualFold folds it to k
    "ſ",
]
_chars = st.characters(exclude_categories=["Cs"])  # every code point but surrogates
text = st.lists(st.one_of(st.sampled_from(PIECES), st.text(_chars, max_size=5)), max_size=4).map(
    "".join
)

# Names that differ only in case (or under Unicode folding): ordinary data in free maps.
CASE_NAMES = ["ID", "id", "Id", "mm", "Mm", "K", "k", "\u212a", "strasse", "straße", "STRASSE"]
name = st.one_of(st.sampled_from(CASE_NAMES), text)


def _one_reading(x: float) -> bool:
    """Not an integral double between 2^53 and 10^21: JavaScript and Go write those as
    integer digits (``64107931691958300``) that Python reads as an exact integer, another
    number than the double, so such a line is outside the agreed set."""
    return not (x.is_integer() and 2**53 <= abs(x) < 1e21)


number = st.one_of(
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False).filter(_one_reading),
)
scalar = st.one_of(st.none(), st.booleans(), number, text)
json_value = st.recursive(
    scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(name, inner, max_size=4)),
    max_leaves=8,
)


@st.composite
def schema(draw: st.DrawFn) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for key in draw(st.lists(name, max_size=4, unique=True)):
        prop: dict[str, Any] = {"type": draw(st.sampled_from(["string", "number", "object"]))}
        if draw(st.booleans()):
            prop["description"] = draw(text)
        if draw(st.booleans()):
            prop["default"] = draw(json_value)
        if draw(st.booleans()):
            prop["enum"] = draw(st.lists(scalar, max_size=3))
        if draw(st.booleans()):
            prop["pattern"] = draw(text)
        if draw(st.booleans()):
            prop["examples"] = draw(st.lists(json_value, max_size=2))
        properties[key] = prop
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if properties and draw(st.booleans()):
        out["required"] = sorted(properties)[:1]
    if draw(st.booleans()):
        out["$defs"] = draw(st.dictionaries(name, st.just({"type": "string"}), max_size=3))
    return out


@st.composite
def definition(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {"name": draw(text.filter(bool)), "description": draw(text)}
    if draw(st.booleans()):
        out["title"] = draw(text)
    out["inputSchema"] = draw(schema())
    if draw(st.booleans()):
        out["annotations"] = {
            "title": draw(text),
            "readOnlyHint": draw(st.booleans()),
            "openWorldHint": draw(st.booleans()),
        }
    if draw(st.booleans()):
        out["_meta"] = draw(st.dictionaries(name, json_value, max_size=3))
    return out


listings = st.lists(definition(), min_size=1, max_size=3, unique_by=lambda t: t["name"])

# ------------------------------------------------------------------------------ helpers


def message(**members: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": C.ID_SENTINEL, **members}


def init_result(instructions: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "protocolVersion": PROTOCOL,
        "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": {"name": "accept", "version": "1.0.0"},
    }
    if instructions is not None:
        out["instructions"] = instructions
    return out


def encoded(encoder: str, value: Any) -> str:
    """The encoder's line for ``value``, checked to be one that all three readers read to
    the value itself (else the case is not a valid line and the test is wrong)."""
    line = C.ENCODERS[encoder](value)
    read = C.verdict(line)
    assert read.agree, f"{encoder}: {read.problem}"
    assert C.same(read.python, value), f"{encoder} wrote another value"
    text_line = line.decode("utf-8")
    assert text_line.count(str(C.ID_SENTINEL)) == (1 if "id" in value else 0)
    return text_line


def encoder_order(first: str) -> list[str]:
    """``first`` (which answers the connect check), then every encoder once."""
    return [first, *ENCODERS]


class Session:
    """One ``toolpin run`` session with the SDK client; the bytes the client read are
    kept (a ``tee`` between the proxy's stdout and the client)."""

    def __init__(self, home: Path, server: Scripted, directory: Path) -> None:
        self.tee = directory / "client.bytes"
        self.err = directory / "proxy.stderr"
        self.code = directory / "proxy.code"
        for path in (self.tee, self.err, self.code):
            path.unlink(missing_ok=True)
        proxy = [sys.executable, "-m", "toolpin", "run", "--", *server.argv]
        script = (
            f'{{ {shlex.join(proxy)} 2>>"$ACCEPT_ERR"; echo $? >"$ACCEPT_CODE"; }}'
            ' | tee -a "$ACCEPT_TEE"'
        )
        env = proxy_env(home)
        env.update(ACCEPT_TEE=str(self.tee), ACCEPT_ERR=str(self.err), ACCEPT_CODE=str(self.code))
        self.params = StdioServerParameters(command="/bin/sh", args=["-c", script], env=env)

    def lines(self) -> list[bytes]:
        return self.tee.read_bytes().splitlines(keepends=True) if self.tee.exists() else []

    @property
    def stderr(self) -> str:
        return self.err.read_text("utf-8", "replace") if self.err.exists() else ""


def sdk_view(tools: list[Any]) -> Any:
    """The listing as the SDK holds it (its models keep the fields MCP defines)."""
    return ListToolsResult.model_validate({"tools": tools}).model_dump(
        by_alias=True, mode="json", exclude_unset=True
    )


def toolpin_hash(path: Path) -> Any:
    """``toolpin hash --json FILE`` (the CLI's own entry point, in this process)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        toolpin_main(["hash", "--json", str(path)])
    assert exited.value.code in (0, None), out.getvalue()
    return json.loads(out.getvalue())


def audit_events(home: Path) -> list[str]:
    path = home / "audit.log"
    if not path.exists():
        return []
    return [json.loads(x)["event"] for x in path.read_text().splitlines()]


def pinned(home: Path) -> Any:
    rows = json.loads(run_cli(home, "list", "--json").stdout)
    assert len(rows) == 1, rows
    shown = run_cli(home, "show", rows[0]["id"], "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


async def list_every_encoding(params: StdioServerParameters) -> tuple[str | None, list[Any]]:
    """One SDK client session: its instructions and one listing per encoder."""
    pages = []
    async with Client(params, mode="legacy") as client:
        for _ in ENCODERS:
            page = await client.list_tools(cache_mode="bypass")
            pages.append(page.model_dump(by_alias=True, mode="json", exclude_unset=True))
        return client.instructions, pages


def check_listing(
    tools: list[Any], instructions: str | None, first: str, second: str, root: Path
) -> None:
    """The whole round: pin in ``first``'s encoding, unchanged in ``second``'s, every
    encoding listed by the client in both sessions."""
    home = root / "home"
    listing = {"tools": tools}
    answers = {e: encoded(e, message(result=listing)) for e in ENCODERS}
    server = Scripted(root / "srv")
    for session_number, head in enumerate((first, second)):
        server.update(
            raw={
                "initialize": [encoded(head, message(result=init_result(instructions)))],
                "tools/list": [answers[e] for e in encoder_order(head)],
            }
        )
        server.clear_logs()
        session = Session(home, server, root)
        try:
            got_instructions, seen = anyio.run(list_every_encoding, session.params)
        except BaseException as exc:
            raise AssertionError(
                f"session {session_number + 1} ({head} at connect) failed: {exc!r}\n"
                f"proxy stderr:\n{session.stderr}"
            ) from None
        assert got_instructions == instructions
        expected = sdk_view(tools)
        for encoder, page in zip(ENCODERS, seen, strict=True):
            assert C.same(page, expected), f"{encoder}: the SDK client read another listing"
        # Byte for byte what the server wrote, each line read alike by the three readers.
        sent = server.sent()
        lines = session.lines()
        assert len(lines) == 1 + len(ENCODERS), session.stderr
        for encoder, line in zip(ENCODERS, lines[1:], strict=True):
            read = C.verdict(line.rstrip(b"\n"))
            assert read.agree, f"{encoder}: forwarded a line the readers read apart"
            assert C.same(read.python["result"], listing), f"{encoder}: another value"
            assert line in sent, f"{encoder}: the line was not forwarded as written"
        assert session.code.read_text().strip() == "0", session.stderr
    assert audit_events(home) == ["pin"], "the second session saw a change"
    shown = pinned(home)
    assert shown["pending"] is None
    hashes = {i["key"]: i["hash"] for i in shown["tools"]["items"]}
    for encoder in ENCODERS:
        path = root / f"listing-{encoder}.json"
        path.write_bytes(C.ENCODERS[encoder](listing))
        offline = toolpin_hash(path)["tools"]
        assert offline["setHash"] == shown["tools"]["set_hash"], encoder
        assert {i["name"]: i["hash"] for i in offline["items"]} == hashes, encoder


# -------------------------------------------------------------------------------- tests


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    # Each example runs two sessions; shrinking takes minutes, so only on request.
    phases=list(Phase) if os.environ.get("TOOLPIN_ACCEPT_SHRINK") else [Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    tools=listings,
    instructions=st.one_of(st.none(), text),
    first=st.sampled_from(ENCODERS),
    second=st.sampled_from(ENCODERS),
)
def test_every_encoding_of_a_listing_is_accepted(
    codecs: ModuleType,
    tmp_path: Path,
    tools: list[Any],
    instructions: str | None,
    first: str,
    second: str,
) -> None:
    # A fresh folder (and store) per example: tmp_path is one per test.
    with tempfile.TemporaryDirectory(dir=tmp_path) as name:
        check_listing(tools, instructions, first, second, Path(name))


def _schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


EXPLICIT: dict[str, tuple[list[Any], str | None]] = {
    "emoji": ([tool("smile", "Say \U0001f600 and \U00020000.")], "Use \U0001f600 gladly."),
    "surrogates-in-name": (
        [tool("tool-\U0001f600", "x", inputSchema=_schema(**{"k\U0001f600": {"type": "string"}}))],
        "\U0001f600 instructions",
    ),
    "windows-path": ([tool("files", "Reads C:\\users\\me and \\\\server\\u0020share.")], None),
    "regex": ([tool("match", "m", inputSchema=_schema(p={"pattern": "^\\\\u[0-9a-f]{4}$"}))], None),
    "ID-id": ([tool("get", "g", inputSchema=_schema(ID={"type": "string"}, id={}))], None),
    "mm-Mm": (
        [tool("size", "s", inputSchema=_schema(mm={"description": "milli"}, Mm={"type": "x"}))],
        None,
    ),
    "K-k-default": (
        [tool("temp", "t", inputSchema=_schema(u={"default": {"K": 1, "k": 2, "\u212a": 3}}))],
        None,
    ),
    "strasse": (
        [
            tool(
                "addr",
                "a",
                inputSchema={
                    "type": "object",
                    "properties": {"strasse": {}, "straße": {}, "STRASSE": {}},
                    "$defs": {"Id": {}, "ID": {}},
                },
                _meta={"Key": 1, "key": 2},
            )
        ],
        None,
    ),
    "controls": ([tool("ctl", '\x00\x01\x1f\x7f\b\f\n\r\t"\\/\u2028\u2029')], "\x00\t"),
    "numbers": (
        [
            tool(
                "num",
                "n",
                inputSchema=_schema(
                    n={
                        "enum": [0, -0.0, 1, -1, 1.5, 1e21, 1e-7, 2**53 - 1, -(2**53) + 1],
                        "default": 5e-324,
                        "maximum": 1.7976931348623157e308,
                    }
                ),
            )
        ],
        None,
    ),
}


@pytest.mark.parametrize("case", list(EXPLICIT))
def test_explicit_listing_in_every_encoding(codecs: ModuleType, tmp_path: Path, case: str) -> None:
    tools, instructions = EXPLICIT[case]
    check_listing(tools, instructions, "upper-hex", "py-ascii", tmp_path)


# A thrown JavaScript Error as Node servers serialize it: clients read code and message.
NODE_ERROR = {
    "code": -32603,
    "message": "Internal error: boom",
    "data": {"detail": "x"},
    "name": "Error",
    "stack": "Error: boom\n    at Object.<anonymous> (/srv/index.js:3:9)",
}


@pytest.mark.parametrize("encoder", ["node", "py-ascii", "go"])
def test_error_object_with_extra_members_at_initialize(
    codecs: ModuleType, toolpin_home: Path, tmp_path: Path, encoder: str
) -> None:
    line = encoded(encoder, message(error=NODE_ERROR))
    server = Scripted(tmp_path / "srv", tools=[tool("a")], raw={"initialize": [line]})
    proxy = Proxy(toolpin_home, server.argv)
    reply = proxy.initialize()
    assert C.same(reply["error"], NODE_ERROR), reply
    assert proxy.close() in (0, 2)


@pytest.mark.parametrize("encoder", ["node", "py-ascii", "go"])
def test_error_object_with_extra_members_as_a_tool_answer(
    codecs: ModuleType, toolpin_home: Path, tmp_path: Path, encoder: str
) -> None:
    line = encoded(encoder, message(error=NODE_ERROR))
    server = Scripted(tmp_path / "srv", tools=[tool("a")], raw={"tools/call": [line]})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolpin", "run", "--", *server.argv],
        env=proxy_env(toolpin_home),
    )
    caught: list[MCPError] = []

    async def run() -> None:
        async with Client(params, mode="legacy") as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["a"]
            try:
                await client.call_tool("a", {"x": "1"})
            except MCPError as exc:
                caught.append(exc)
            # The session goes on: the error did not stop it.
            assert [t.name for t in (await client.list_tools(cache_mode="bypass")).tools] == ["a"]

    anyio.run(run)
    assert [(e.error.code, e.error.message) for e in caught] == [
        (NODE_ERROR["code"], NODE_ERROR["message"])
    ]
    assert len(server.calls()) == 1


# ----------------------------------------------------------------------- refusal side

# Lines the three readers read differently: the proxy must refuse each as a listing.
LISTING = json.dumps({"tools": [tool("a", "Reads the web.")]}, separators=(",", ":"))
DIVERGENT = {
    "repeated-name": LISTING.replace('"name":"a"', '"name":"a","name":"b"'),
    "repeated-schema-member": LISTING.replace('"x":{', '"x":{"type":"number","x":1},"x":{'),
    "lone-surrogate": LISTING.replace("Reads", "Reads \\ud83d"),
    "lone-low-surrogate": LISTING.replace("Reads", "\\uDE00Reads"),
    "int-past-2^53": LISTING.replace('"type":"object"', '"type":"object","max":9007199254740993'),
    "double-overflow": LISTING.replace('"type":"object"', '"type":"object","max":1e400'),
}


def _listing_line(body: str) -> str:
    return '{"jsonrpc":"2.0","id":' + str(C.ID_SENTINEL) + ',"result":' + body + "}"


@pytest.mark.parametrize("case", list(DIVERGENT))
def test_lines_the_readers_read_apart_are_refused(
    codecs: ModuleType, toolpin_home: Path, tmp_path: Path, case: str
) -> None:
    line = _listing_line(DIVERGENT[case])
    assert not C.verdict(line.encode()).agree, "not a divergent line: the case is wrong"
    good = _listing_line(LISTING)
    # At connect: the check is answered with the divergent line.
    server = Scripted(tmp_path / "srv", tools=[tool("a")], raw={"tools/list": [line]})
    proxy = Proxy(toolpin_home, server.argv)
    reply = proxy.initialize()
    assert reply["error"]["code"] == -31043, reply
    assert proxy.close() == 2
    assert audit_events(toolpin_home) == []
    # Mid-session: pinned from a good answer, then the client's listing gets the bad one.
    server.update(raw={"tools/list": [good, line]})
    proxy = Proxy(toolpin_home, server.argv)
    assert "result" in proxy.initialize()
    reply = proxy.call("tools/list")
    assert reply["error"]["code"] == -31043, reply
    assert not any(b"Reads" in x for x in proxy.received), "the divergent line was forwarded"
    assert proxy.close() == 2


def test_scripted_raw_lines_reach_the_proxy_verbatim(tmp_path: Path, toolpin_home: Path) -> None:
    """The stub's ``raw`` key: the exact bytes, the id put in place, in order."""
    first = '{"id": ' + str(C.ID_SENTINEL) + ', "jsonrpc": "2.0", "result": {"n": 1}}\r'
    second = '{"jsonrpc":"2.0","result":{"n":2},"id":' + str(C.ID_SENTINEL) + "}"
    server = Scripted(tmp_path / "srv", raw={"ping": [first, second]})
    proxy = Proxy(toolpin_home, server.argv)
    proxy.initialize()
    answers = [proxy.call("ping")["result"]["n"] for _ in range(3)]
    assert answers == [1, 2, 2]
    assert proxy.close() == 0
    pings = [x for x in server.sent() if b'"n"' in x]
    assert pings[0] == b'{"id": 2, "jsonrpc": "2.0", "result": {"n": 1}}\r\n'
    assert pings[1] == b'{"jsonrpc":"2.0","result":{"n":2},"id":3}\n'
    assert str(SCRIPTED).endswith("scripted.py")
