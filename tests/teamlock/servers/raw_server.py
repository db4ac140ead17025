"""A stdio MCP server made of the standard library only, driven by a JSON spec file.

Used by the probe and team-lock tests: it starts in a few milliseconds and can misbehave on
purpose. ``python raw_server.py SPEC.json [ignored args...]``. Spec members (all optional):

* ``name``, ``version``, ``instructions``, ``tools``, ``prompts``, ``resources``,
  ``resourceTemplates`` (a listing given as ``null`` is not offered);
* ``page_size``: tools are served in pages of this size (cursors ``p1``, ``p2``, ...);
* ``discover``: ``"answer"`` (default), ``"error"`` (-32601, a legacy-only server),
  ``"unsupported"`` (-32022, a 2026-era server speaking another version) or ``"ignore"``
  (no answer at all);
* ``start_delay``: seconds to wait before reading anything (a slow start: ``uvx`` on a
  cold cache);
* ``discover_delay``: seconds to wait before answering ``server/discover``;
* ``strict``: a connection whose ``server/discover`` was answered (a result or -32022)
  serves the 2026-07-28 protocol only: ``initialize`` on it gets -32022 (what a real
  2026-era server does);
* ``initialize``: ``"answer"`` (default), ``"error"`` or ``"ignore"``;
* ``record``: a file that gets every line the server receives;
* ``record_dir``: a folder where each server process writes the lines it receives to
  ``<pid>.jsonl`` (to tell connections apart);
* ``exit_on``: a method name; the server exits with code 3 when it receives it;
* ``stdout_noise``: a line of text written to stdout before the first answer;
* ``flood``: bytes of noise written to stdout (in 64 KiB lines) before the first answer;
* ``repeat_key``: the tools/list answer repeats the ``tools`` member;
* ``ask_roots``: before answering tools/list, ask the client for ``roots/list`` and wait;
* ``child_pid``: spawn a sleeping child process and write its pid to this file;
* ``stubborn``: ignore SIGTERM and keep running after stdin closes;
* ``env_out``: write the environment variables named in ``env_names`` and the working
  directory to this file, as JSON;
* ``env_in_descriptions``: environment variable names; ``$NAME`` in a tool description is
  replaced by the variable's value (a server that writes, say, the local timezone into
  what the model reads);
* ``tools_if_roots``: more tools, offered only to a client that declares ``roots``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

SPEC = json.loads(open(sys.argv[1], encoding="utf-8").read())  # noqa: SIM115
RECORD = SPEC.get("record")
OUT = sys.stdout.buffer
noise_sent = False
client_caps: dict = {}
saw_discover = False


def record(line: bytes) -> None:
    data = line if line.endswith(b"\n") else line + b"\n"
    if RECORD:
        with open(RECORD, "ab") as fh:
            fh.write(data)
    if SPEC.get("record_dir"):
        with open(os.path.join(SPEC["record_dir"], f"{os.getpid()}.jsonl"), "ab") as fh:
            fh.write(data)


def write(data: bytes) -> None:
    OUT.write(data)
    OUT.flush()


def send(msg: dict) -> None:
    global noise_sent
    if not noise_sent:
        noise_sent = True
        if SPEC.get("stdout_noise"):
            write(SPEC["stdout_noise"].encode() + b"\n")
        left = int(SPEC.get("flood", 0))
        while left > 0:
            chunk = min(left, 64 * 1024)
            write(b"x" * (chunk - 1) + b"\n")
            left -= chunk
    write(json.dumps(msg).encode() + b"\n")


def capabilities() -> dict:
    caps: dict = {}
    if SPEC.get("tools", []) is not None:
        caps["tools"] = {}
    if SPEC.get("prompts") is not None:
        caps["prompts"] = {}
    if SPEC.get("resources") is not None or SPEC.get("resourceTemplates") is not None:
        caps["resources"] = {}
    return caps


def server_info() -> dict:
    return {"name": SPEC.get("name", "raw-server"), "version": SPEC.get("version", "1.0.0")}


def with_env(tool: dict) -> dict:
    description = tool.get("description")
    if not isinstance(description, str):
        return tool
    for name in SPEC.get("env_in_descriptions", []):
        description = description.replace(f"${name}", os.environ.get(name, ""))
    return {**tool, "description": description}


def tools_page(params: dict) -> dict:
    tools = [with_env(t) for t in SPEC.get("tools", [])]
    if "roots" in client_caps:
        tools = tools + SPEC.get("tools_if_roots", [])
    size = SPEC.get("page_size")
    if not size:
        return {"tools": tools}
    cursor = (params or {}).get("cursor")
    page = int(cursor[1:]) if cursor else 0
    result: dict = {"tools": tools[page * size : (page + 1) * size]}
    if (page + 1) * size < len(tools):
        result["nextCursor"] = f"p{page + 1}"
    return result


def read_line() -> bytes:
    line = sys.stdin.buffer.readline()
    if line:
        record(line)
    return line


def ask_roots() -> None:
    send({"jsonrpc": "2.0", "id": "server-roots-1", "method": "roots/list"})
    while True:
        line = read_line()
        if not line:
            return
        msg = json.loads(line)
        if msg.get("id") == "server-roots-1" and "method" not in msg:
            return


def answer(msg: dict) -> dict | None:
    global client_caps, saw_discover
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        client_caps = params.get("capabilities") or {}
    meta = params.get("_meta") or {}
    if "io.modelcontextprotocol/clientCapabilities" in meta:
        client_caps = meta["io.modelcontextprotocol/clientCapabilities"] or {}
    if method == SPEC.get("exit_on"):
        sys.exit(3)
    if method == "server/discover":
        mode = SPEC.get("discover", "answer")
        saw_discover = mode in ("answer", "unsupported")
        time.sleep(float(SPEC.get("discover_delay", 0)))
        if mode == "ignore":
            return None
        if mode == "error":
            return {"error": {"code": -32601, "message": "Method not found: server/discover"}}
        if mode == "unsupported":
            return {
                "error": {
                    "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": {"supported": ["2027-01-01"]},
                }
            }
        result = {
            "supportedVersions": ["2026-07-28", "2025-11-25"],
            "capabilities": capabilities(),
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
        }
        if SPEC.get("instructions") is not None:
            result["instructions"] = SPEC["instructions"]
        return {"result": result}
    if method == "initialize" and saw_discover and SPEC.get("strict"):
        return {
            "error": {
                "code": -32022,
                "message": "this connection is serving the 2026-07-28 protocol",
            }
        }
    if method == "initialize":
        mode = SPEC.get("initialize", "answer")
        if mode == "ignore":
            return None
        if mode == "error":
            return {"error": {"code": -32602, "message": "Unsupported protocol version"}}
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": capabilities(),
            "serverInfo": server_info(),
        }
        if SPEC.get("instructions") is not None:
            result["instructions"] = SPEC["instructions"]
        return {"result": result}
    if method == "tools/list":
        if SPEC.get("ask_roots"):
            ask_roots()
        if SPEC.get("repeat_key"):
            return {
                "raw": b'{"tools":[],"tools":' + json.dumps(SPEC.get("tools", [])).encode() + b"}"
            }
        return {"result": tools_page(params)}
    if method == "prompts/list":
        return {"result": {"prompts": SPEC.get("prompts") or []}}
    if method == "resources/list":
        return {"result": {"resources": SPEC.get("resources") or []}}
    if method == "resources/templates/list":
        return {"result": {"resourceTemplates": SPEC.get("resourceTemplates") or []}}
    if method == "ping":
        return {"result": {}}
    if method == "tools/call":
        return {"result": {"content": [{"type": "text", "text": "called"}]}}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    time.sleep(float(SPEC.get("start_delay", 0)))
    if SPEC.get("env_out"):
        names = SPEC.get("env_names", [])
        with open(SPEC["env_out"], "w", encoding="utf-8") as fh:
            json.dump({"env": {n: os.environ.get(n) for n in names}, "cwd": os.getcwd()}, fh)
    if SPEC.get("child_pid"):
        import subprocess  # only here: this process starts many times per run

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        with open(SPEC["child_pid"], "w", encoding="utf-8") as fh:
            fh.write(str(child.pid))
    if SPEC.get("stubborn"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        line = read_line()
        if not line:
            break
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg or "method" not in msg:
            continue
        reply = answer(msg)
        if reply is None:
            continue
        if "raw" in reply:
            write(
                b'{"jsonrpc":"2.0","id":'
                + json.dumps(msg["id"]).encode()
                + b',"result":'
                + reply["raw"]
                + b"}\n"
            )
            continue
        send({"jsonrpc": "2.0", "id": msg["id"], **reply})
    if SPEC.get("stubborn"):
        time.sleep(300)


if __name__ == "__main__":
    main()
