"""Discovery against fake registry, npm and GitHub APIs on loopback (real HTTP servers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from crawl_helpers import FakeAPI, Reply, Seen, json_reply, write_config

from toolpin.crawl.candidates import crawl_id
from toolpin.crawl.sources import discover, merge, registry_candidate
from toolpin.pins.serverid import server_id


def registry_item(
    name: str,
    *,
    status: str = "active",
    updated: str = "2026-10-01T00:00:00Z",
    remotes: list[dict[str, Any]] | None = None,
    packages: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    server: dict[str, Any] = {"name": name, "description": "d", "version": "1.0.0"}
    if remotes is not None:
        server["remotes"] = remotes
    if packages is not None:
        server["packages"] = packages
    official = {"status": status, "updatedAt": updated, "isLatest": True}
    return {"server": server, "_meta": {"io.modelcontextprotocol.registry/official": official}}


def npm_package(name: str, version: str = "1.0.0") -> dict[str, Any]:
    return {
        "name": name,
        "version": version,
        "identifier": name,
        "registryType": "npm",
        "transport": {"type": "stdio"},
    }


PAGES: dict[str | None, dict[str, Any]] = {
    None: {
        "servers": [
            registry_item(
                "io.example/remote",
                remotes=[{"type": "streamable-http", "url": "https://mcp.example.com/mcp"}],
                updated="2026-10-05T10:00:00Z",
            ),
            registry_item("io.example/npm-one", packages=[npm_package("@ex/one", "2.1.0")]),
        ],
        "metadata": {"nextCursor": "io.example/npm-one:1.0.0", "count": 2},
    },
    "io.example/npm-one:1.0.0": {
        "servers": [
            registry_item("io.example/gone", status="deleted", updated="2026-10-07T00:00:00Z"),
            registry_item(
                "io.example/templated",
                remotes=[{"type": "streamable-http", "url": "https://{tenant}.example.com/mcp"}],
            ),
            registry_item(
                "io.example/authed",
                remotes=[
                    {
                        "type": "streamable-http",
                        "url": "https://auth.example.com/mcp",
                        "headers": [{"name": "Authorization", "isRequired": True}],
                    }
                ],
            ),
            registry_item(
                "io.example/docker",
                packages=[{"registryType": "oci", "identifier": "ex/img", "version": "1"}],
            ),
        ],
        # A repeated cursor must stop the paging.
        "metadata": {"nextCursor": "io.example/npm-one:1.0.0", "count": 4},
    },
}


def registry_route(seen: Seen) -> Reply:
    cursor = seen.query.get("cursor", [None])[0]
    return json_reply(PAGES[cursor])


def npm_route(seen: Seen) -> Reply:
    start = int(seen.query["from"][0])
    size = int(seen.query["size"][0])
    query = seen.query["text"][0]
    names = [f"mcp-pkg-{i}" for i in range(5)] if query == "keywords:mcp-server" else ["@ex/one"]
    objects = [
        {"package": {"name": n, "version": "0.1.0", "links": {"homepage": "https://x.example"}}}
        for n in names[start : start + size]
    ]
    return json_reply({"objects": objects, "total": len(names)})


def github_route(seen: Seen) -> Reply:
    if seen.headers.get("authorization") != "Bearer gh-test-token":
        return json_reply({"message": "Bad credentials"}, 401)
    page = int(seen.query["page"][0])
    items = [
        {"full_name": f"owner/repo-{page}-{i}", "html_url": "https://github.com/x"}
        for i in range(100 if page == 1 else 3)
    ]
    return json_reply({"items": items, "total_count": 103})


@pytest.fixture
def apis(fake_api: FakeAPI) -> dict[str, str]:
    fake_api.routes.update(
        {
            "/v0.1/servers": registry_route,
            "/-/v1/search": npm_route,
            "/search/repositories": github_route,
        }
    )
    return {
        "TOOLPIN_REGISTRY_URL": fake_api.url,
        "TOOLPIN_NPM_REGISTRY": fake_api.url,
        "TOOLPIN_GITHUB_API": fake_api.url,
        "GITHUB_TOKEN": "gh-test-token",
    }


def test_registry_paging_and_candidates(fake_api: FakeAPI, apis: dict[str, str]) -> None:
    found = discover(("registry",), environ=apis, registry_since="2026-09-01T00:00:00Z")
    calls = fake_api.requests_to("/v0.1/servers")
    assert len(calls) == 2  # the repeated cursor stopped it
    first, second = calls
    assert first.query["limit"] == ["100"] and first.query["version"] == ["latest"]
    assert first.query["updated_since"] == ["2026-09-01T00:00:00Z"]
    assert "cursor" not in first.query
    assert second.query["cursor"] == ["io.example/npm-one:1.0.0"]

    by_name = {c.name: c for c in found.candidates}
    assert "io.example/gone" not in by_name
    assert found.deleted == [crawl_id("registry", "io.example/gone")]
    assert found.registry_high_water == "2026-10-07T00:00:00Z"
    remote = by_name["io.example/remote"]
    assert (remote.transport, remote.url, remote.probeable) == (
        "streamable-http",
        "https://mcp.example.com/mcp",
        True,
    )
    assert remote.id == crawl_id("registry", "io.example/remote")
    npm = by_name["io.example/npm-one"]
    assert npm.transport == "stdio" and npm.package is not None
    assert (npm.package.ecosystem, npm.package.name, npm.package.version) == (
        "npm",
        "@ex/one",
        "2.1.0",
    )
    assert by_name["io.example/templated"].skip_reason == "the remote URL has variables to fill"
    assert "headers" in (by_name["io.example/authed"].skip_reason or "")
    assert by_name["io.example/docker"].skip_reason == "no sandboxed runner for oci packages"


def test_npm_search_pages_and_merges_with_the_registry(
    fake_api: FakeAPI, apis: dict[str, str]
) -> None:
    found = discover(("registry", "npm"), environ=apis)
    npm_calls = fake_api.requests_to("/-/v1/search")
    texts = {c.query["text"][0] for c in npm_calls}
    assert texts == {"keywords:mcp-server", "keywords:modelcontextprotocol"}
    names = [c.name for c in found.candidates]
    assert [n for n in names if n.startswith("mcp-pkg-")] == [f"mcp-pkg-{i}" for i in range(5)]
    # @ex/one is described by the registry already: the npm hit is merged away.
    assert "@ex/one" not in names
    pkg = next(c for c in found.candidates if c.name == "mcp-pkg-3")
    assert pkg.source == "npm" and pkg.package is not None and pkg.package.version == "0.1.0"
    assert pkg.id == crawl_id("npm", "mcp-pkg-3")


def test_npm_limit_pages_by_size(fake_api: FakeAPI, apis: dict[str, str]) -> None:
    found = discover(("npm",), environ=apis, limit=2)
    first = fake_api.requests_to("/-/v1/search")[0]
    assert first.query["size"] == ["2"] and first.query["from"] == ["0"]
    assert len(found.candidates) == 2


def test_github_needs_a_token_and_is_never_probed(fake_api: FakeAPI, apis: dict[str, str]) -> None:
    found = discover(("github",), environ=apis)
    assert len(found.candidates) == 103
    assert all(not c.probeable for c in found.candidates)
    assert len(fake_api.requests_to("/search/repositories")) == 2  # stopped on a short page
    q = fake_api.requests_to("/search/repositories")[0].query
    assert q["q"] == ["topic:mcp-server"] and q["per_page"] == ["100"]
    without = discover(("github",), environ={**apis, "GITHUB_TOKEN": ""})
    assert without.candidates == []
    assert without.reports[0].error == "skipped: GITHUB_TOKEN is not set"


def test_one_failing_source_does_not_stop_the_others(
    fake_api: FakeAPI, apis: dict[str, str]
) -> None:
    fake_api.routes["/v0.1/servers"] = lambda seen: (500, {}, b"down")
    fake_api.routes["/search/repositories"] = lambda seen: (200, {}, b"{not json")
    found = discover(("registry", "npm", "github"), environ=apis)
    reports = {r.source: r for r in found.reports}
    assert reports["registry"].error == "the MCP registry answered HTTP 500"
    assert reports["github"].error == "the GitHub API answered something that is not strict JSON"
    assert reports["npm"].error is None and reports["npm"].candidates == 6
    assert len(found.candidates) == 6


def test_an_unreachable_source_is_reported(apis: dict[str, str]) -> None:
    found = discover(("registry",), environ={**apis, "TOOLPIN_REGISTRY_URL": "http://127.0.0.1:9"})
    assert found.candidates == []
    assert "cannot reach the MCP registry" in (found.reports[0].error or "")


def test_config_source(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "c.json",
        {
            "local": ["python3", "server.py", "${HOME_DIR}/data"],
            "wrapped": ["toolpin", "run", "--name", "w", "--", "node", "srv.js"],
            "remote": {"type": "http", "url": "https://mcp.example.com/mcp"},
            "legacy": {"type": "sse", "url": "https://old.example.com/sse"},
        },
    )
    data = json.loads(config.read_text())
    data["mcpServers"]["local"]["env"] = {"API_KEY": "${MY_KEY}"}
    config.write_text(json.dumps(data))
    found = discover(("config",), config=config, environ={"HOME_DIR": "/h", "MY_KEY": "k"})
    by_name = {c.name: c for c in found.candidates}
    local = by_name["local"]
    assert local.argv == ("python3", "server.py", "/h/data")
    assert local.env == {"API_KEY": "k"}
    assert local.id == server_id(["python3", "server.py", "${HOME_DIR}/data"])  # as written
    assert by_name["wrapped"].argv == ("node", "srv.js")
    assert by_name["remote"].transport == "streamable-http" and by_name["remote"].probeable
    assert not by_name["legacy"].probeable


def test_a_bad_config_is_reported_not_raised(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{ nope")
    found = discover(("config",), config=bad)
    assert found.candidates == [] and found.reports[0].error is not None


def test_registry_entries_are_read_defensively() -> None:
    assert registry_candidate({"server": "nope"})[0] is None
    assert registry_candidate({"server": {"name": 7}})[0] is None
    cand, _, _ = registry_candidate(
        {"server": {"name": "a/b", "remotes": [{"type": "sse", "url": "https://x"}]}}
    )
    assert cand is not None and not cand.probeable


def test_merge_keeps_the_first_of_each_id() -> None:
    from toolpin.crawl.candidates import Candidate

    a = Candidate("1", "a", "registry", "unknown")
    b = Candidate("1", "b", "npm", "unknown")
    assert merge([[a], [b]]) == [a]
