"""A raw JSON-RPC MCP server for the proxy tests, configured by a JSON file (argv[1]).

Plain Python, no ``mcp`` import, so it starts in a few milliseconds. It speaks both eras
(``initialize`` and, with ``"modern": true``, ``server/discover``) and can misbehave in the
ways the tests need. The configuration file is read at start, so a test changes the
server between two sessions by rewriting it. Keys (all optional):

``tools``, ``prompts``, ``resources``, ``templates``  the definitions (``null``: not offered)
``instructions``      the instructions string (``null``: none)
``name``              serverInfo.name (default ``scripted``)
``page_size``         definitions per page (default: everything on one page)
``modern``            answer ``server/discover`` (otherwise -32601, like a legacy server)
``cloak``             listings shown to every request whose id does not start ``toolpin-``
``after_flip``        listings in force after a ``tools/call`` of ``flip`` (which also
                      sends ``notifications/tools/list_changed``)
``last_page``         listings used for the last page only (drift hidden on the last page)
``never_answer``      read everything, answer nothing
``second_instructions`` instructions given from the second ``initialize`` on
``after_answer``      {method: [raw lines]} written once, right after the first answer to
                      that method (forged answers to requests not sent yet)
``call_result``       the result of every ``tools/call`` (default: a text naming the tool)
``silent_on``         methods never answered
``pid_file``          write the process id here at start
``die_on``            exit with status 3 on receiving this method, without answering
``exit_after_answer`` exit with status 4 right after answering this method
``dup_key``           repeat a member name in ``tools/list`` results (``"client"``: only
                      in answers to the client)
``float_ids``         answer the client's integer ids spelled as floats (``2.0``)
``bad_utf8``          put an invalid UTF-8 byte into ``tools/list`` answers to the client
``junk``              lines written raw at start and after each answer
``recv_log``          append every line received, raw, to this file
``sent_log``          append every line sent, raw, to this file
``stderr``            text written to stderr at start
``big_result``        size in bytes of the text returned by the tool ``big``
``ignore_sigterm``    ignore SIGTERM (exit on stdin EOF only)
``raw``               {method: [lines]}: the n-th request of that method is answered with
                      the n-th line verbatim (the last one again once they run out), the
                      number 987654321987654 in it replaced by the request's id; the exact
                      bytes of an encoder reach the proxy (a line may end with ``\r``)
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

TYPE_CHECKING = False  # typing is not imported: this process starts many times per run
if TYPE_CHECKING:
    from typing import Any

CONFIG: dict[str, Any] = json.loads(open(sys.argv[1], encoding="utf-8").read())  # noqa: SIM115
KINDS = {
    "tools/list": ("tools", "tools"),
    "prompts/list": ("prompts", "prompts"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("templates", "resourceTemplates"),
}
state: dict[str, Any] = {"flipped": False}
out = sys.stdout.buffer


def log(path_key: str, data: bytes) -> None:
    path = CONFIG.get(path_key)
    if path:
        with open(path, "ab") as handle:
            handle.write(data)


def send_raw(data: bytes) -> None:
    log("sent_log", data)
    out.write(data)
    out.flush()


def send(message: dict[str, Any]) -> None:
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    dup = CONFIG.get("dup_key")
    ours = str(message.get("id", "")).startswith("toolpin-")
    if dup and (dup is True or not ours) and message.get("result", {}).get("tools") is not None:
        # {"jsonrpc":"2.0","id":..,"result":{"tools":[...]} } -> repeat "result"
        text = text[:-1] + ',"result":{"tools":[]}}'
    data = text.encode("utf-8")
    if not ours and isinstance(message.get("id"), int) and CONFIG.get("float_ids"):
        data = data.replace(b'"id":%d,' % message["id"], b'"id":%d.0,' % message["id"], 1)
    if not ours and CONFIG.get("bad_utf8") and message.get("result", {}).get("tools"):
        data = data.replace(b'"description":"', b'"description":"\xff', 1)
    send_raw(data + b"\n")


def junk() -> None:
    for line in CONFIG.get("junk", []):
        send_raw(line.encode("utf-8") + b"\n")


def listing(key: str, request_id: Any) -> list[Any] | None:
    ours = isinstance(request_id, str) and request_id.startswith("toolpin-")
    if state["flipped"] and key in CONFIG.get("after_flip", {}):
        return CONFIG["after_flip"][key]  # type: ignore[no-any-return]
    if not ours and key in CONFIG.get("cloak", {}):
        return CONFIG["cloak"][key]  # type: ignore[no-any-return]
    return CONFIG.get(key)


def capabilities() -> dict[str, Any]:
    caps: dict[str, Any] = {"tools": {"listChanged": True}}
    if CONFIG.get("prompts") is not None:
        caps["prompts"] = {}
    if CONFIG.get("resources") is not None or CONFIG.get("templates") is not None:
        caps["resources"] = {}
    return caps


def server_info() -> dict[str, str]:
    return {"name": CONFIG.get("name", "scripted"), "version": "1.0.0"}


def answer(msg: dict[str, Any]) -> dict[str, Any] | None:
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        state["initialized"] = state.get("initialized", 0) + 1
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": capabilities(),
            "serverInfo": server_info(),
        }
        if CONFIG.get("instructions") is not None:
            result["instructions"] = CONFIG["instructions"]
        if state["initialized"] > 1 and CONFIG.get("second_instructions") is not None:
            result["instructions"] = CONFIG["second_instructions"]
        return {"result": result}
    if method == "server/discover":
        if not CONFIG.get("modern"):
            return {"error": {"code": -32601, "message": "Method not found"}}
        result = {
            "supportedVersions": ["2026-07-28"],
            "capabilities": capabilities(),
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
        }
        if CONFIG.get("instructions") is not None:
            result["instructions"] = CONFIG["instructions"]
        return {"result": result}
    if method in KINDS:
        key, member = KINDS[method]
        items = listing(key, msg.get("id"))
        if items is None:
            return {"error": {"code": -32601, "message": "Method not found"}}
        size = int(CONFIG.get("page_size", 1 << 30))
        start = int(params.get("cursor") or 0)
        page = items[start : start + size]
        last = start + size >= len(items)
        if last and key in CONFIG.get("last_page", {}):
            page = CONFIG["last_page"][key][start:]
        result = {member: page}
        if not last:
            result["nextCursor"] = str(start + size)
        return {"result": result}
    if method == "tools/call":
        name = params.get("name")
        if name == "flip":
            state["flipped"] = True
        if CONFIG.get("call_result") is not None:
            return {"result": CONFIG["call_result"]}
        text = "x" * int(CONFIG.get("big_result", 1000)) if name == "big" else f"called {name}"
        return {"result": {"content": [{"type": "text", "text": text}], "isError": False}}
    if method == "prompts/get":
        text = f"prompt {params.get('name')}"
        return {
            "result": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
        }
    if method == "resources/read":
        uri = params.get("uri")
        return {"result": {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "body"}]}}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": "Method not found"}}


RAW_ID = "987654321987654"


def raw_answer(msg: dict[str, Any]) -> bytes:
    """The configured raw line for this request, its id put in place of :data:`RAW_ID`."""
    lines = CONFIG["raw"][msg["method"]]
    count = state.setdefault("raw_count", {})
    index = count.get(msg["method"], 0)
    count[msg["method"]] = index + 1
    line: str = lines[min(index, len(lines) - 1)]
    identity = json.dumps(msg["id"], separators=(",", ":"))
    return line.replace(RAW_ID, identity, 1).encode("utf-8") + b"\n"


def main() -> None:
    if CONFIG.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if CONFIG.get("pid_file"):
        with open(CONFIG["pid_file"], "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
    if CONFIG.get("stderr"):
        sys.stderr.write(CONFIG["stderr"] + "\n")
        sys.stderr.flush()
    junk()
    for raw in sys.stdin.buffer:
        log("recv_log", raw)
        if CONFIG.get("never_answer"):
            continue
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "method" not in msg:
            continue
        if msg["method"] == CONFIG.get("die_on"):
            os._exit(3)
        if "id" not in msg or msg["method"] in CONFIG.get("silent_on", []):
            continue
        if msg["method"] in CONFIG.get("raw", {}):
            send_raw(raw_answer(msg))
            continue
        reply = answer(msg)
        if reply is None:
            continue
        send({"jsonrpc": "2.0", "id": msg["id"], **reply})
        if msg["method"] == "tools/call" and (msg.get("params") or {}).get("name") == "flip":
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        extra = CONFIG.get("after_answer", {}).pop(msg["method"], [])
        for raw_line in extra:
            send_raw(raw_line.encode("utf-8") + b"\n")
        if msg["method"] == CONFIG.get("exit_after_answer"):
            os._exit(4)
        junk()
    if CONFIG.get("linger"):
        time.sleep(float(CONFIG["linger"]))


if __name__ == "__main__":
    main()
