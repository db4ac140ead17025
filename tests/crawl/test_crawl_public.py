"""Crawls of public sources: a fake registry pointing at a real Streamable HTTP server (MCP
SDK) on loopback, incremental registry runs, and an npm package installed from a fake npm
registry (with --allow-exec)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from crawl_helpers import (
    FakeAPI,
    LogKey,
    Reply,
    Seen,
    independent_check,
    json_reply,
    sdk_http_server,
)

from toolpin.crawl.runner import CrawlOptions, crawl, default_state_path
from toolpin.crawl.state import CrawlState
from toolpin.probe.ssrf import AddressPolicy
from toolpin.publog.verify import verify_log


def _item(name: str, updated: str, **server: Any) -> dict[str, Any]:
    official = {"status": "active", "updatedAt": updated}
    return {
        "server": {"name": name, "version": "1.0.0", **server},
        "_meta": {"io.modelcontextprotocol.registry/official": official},
    }


def _options(tmp_path: Path, key: LogKey, env: dict[str, str], **extra: Any) -> CrawlOptions:
    values: dict[str, Any] = {
        "log_dir": tmp_path / "log",
        "signer": key.signer,
        "sources": ("registry",),
        "environ": env,
        "timeout": 20.0,
        "optout_dirs": (),
    }
    values.update(extra)
    return CrawlOptions(**values)


def test_registry_remote_is_crawled_over_http_only_with_the_allowance(
    tmp_path: Path, log_key: LogKey, fake_api: FakeAPI
) -> None:
    with sdk_http_server() as url:
        listing = {
            "servers": [
                _item(
                    "io.example/sdk-remote",
                    "2026-10-01T00:00:00Z",
                    remotes=[{"type": "streamable-http", "url": url}],
                ),
                _item(
                    "io.example/npm-thing",
                    "2026-10-02T00:00:00Z",
                    packages=[{"registryType": "npm", "identifier": "thing", "version": "1.0.0"}],
                ),
            ],
            "metadata": {"count": 2},
        }
        fake_api.routes["/v0.1/servers"] = lambda seen: json_reply(listing)
        env = {"TOOLPIN_REGISTRY_URL": fake_api.url}

        refused = crawl(_options(tmp_path, log_key, env))
        statuses = {r.candidate.name: (r.status, r.reason) for r in refused.results}
        assert statuses["io.example/sdk-remote"][0] == "failed"
        assert "SSRF guard" in (statuses["io.example/sdk-remote"][1] or "")
        assert statuses["io.example/npm-thing"] == (
            "skipped",
            "installing a package needs --allow-exec",
        )
        assert refused.appended == 0

        allowed = crawl(_options(tmp_path, log_key, env, policy=AddressPolicy(allow_private=True)))
        assert allowed.appended == 1
        (record,) = independent_check(tmp_path / "log", log_key.vkey)
        assert record["server"]["transport"] == "streamable-http"
        assert record["server"]["url"] == url
        assert record["server"]["source"] == "registry"
        assert record["protocol"]["era"] == "modern"
        assert record["counts"]["tools"] == 2
        assert "probeEnv" not in record

        # Incremental: the next run asks for updates since the newest updatedAt, gets
        # nothing new, and still looks at the known server again.
        listing["servers"] = []
        again = crawl(_options(tmp_path, log_key, env, policy=AddressPolicy(allow_private=True)))
        last = fake_api.requests_to("/v0.1/servers")[-1]
        assert last.query["updated_since"] == ["2026-10-02T00:00:00Z"]
        assert again.to_json()["unchanged"] == 1
        assert again.appended == 0
    assert verify_log(tmp_path / "log", log_key.vkey).ok
    with CrawlState.open(default_state_path(tmp_path / "log")) as state:
        rows = {s.name: s for s in state.servers()}
        assert rows["io.example/npm-thing"].last_error == (
            "not probed: installing a package needs --allow-exec"
        )
        assert rows["io.example/npm-thing"].last_probe is None


NODE_SERVER = """#!/usr/bin/env node
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch (e) { return; }
  if (m.id === undefined) return;
  let result = null;
  if (m.method === 'initialize') {
    result = { protocolVersion: '2025-06-18', capabilities: { tools: {} },
               serverInfo: { name: 'node-stub', version: '1.0.0' } };
  } else if (m.method === 'tools/list') {
    result = { tools: [{ name: 'hello', description: 'Say hello',
                         inputSchema: { type: 'object' } }] };
  }
  const out = result ? { jsonrpc: '2.0', id: m.id, result }
                     : { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no' } };
  process.stdout.write(JSON.stringify(out) + '\\n');
});
"""


def _tarball() -> bytes:
    manifest = {"name": "stub-mcp", "version": "1.0.0", "bin": {"stub-mcp": "server.js"}}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in (("package.json", json.dumps(manifest)), ("server.js", NODE_SERVER)):
            data = text.encode()
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None, reason="no npm")
def test_npm_package_installed_without_scripts_and_probed(
    tmp_path: Path, log_key: LogKey, fake_api: FakeAPI
) -> None:
    tgz = _tarball()
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
    packument = {
        "name": "stub-mcp",
        "dist-tags": {"latest": "1.0.0"},
        "versions": {
            "1.0.0": {
                "name": "stub-mcp",
                "version": "1.0.0",
                "bin": {"stub-mcp": "server.js"},
                "dist": {
                    "tarball": f"{fake_api.url}/stub-mcp/-/stub-mcp-1.0.0.tgz",
                    "integrity": integrity,
                    "shasum": hashlib.sha1(tgz).hexdigest(),
                },
            }
        },
    }

    def tarball(seen: Seen) -> Reply:
        return 200, {"Content-Type": "application/octet-stream"}, tgz

    fake_api.routes["/stub-mcp"] = lambda seen: json_reply(packument)
    fake_api.routes["/stub-mcp/-/stub-mcp-1.0.0.tgz"] = tarball
    fake_api.routes["/-/v1/search"] = lambda seen: json_reply(
        {
            "objects": [{"package": {"name": "stub-mcp", "version": "1.0.0"}}]
            if seen.query["from"] == ["0"] and seen.query["text"] == ["keywords:mcp-server"]
            else [],
            "total": 1,
        }
    )
    env = {"TOOLPIN_NPM_REGISTRY": fake_api.url}
    opts = _options(tmp_path, log_key, env, sources=("npm",), allow_exec=True, timeout=60.0)
    summary = crawl(opts)
    assert summary.appended == 1, summary.results
    (record,) = independent_check(tmp_path / "log", log_key.vkey)
    assert record["server"]["package"] == {
        "ecosystem": "npm",
        "name": "stub-mcp",
        "version": "1.0.0",
        "digest": integrity,
    }
    assert record["serverInfo"]["name"] == "node-stub"
    assert record["counts"]["tools"] == 1
    assert fake_api.requests_to("/stub-mcp/-/stub-mcp-1.0.0.tgz")


PY_SERVER = """import json, sys


def main():
    for raw in sys.stdin:
        msg = json.loads(raw)
        if "id" not in msg:
            continue
        if msg.get("method") == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "wheel-stub", "version": "3.1.4"}}
        elif msg.get("method") == "tools/list":
            result = {"tools": [{"name": "wheel_tool", "inputSchema": {"type": "object"}}]}
        else:
            out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
            print(json.dumps(out), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
    return 0
"""


def _wheel() -> bytes:
    import zipfile

    info = "wheel_stub_mcp-3.1.4.dist-info"
    files = {
        "wheel_stub_mcp/__init__.py": "",
        "wheel_stub_mcp/server.py": PY_SERVER,
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: wheel-stub-mcp\nVersion: 3.1.4\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{info}/entry_points.txt": (
            "[console_scripts]\nwheel-stub-mcp = wheel_stub_mcp.server:main\n"
        ),
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return buffer.getvalue()


def test_pypi_package_installed_from_wheels_and_probed(
    tmp_path: Path, log_key: LogKey, fake_api: FakeAPI
) -> None:
    wheel = _wheel()
    sha = hashlib.sha256(wheel).hexdigest()
    filename = "wheel_stub_mcp-3.1.4-py3-none-any.whl"
    page = f'<html><body><a href="/files/{filename}#sha256={sha}">{filename}</a></body></html>'
    fake_api.routes["/simple/wheel-stub-mcp/"] = lambda seen: (
        200,
        {"Content-Type": "text/html"},
        page.encode(),
    )
    fake_api.routes[f"/files/{filename}"] = lambda seen: (200, {}, wheel)
    listing = {
        "servers": [
            _item(
                "io.example/wheel",
                "2026-10-01T00:00:00Z",
                packages=[
                    {"registryType": "pypi", "identifier": "wheel-stub-mcp", "version": "3.1.4"}
                ],
            )
        ]
    }
    fake_api.routes["/v0.1/servers"] = lambda seen: json_reply(listing)
    env = {"TOOLPIN_REGISTRY_URL": fake_api.url, "TOOLPIN_PYPI_URL": fake_api.url}
    summary = crawl(_options(tmp_path, log_key, env, allow_exec=True, timeout=60.0))
    assert summary.appended == 1, summary.results
    (record,) = independent_check(tmp_path / "log", log_key.vkey)
    assert record["server"]["package"] == {
        "ecosystem": "pypi",
        "name": "wheel-stub-mcp",
        "version": "3.1.4",
        "digest": f"sha256:{sha}",
    }
    assert record["serverInfo"] == {"name": "wheel-stub", "version": "3.1.4"}
    assert "PYTHONPATH" in record["probeEnv"]["supplied"]
