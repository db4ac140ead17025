"""Real MCP servers behind ``toolpin run``, driven by the Python SDK client and by the
TypeScript SDK client (``@modelcontextprotocol/sdk`` in a real Node process).

The four npm reference servers (``server-everything``, ``-filesystem``, ``-memory``,
``-sequential-thinking``, installed once into ``<repo>/.cache/npm-servers``) and two PyPI
servers run by ``uvx`` (``mcp-server-time``, ``mcp-server-fetch``; uv's cache is
``<repo>/.cache/uv``). For each server and each client, in a fresh pin store: the first
session pins, the restart finds the definitions unchanged (the audit log holds one
``pin`` and nothing else), and both sessions call one harmless tool (``fetch`` reads a
page from a loopback HTTP server here: no network). What the proxy pinned hashes the
same as the listing ``tests/data/real-listings/collect.py`` captured from the same
version, so the corpus and the servers agree.

Where npm or the package index cannot be reached the tests are skipped, except under
``TOOLPIN_REQUIRE_NPM=1`` / ``TOOLPIN_REQUIRE_REGISTRIES=1`` (``.ci/run``), where they fail.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.proxy.harness import proxy_env, run_cli
from tests.proxy.test_real_listings import CORPUS

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
UV_CACHE = REPO / ".cache" / "uv"
NPM_PREFIX = REPO / ".cache" / "npm-servers"
NPM_PACKAGES = {
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@modelcontextprotocol/server-sequential-thinking": "2026.8.31",
    "@modelcontextprotocol/sdk": "1.32.2",  # the TypeScript SDK client
}
PYPI = {"mcp-server-time": "2026.10.19", "mcp-server-fetch": "2026.10.24"}
PAGE = "<html><body><h1>Loopback page</h1><p>served to mcp-server-fetch</p></body></html>"

TS_CLIENT = r"""
// argv[2]: the npm prefix holding @modelcontextprotocol/sdk; argv[3]: the job (JSON).
const { createRequire } = require("node:module");
const sdk = createRequire(process.argv[2] + "/package.json");
const { Client } = sdk("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = sdk("@modelcontextprotocol/sdk/client/stdio.js");
const job = JSON.parse(process.argv[3]);
(async () => {
  const transport = new StdioClientTransport({
    command: job.command, args: job.args, env: job.env, stderr: "pipe",
  });
  let stderr = "";
  transport.stderr.on("data", (d) => { stderr += d; });
  const client = new Client({ name: "ts-sdk-test", version: "1.0.0" });
  const out = {};
  try {
    await client.connect(transport);
    const tools = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    out.tools = tools.map((t) => t.name);
    out.call = await client.callTool({ name: job.tool, arguments: job.arguments });
  } catch (e) {
    out.error = { code: e.code, message: String(e.message) };
  }
  await client.close();
  out.stderr = stderr;
  process.stdout.write(JSON.stringify(out) + "\n");
})();
"""


@dataclass
class Case:
    """One real server: how to start it and the harmless call to make."""

    corpus: str
    npm: str | None
    argv: list[str]
    tool: str
    arguments: dict[str, Any]
    expect: str
    env: dict[str, str] = field(default_factory=dict)


CASES = {
    "server-everything": Case(
        "server-everything.json",
        "@modelcontextprotocol/server-everything",
        ["stdio"],
        "echo",
        {"message": "through toolpin"},
        "Echo: through toolpin",
    ),
    "server-filesystem": Case(
        "server-filesystem.json",
        "@modelcontextprotocol/server-filesystem",
        ["{tmp}"],
        "list_allowed_directories",
        {},
        "{tmp}",
    ),
    "server-memory": Case(
        "server-memory.json",
        "@modelcontextprotocol/server-memory",
        [],
        "read_graph",
        {},
        '"entities"',
        {"MEMORY_FILE_PATH": "{tmp}/memory.jsonl"},
    ),
    "server-sequential-thinking": Case(
        "server-sequential-thinking.json",
        "@modelcontextprotocol/server-sequential-thinking",
        [],
        "sequentialthinking",
        {
            "thought": "One step.",
            "thoughtNumber": 1,
            "totalThoughts": 1,
            "nextThoughtNeeded": False,
        },
        '"thoughtNumber": 1',
    ),
    "mcp-server-time": Case(
        "mcp-server-time.json",
        None,
        ["--local-timezone", "UTC"],
        "get_current_time",
        {"timezone": "UTC"},
        '"timezone": "UTC"',
    ),
    "mcp-server-fetch": Case(
        "mcp-server-fetch.json",
        None,
        ["--allow-private-ips"],  # the page is on 127.0.0.1
        "fetch",
        {"url": "{url}"},
        "Loopback page",
    ),
}
CLIENTS = ["python-sdk", "typescript-sdk"]
SERVERS = [
    pytest.param(
        name,
        marks=[pytest.mark.npm] if case.npm else [pytest.mark.registries, pytest.mark.slow],
    )
    for name, case in CASES.items()
]


def _unavailable(why: str, variable: str) -> None:
    if os.environ.get(variable):
        pytest.fail(why)
    pytest.skip(why)


def _uv_env() -> dict[str, str]:
    return {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "UV_CACHE_DIR": str(UV_CACHE),
        # uvx runs the server on this interpreter; never downloads one.
        "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never",
        "TZ": "UTC",
    }


@pytest.fixture(scope="module")
def uvx_servers(tmp_path_factory: pytest.TempPathFactory) -> str:
    """``uvx`` with every PyPI server of ``PYPI`` in its cache (run once with ``--help``),
    its modules compiled (:func:`_compile_tool_env`)."""
    uvx = shutil.which("uvx", path=_uv_env()["PATH"])
    if uvx is None:
        pytest.fail("uvx is not installed (it comes with uv, in the test extra)")
    env = {**os.environ, **_uv_env(), "HOME": str(tmp_path_factory.mktemp("home"))}
    for package, version in PYPI.items():
        # From uv's cache if it is there, else from the index.
        for mode in (["--offline"], []):
            try:
                done = subprocess.run(
                    [uvx, *mode, "--from", f"{package}=={version}", package, "--help"],
                    capture_output=True,
                    text=True,
                    timeout=300,
                    env=env,
                    stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired:
                continue
            if done.returncode == 0:
                break
        else:
            _unavailable(
                f"uvx could not install {package}=={version}", "TOOLPIN_REQUIRE_REGISTRIES"
            )
        _compile_tool_env(uvx, package, version, env)
    return uvx


def _compile_tool_env(uvx: str, package: str, version: str, env: dict[str, str]) -> None:
    """Compile the modules of the environment ``uvx`` keeps for ``package`` in its cache,
    once (an up-to-date module is skipped).

    uv installs without bytecode, and with ``PYTHONDONTWRITEBYTECODE`` set (as on this
    machine) Python never writes it either: every start of the server compiled every
    module it imports again (mcp, pydantic, httpx: 2.4 s CPU for ``mcp-server-fetch
    --help``, 1.3 s compiled). The same environment and the same files run; only their
    bytecode is kept beside them, where Python would write it without that variable. A
    module that does not compile is left to be compiled at import, as before."""
    code = (
        "import compileall, sysconfig; "
        "compileall.compile_dir(sysconfig.get_paths()['purelib'], quiet=2, workers=1)"
    )
    subprocess.run(
        [uvx, "--offline", "--from", f"{package}=={version}", "python", "-c", code],
        capture_output=True,
        timeout=300,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def npm_install(prefix: Path, package: str, version: str) -> str | None:
    """Install ``package@version`` into ``prefix`` unless it is there, under the install
    lock every npm-installing fixture takes; ``None`` when done, else why not."""
    from filelock import FileLock

    manifest = prefix / "node_modules" / package / "package.json"

    def installed() -> bool:
        return manifest.exists() and json.loads(manifest.read_text("utf-8"))["version"] == version

    prefix.mkdir(parents=True, exist_ok=True)
    with FileLock(str(prefix / ".install.lock"), timeout=1200):
        if installed():
            return None
        npm = shutil.which("npm")
        if npm is None:
            return "npm is not on PATH; Node and npm are needed for these tests"
        spec = f"{package}@{version}"
        done = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", spec],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "npm_config_update_notifier": "false"},
        )
        if done.returncode != 0 or not installed():
            return f"npm install of {package}@{version} failed:\n{done.stdout}\n{done.stderr}"
    return None


@pytest.fixture(scope="module")
def npm_packages() -> Path:
    """``<repo>/.cache/npm-servers`` (shared with the other npm tests) holding every
    package of :data:`NPM_PACKAGES`. Where npm cannot install them the tests that need
    them are skipped, except under ``TOOLPIN_REQUIRE_NPM=1`` (``.ci/run``): they fail."""
    for package, version in NPM_PACKAGES.items():
        why = npm_install(NPM_PREFIX, package, version)
        if why is not None:
            _unavailable(why, "TOOLPIN_REQUIRE_NPM")
    return NPM_PREFIX


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGE.encode() if self.path == "/" else b"not here"
        self.send_response(200 if self.path == "/" else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def loopback_page() -> Iterator[str]:
    """A page on a loopback HTTP server (``robots.txt`` is 404: fetching is allowed)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _server_argv(case: Case, request: pytest.FixtureRequest, tmp: str) -> list[str]:
    args = [a.format(tmp=tmp) for a in case.argv]
    if case.npm is not None:
        prefix: Path = request.getfixturevalue("npm_packages")
        manifest = prefix / "node_modules" / case.npm / "package.json"
        entry = next(iter(json.loads(manifest.read_text("utf-8"))["bin"].values()))
        return ["node", str(manifest.parent / entry), *args]
    uvx: str = request.getfixturevalue("uvx_servers")
    name = case.corpus.removesuffix(".json")
    # In uv's cache since the fixture ran: no index is asked again.
    return [uvx, "--offline", "--from", f"{name}=={PYPI[name]}", name, *args]


def _python_session(
    home: Path, argv: list[str], env: dict[str, str], case: Case, arguments: dict[str, Any]
) -> tuple[list[str], str]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolpin", "run", "--", *argv], env=env
    )

    async def session() -> tuple[list[str], str]:
        async with Client(params) as client:
            names: list[str] = []
            cursor = None
            while True:
                page = await client.list_tools(cursor=cursor, cache_mode="bypass")
                names.extend(t.name for t in page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
            result = await client.call_tool(case.tool, arguments)
            assert not result.is_error, result
            text = " ".join(getattr(c, "text", "") for c in result.content)
            if result.structured_content is not None:
                text += " " + json.dumps(result.structured_content)
            return names, text

    with open(os.devnull, "w") as quiet, contextlib.redirect_stderr(quiet):
        return anyio.run(session)


def _ts_session(
    prefix: Path,
    script: Path,
    argv: list[str],
    env: dict[str, str],
    case: Case,
    arguments: dict[str, Any],
) -> tuple[list[str], str]:
    job = {
        "command": sys.executable,
        "args": ["-m", "toolpin", "run", "--", *argv],
        "env": env,
        "tool": case.tool,
        "arguments": arguments,
    }
    done = subprocess.run(
        ["node", str(script), str(prefix), json.dumps(job)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "error" not in out, out
    call = out["call"]
    assert not call.get("isError"), call
    text = " ".join(c.get("text", "") for c in call["content"])
    if call.get("structuredContent") is not None:
        text += " " + json.dumps(call["structuredContent"])
    return out["tools"], text


def _audit_events(home: Path) -> list[str]:
    path = home / "audit.log"
    if not path.exists():
        return []
    return [json.loads(x)["event"] for x in path.read_text().splitlines()]


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("server", SERVERS)
def test_real_server_pins_restarts_unchanged_and_answers_a_call(
    server: str,
    client: str,
    request: pytest.FixtureRequest,
    toolpin_home: Path,
    tmp_path: Path,
) -> None:
    case = CASES[server]
    tmp = str(tmp_path.resolve())
    argv = _server_argv(case, request, tmp)
    url = request.getfixturevalue("loopback_page") if server == "mcp-server-fetch" else ""
    arguments = {
        k: v.format(url=url) if isinstance(v, str) else v for k, v in case.arguments.items()
    }
    # The servers (and uv, npm's tools) write nothing into the real HOME.
    (tmp_path / "home").mkdir()
    env = proxy_env(
        toolpin_home,
        **_uv_env(),
        HOME=str(tmp_path / "home"),
        **{k: v.format(tmp=tmp) for k, v in case.env.items()},
    )
    script = tmp_path / "ts_client.cjs"
    script.write_text(TS_CLIENT, encoding="utf-8")
    captured = json.loads((CORPUS / case.corpus).read_text(encoding="utf-8"))
    expected_names = [t["name"] for t in captured["tools"]]

    for run in range(2):
        if client == "python-sdk":
            names, text = _python_session(toolpin_home, argv, env, case, arguments)
        else:
            prefix: Path = request.getfixturevalue("npm_packages")
            names, text = _ts_session(prefix, script, argv, env, case, arguments)
        assert names == expected_names, (run, names)
        assert case.expect.format(tmp=tmp) in text, (run, text)
        # The first session pinned; the restart found every definition unchanged.
        assert _audit_events(toolpin_home) == ["pin"], run

    assert run_cli(toolpin_home, "verify").returncode == 0
    rows = json.loads(run_cli(toolpin_home, "list", "--json").stdout)
    assert len(rows) == 1 and rows[0]["pending"] is None
    shown = json.loads(run_cli(toolpin_home, "show", rows[0]["id"], "--json").stdout)
    hashed = json.loads(run_cli(toolpin_home, "hash", "--json", str(CORPUS / case.corpus)).stdout)
    assert shown["tools"]["set_hash"] == hashed["tools"]["setHash"]
