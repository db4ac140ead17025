"""Every refusal of a listing names its one true cause, through ``toolpin run``.

The cause is in toolpin's words with where it is (a path of member names toolpin knows
and positions), on stderr, in the error's message and in ``data.detail``; the server's
own text never appears. Each class of refusal has its case, at connect and mid-session;
the unit tests of the classifier (tests/proxy/test_classify.py) assert the reason of every
class on the line itself, the lone surrogate and the unreadable number among them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.harness import Proxy, Scripted, tool

UNVERIFIED = -31043
SECRET = "zq-secret-marker"


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


CASES: dict[str, tuple[dict[str, Any], str]] = {
    "repeated": ({"dup_key": True}, "the server sent a repeated top-level member"),
    "struct clash": (
        {"tools": [tool("search", SECRET, Name=SECRET)]},
        "two member names that a case-insensitive reader (Go's encoding/json) takes for "
        "one field, at result.tools[0]",
    ),
    "schema keyword clash": (
        {"tools": [tool("search", SECRET, inputSchema={"type": "object", "TYPE": SECRET})]},
        "takes for one field, at result.tools[0].inputSchema",
    ),
    "too deep": (
        {"tools": [tool("search", SECRET, inputSchema=_deep(64))]},
        "a tool is nested more than 128 levels deep (counted from the tool itself)",
    ),
}


@pytest.fixture
def procs() -> Iterator[list[Proxy]]:
    running: list[Proxy] = []
    yield running
    for proxy in running:
        proxy.kill()


def _check(reply: Any, proxy: Proxy, reason: str) -> None:
    error = reply["error"]
    assert error["code"] == UNVERIFIED
    assert reason in error["data"]["detail"], error["data"]["detail"]
    assert reason in error["message"]
    assert reason in proxy.stderr
    for text in (error["message"], error["data"]["detail"], proxy.stderr):
        assert SECRET not in text
        assert "repeated member name, nesting too deep" not in text  # the old catch-all


@pytest.mark.parametrize("case", list(CASES))
def test_refusal_at_connect_names_its_cause(
    case: str, tmp_path: Path, toolpin_home: Path, procs: list[Proxy]
) -> None:
    config, reason = CASES[case]
    config = {"tools": [tool("search")], **config}
    server = Scripted(tmp_path / "srv", **config)
    proxy = Proxy(toolpin_home, server.argv, "--name", "demo")
    procs.append(proxy)
    reply = proxy.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert proxy.close() == 2
    _check(reply, proxy, reason)
    if case not in ("repeated", "too deep"):  # found by the classifier (the others later)
        assert "the server's answer could not be checked: " in reply["error"]["data"]["detail"]


@pytest.mark.parametrize("case", [c for c in CASES if c != "repeated"])
def test_refusal_mid_session_names_its_cause(
    case: str, tmp_path: Path, toolpin_home: Path, procs: list[Proxy]
) -> None:
    config, reason = CASES[case]
    server = Scripted(tmp_path / "srv", tools=[tool("search")], after_flip=config)
    proxy = Proxy(toolpin_home, server.argv, "--name", "demo")
    procs.append(proxy)
    proxy.initialize()
    assert "result" in proxy.call("tools/list")
    proxy.call("tools/call", {"name": "flip", "arguments": {}})
    assert proxy.recv()["method"] == "notifications/tools/list_changed"
    reply = proxy.call("tools/list")
    assert proxy.wait() == 2
    _check(reply, proxy, reason)
    if case != "too deep":
        assert "a listing the proxy could not check: " in reply["error"]["data"]["detail"]
