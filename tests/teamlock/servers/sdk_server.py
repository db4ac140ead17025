"""An SDK ``MCPServer`` (stdio) whose texts come from a JSON file: ``sdk_server.py TEXTS.json``.

``TEXTS.json`` may hold ``instructions``, ``add`` (the add tool's description),
``extra_tool`` (when true, a second tool ``subtract`` is offered), ``record`` (a file
that gets the name of every tool called, prompt fetched or resource read) and
``start_delay`` (seconds from the process start before it reads its input: a slow start,
like ``uvx`` on a cold cache).
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import json  # noqa: E402
import sys  # noqa: E402

from mcp.server.mcpserver import MCPServer  # noqa: E402

TEXTS = json.loads(open(sys.argv[1], encoding="utf-8").read())  # noqa: SIM115


def note(what: str) -> None:
    if TEXTS.get("record"):
        with open(TEXTS["record"], "a", encoding="utf-8") as fh:
            fh.write(what + "\n")


app = MCPServer("sdk-fixture", instructions=TEXTS.get("instructions", "Add numbers with care."))


@app.tool(description=TEXTS.get("add", "Add two integers."))
def add(a: int, b: int) -> int:
    note("tools/call add")
    return a + b


if TEXTS.get("extra_tool"):

    @app.tool()
    def subtract(a: int, b: int) -> int:
        """Subtract b from a."""
        note("tools/call subtract")
        return a - b


@app.prompt()
def greet(name: str) -> str:
    """Greet someone by name."""
    note("prompts/get greet")
    return f"Hello {name}"


@app.resource("fixture://readme")
def readme() -> str:
    """The fixture's readme."""
    note("resources/read readme")
    return "readme"


@app.resource("fixture://items/{item}")
def item(item: str) -> str:
    """One item."""
    note("resources/read item")
    return item


time.sleep(max(0.0, float(TEXTS.get("start_delay", 0)) - (time.monotonic() - STARTED)))
app.run()
