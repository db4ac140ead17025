"""A raw MCP stdio server for the crawler tests, driven by a JSON spec file.

Usage: python stub_server.py SPEC.json

Spec members (all optional): ``name``, ``version``, ``tools`` (list of tool objects),
``prompts``, ``instructions``, ``modern`` (answer server/discover), ``page_size`` (tools per
page), ``require_env`` (names: each missing one is reported on stderr and the server exits
1), ``env_report`` (a path: the names and values of the environment are written there as
JSON), ``stderr`` (a text written to stderr at start), ``crash`` (exit at once with this
code), ``hang`` (never answer).
The spec is read at every start, so a test changes a server by rewriting its spec.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    if "env_report" in spec:
        with open(spec["env_report"], "w", encoding="utf-8") as handle:
            json.dump(dict(os.environ), handle)
    if "stderr" in spec:
        print(spec["stderr"], file=sys.stderr, flush=True)
    if "crash" in spec:
        print("stub: crashing on purpose", file=sys.stderr)
        sys.exit(int(spec["crash"]))
    missing = [n for n in spec.get("require_env", []) if not os.environ.get(n)]
    if missing:
        for name in missing:
            print(f"Error: {name} environment variable is required", file=sys.stderr)
        sys.exit(1)
    tools = spec.get("tools", [])
    page = int(spec.get("page_size", 0)) or max(1, len(tools))
    info = {"name": spec.get("name", "stub"), "version": spec.get("version", "1.0.0")}
    caps = {"tools": {}}
    if "prompts" in spec:
        caps["prompts"] = {}
    for raw in sys.stdin:
        if spec.get("hang"):
            time.sleep(3600)
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        if "id" not in msg:
            continue
        method, id_ = msg.get("method"), msg["id"]
        params = msg.get("params") or {}
        result = None
        if method == "server/discover" and spec.get("modern"):
            result = {
                "supportedVersions": ["2026-07-28"],
                "capabilities": caps,
                "_meta": {"io.modelcontextprotocol/serverInfo": info},
            }
            if "instructions" in spec:
                result["instructions"] = spec["instructions"]
        elif method == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": caps, "serverInfo": info}
            if "instructions" in spec:
                result["instructions"] = spec["instructions"]
        elif method == "tools/list":
            start = int(params.get("cursor") or 0)
            result = {"tools": tools[start : start + page]}
            if start + page < len(tools):
                result["nextCursor"] = str(start + page)
        elif method == "prompts/list" and "prompts" in spec:
            result = {"prompts": spec["prompts"]}
        if result is None:
            answer = {"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "no"}}
        else:
            answer = {"jsonrpc": "2.0", "id": id_, "result": result}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
