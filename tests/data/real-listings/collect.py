"""Capture the ``tools/list`` answers of real MCP servers into this folder.

Run from the repository root (needs Node with npm, and ``uvx`` from the test extra)::

    .venv/bin/python tests/data/real-listings/collect.py            # the live servers
    .venv/bin/python tests/data/real-listings/collect.py --github DIR  # + github snapshots

Each live server is started on stdio at a pinned version (the current npm reference
servers installed into ``.cache/npm-servers``, archived and third-party ones into
``.cache/corpus-npm``, PyPI packages run by ``uvx --from NAME==VERSION``), spoken to
with hand-written JSON-RPC (``initialize``, ``notifications/initialized``, then
``tools/list`` page by page) and its answer's ``result`` (every page's tools in one
list) written to ``<name>.json``. ``--github DIR`` turns each per-tool snapshot that
github/github-mcp-server commits (``DIR/pkg/github/__toolsnaps__/*.snap``, DIR a
checkout) into ``github-<tool>.json``, a one-tool listing as the server gives it when
only that tool is enabled. Every written file gets a line in ``SOURCES``.

No toolpin import: the corpus must not depend on the code it tests.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
NPM_PREFIX = REPO / ".cache" / "npm-servers"
UV_CACHE = REPO / ".cache" / "uv"
NPM_VERSION = "2026.8.31"
NPM = {
    "server-everything": ("@modelcontextprotocol/server-everything", ["stdio"]),
    "server-filesystem": ("@modelcontextprotocol/server-filesystem", ["{tmp}"]),
    "server-memory": ("@modelcontextprotocol/server-memory", []),
    "server-sequential-thinking": ("@modelcontextprotocol/server-sequential-thinking", []),
}
# Reference servers since archived (still on npm) and popular third-party servers,
# installed apart (no browser is downloaded: a listing needs none). The ones that refuse
# to start without a credential get the placeholder ``unused``: nothing is ever called.
OTHER_PREFIX = REPO / ".cache" / "corpus-npm"
OTHER: dict[str, tuple[str, str, list[str], list[str]]] = {
    "server-brave-search": (
        "@modelcontextprotocol/server-brave-search",
        "0.6.2",
        [],
        ["BRAVE_API_KEY"],
    ),
    "server-everart": ("@modelcontextprotocol/server-everart", "0.6.2", [], ["EVERART_API_KEY"]),
    "server-github": (
        "@modelcontextprotocol/server-github",
        "2025.4.8",
        [],
        ["GITHUB_PERSONAL_ACCESS_TOKEN"],
    ),
    "server-gitlab": (
        "@modelcontextprotocol/server-gitlab",
        "2025.4.25",
        [],
        ["GITLAB_PERSONAL_ACCESS_TOKEN"],
    ),
    "server-google-maps": (
        "@modelcontextprotocol/server-google-maps",
        "0.6.2",
        [],
        ["GOOGLE_MAPS_API_KEY"],
    ),
    "server-postgres": (
        "@modelcontextprotocol/server-postgres",
        "0.6.2",
        ["postgresql://127.0.0.1:1/none"],
        [],
    ),
    "server-puppeteer": ("@modelcontextprotocol/server-puppeteer", "2025.5.12", [], []),
    "server-slack": (
        "@modelcontextprotocol/server-slack",
        "2025.4.25",
        [],
        ["SLACK_BOT_TOKEN", "SLACK_TEAM_ID"],
    ),
    "playwright-mcp": ("@playwright/mcp", "0.0.83", ["--isolated"], []),
    "context7-mcp": ("@upstash/context7-mcp", "4.1.1", [], []),
    "firecrawl-mcp": ("firecrawl-mcp", "3.26.0", [], ["FIRECRAWL_API_KEY"]),
    "tavily-mcp": ("tavily-mcp", "0.2.22", [], ["TAVILY_API_KEY"]),
    "exa-mcp-server": ("exa-mcp-server", "3.4.1", [], ["EXA_API_KEY"]),
    "notion-mcp-server": ("@notionhq/notion-mcp-server", "2.5.2", [], []),
}
PYPI = {
    # Without --local-timezone the tool descriptions name this machine's timezone.
    "mcp-server-time": ("mcp-server-time", "2026.10.19", ["--local-timezone", "UTC"]),
    "mcp-server-fetch": ("mcp-server-fetch", "2026.10.24", []),
    "mcp-server-git": ("mcp-server-git", "2026.10.19", []),
}
WAIT = 120.0


class Peer:
    """One server process spoken to in newline-delimited JSON-RPC."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"the server closed its stdout before answering {method}")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return message["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def listing(argv: list[str], env: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The server's info and its whole tools/list result."""
    peer = Peer(argv, env)
    try:
        init = peer.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "collect", "version": "1"},
            },
        )
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools: list[Any] = []
        params: dict[str, Any] = {}
        while True:
            page = peer.request("tools/list", params)
            tools.extend(page["tools"])
            if not page.get("nextCursor"):
                break
            params = {"cursor": page["nextCursor"]}
    finally:
        peer.close()
    return init.get("serverInfo", {}), {"tools": tools}


def npm_entry(prefix: Path, package: str, version: str, specs: list[str]) -> Path:
    """The entry script of ``package`` at ``version`` under ``prefix`` (``specs``
    installed there first when it is missing)."""
    manifest = prefix / "node_modules" / package / "package.json"
    if not manifest.exists() or json.loads(manifest.read_text())["version"] != version:
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is not on PATH")
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *specs],
            check=True,
            env={
                **os.environ,
                "PUPPETEER_SKIP_DOWNLOAD": "1",
                "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
            },
        )
    bins = json.loads(manifest.read_text())["bin"]
    return manifest.parent / (bins if isinstance(bins, str) else next(iter(bins.values())))


def write(name: str, result: dict[str, Any]) -> None:
    text = json.dumps(result, ensure_ascii=False, indent=2) + "\n"
    (HERE / f"{name}.json").write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--github", type=Path, help="a checkout of github/github-mcp-server")
    parser.add_argument("--github-commit", default="", help="the checkout's commit")
    parser.add_argument("--skip-live", action="store_true")
    args = parser.parse_args()
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    sources: dict[str, str] = {}
    sources_file = HERE / "SOURCES"
    if sources_file.exists():
        for line in sources_file.read_text(encoding="utf-8").splitlines():
            if line and not line.startswith("#"):
                sources[line.split()[0]] = line
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "TZ": "UTC",
        "UV_CACHE_DIR": str(UV_CACHE),
        "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never",
    }
    if not args.skip_live:
        with tempfile.TemporaryDirectory(prefix="collect-") as tmp:
            server_env = {
                **env,
                "MEMORY_FILE_PATH": str(Path(tmp) / "memory.jsonl"),
                # A server that writes settings or caches writes them here, not in HOME.
                "HOME": tmp,
            }
            specs = [f"{p}@{NPM_VERSION}" for p, _ in NPM.values()]
            for name, (package, extra) in NPM.items():
                entry = npm_entry(NPM_PREFIX, package, NPM_VERSION, specs)
                argv = ["node", str(entry), *(a.format(tmp=tmp) for a in extra)]
                info, result = listing(argv, server_env)
                write(name, result)
                sources[f"{name}.json"] = (
                    f"{name}.json npm:{package}@{NPM_VERSION} live "
                    f"serverInfo={info.get('name')}/{info.get('version')} captured={today}"
                )
            others = [f"{p}@{v}" for p, v, _, _ in OTHER.values()]
            for name, (package, version, extra, credentials) in OTHER.items():
                entry = npm_entry(OTHER_PREFIX, package, version, others)
                started = {**server_env, **dict.fromkeys(credentials, "unused")}
                info, result = listing(["node", str(entry), *extra], started)
                write(name, result)
                sources[f"{name}.json"] = (
                    f"{name}.json npm:{package}@{version} live "
                    f"serverInfo={info.get('name')}/{info.get('version')} captured={today}"
                )
            for name, (package, version, extra) in PYPI.items():
                uvx = shutil.which("uvx", path=env["PATH"])
                if uvx is None:
                    raise SystemExit("uvx is not on PATH (pip install uv)")
                argv = [uvx, "--from", f"{package}=={version}", package, *extra]
                info, result = listing(argv, server_env)
                write(name, result)
                sources[f"{name}.json"] = (
                    f"{name}.json pypi:{package}=={version} live "
                    f"serverInfo={info.get('name')}/{info.get('version')} captured={today}"
                )
    if args.github is not None:
        snaps = sorted((args.github / "pkg" / "github" / "__toolsnaps__").glob("*.snap"))
        for snap in snaps:
            definition = json.loads(snap.read_text(encoding="utf-8"))
            name = f"github-{snap.stem}"
            write(name, {"tools": [definition]})
            sources[f"{name}.json"] = (
                f"{name}.json github:github/github-mcp-server "
                f"pkg/github/__toolsnaps__/{snap.name}@{args.github_commit} captured={today}"
            )
    header = (
        "# file  source (npm:pkg@version / pypi:pkg==version live capture, or\n"
        "# github:owner/repo path@commit)  captured=date. Written by collect.py.\n"
    )
    body = "".join(line + "\n" for _, line in sorted(sources.items()))
    sources_file.write_text(header + body, encoding="utf-8")


if __name__ == "__main__":
    main()
