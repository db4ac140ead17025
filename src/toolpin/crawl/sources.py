"""Discovery: where the crawler finds servers. Each source is isolated: a failing source
is reported and the others go on.

* ``config``: a client-style MCP config (``mcpServers``, VS Code ``servers``, Codex TOML)
  of local servers (``--servers CONFIG.json``); ``${VAR}`` in commands and ``env`` is
  filled from the crawler's environment, as clients do; a remote ``url`` entry becomes an
  HTTP candidate. A ``toolpin run`` wrapper is looked through.
* ``registry``: the official MCP registry, ``GET /v0.1/servers?limit=100&version=latest``
  with ``cursor`` paging (a repeated cursor stops), ``updated_since`` for incremental
  runs, ``status: deleted`` entries skipped (and reported so crawl state forgets them).
  A ``streamable-http`` remote becomes an HTTP candidate (not when its URL has
  ``{variables}`` or it needs headers: recorded, not probed); else an npm or PyPI package
  with stdio transport becomes a package candidate; anything else is recorded only.
* ``npm``: ``GET /-/v1/search?text=keywords:mcp-server`` (and ``keywords:modelcontextprotocol``)
  with ``size``/``from`` paging; each package is a package candidate.
* ``github``: ``GET /search/repositories?q=topic:mcp-server`` with ``$GITHUB_TOKEN``
  (skipped without it), three pages of 100. How to install a repository is unknown, so
  these are recorded, never probed.

Base URLs: ``TOOLPIN_REGISTRY_URL`` (default ``https://registry.modelcontextprotocol.io``),
``TOOLPIN_NPM_REGISTRY`` (``https://registry.npmjs.org``), ``TOOLPIN_GITHUB_API``
(``https://api.github.com``). Answers are size-capped, time-limited and parsed strictly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Final

from toolpin.crawl.candidates import (
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    MAX_URL_CHARS,
    Candidate,
    PackageCoords,
    Source,
    clip,
    crawl_id,
)
from toolpin.errors import ConfigError, InputError, ToolpinError
from toolpin.packages.config import DEFAULT_NPM_REGISTRY, ENV_NPM_REGISTRY
from toolpin.probe.http import USER_AGENT
from toolpin.util.net import read_capped

ENV_REGISTRY: Final = "TOOLPIN_REGISTRY_URL"
ENV_GITHUB: Final = "TOOLPIN_GITHUB_API"
DEFAULT_REGISTRY: Final = "https://registry.modelcontextprotocol.io"
DEFAULT_GITHUB: Final = "https://api.github.com"
NPM_QUERIES: Final = ("keywords:mcp-server", "keywords:modelcontextprotocol")
NPM_PAGE: Final = 250
NPM_PER_QUERY: Final = 250
REGISTRY_PAGE: Final = 100
REGISTRY_MAX_PAGES: Final = 1000
GITHUB_PAGES: Final = 3
MAX_ANSWER_BYTES: Final = 8 << 20
OFFICIAL_META: Final = "io.modelcontextprotocol.registry/official"
RUNNABLE_PACKAGES: Final = frozenset({"npm", "pypi"})


class SourceError(InputError):
    """A discovery source could not be read (fixed text)."""


@dataclass(frozen=True)
class SourceReport:
    """How one source went."""

    source: Source
    candidates: int
    error: str | None = None


@dataclass
class Discovery:
    """Everything discovery found."""

    candidates: list[Candidate] = field(default_factory=list)
    reports: list[SourceReport] = field(default_factory=list)
    registry_high_water: str | None = None
    """The newest ``updatedAt`` the registry reported (next run's ``updated_since``)."""
    deleted: list[str] = field(default_factory=list)
    """Ids of registry servers now marked ``deleted``."""


def base_url(env_name: str, default: str, environ: Mapping[str, str]) -> str:
    return (environ.get(env_name) or default).rstrip("/")


# ------------------------------------------------------------------------------ HTTP


class _Fetcher:
    def __init__(self, timeout: float, user_agent: str) -> None:
        import httpx2

        self._client = httpx2.Client(
            timeout=timeout,
            follow_redirects=True,
            max_redirects=3,
            headers={"User-Agent": user_agent},
        )

    def close(self) -> None:
        self._client.close()

    def get(
        self,
        url: str,
        params: Mapping[str, str],
        what: str,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        import httpx2

        from toolpin.core.canonical import parse_json
        from toolpin.errors import JSONError

        try:
            with self._client.stream(
                "GET",
                url,
                params=dict(params),
                headers={"Accept": "application/json", **(headers or {})},
            ) as response:
                if response.status_code != 200:
                    raise SourceError(f"{what} answered HTTP {response.status_code}")
                body = read_capped(
                    response.iter_bytes(),
                    MAX_ANSWER_BYTES,
                    lambda: SourceError(f"{what} answered more than {MAX_ANSWER_BYTES >> 20} MiB"),
                )
        except httpx2.TimeoutException:
            raise SourceError(f"{what} did not answer in time") from None
        except httpx2.HTTPError as exc:
            raise SourceError(f"cannot reach {what} ({type(exc).__name__})") from None
        try:
            data = parse_json(body)
        except JSONError:
            raise SourceError(f"{what} answered something that is not strict JSON") from None
        if not isinstance(data, dict):
            raise SourceError(f"{what} answered something that is not a JSON object")
        return data


def _text(value: Any, limit: int = MAX_TEXT_CHARS) -> str | None:
    return clip(value, limit) if isinstance(value, str) and value else None


def _http_url(value: Any) -> str | None:
    if isinstance(value, str) and value.startswith(("https://", "http://")):
        return clip(value, MAX_URL_CHARS)
    return None


# ---------------------------------------------------------------------------- config


def config_candidates(path: Path, environ: Mapping[str, str]) -> list[Candidate]:
    """The servers of a client-style config file, read as ``toolpin lock`` reads them
    (wrapped entries unwrapped, ``${VAR}`` filled in, disabled entries left out)."""
    from toolpin.clients.config import expand, read_config

    config = read_config(path, environ=environ)
    out: list[Candidate] = []
    for remote in config.remotes:
        name = clip(remote.name, MAX_NAME_CHARS) or "(unnamed)"
        url = expand(remote.url, environ) if remote.url else None
        skip = None
        if url is None:
            skip = "the remote entry has no URL"
        elif remote.transport == "sse":
            skip = "legacy HTTP+SSE servers are not crawled"
        out.append(
            Candidate(
                id=crawl_id("config-url", remote.url or name),
                name=name,
                source="config",
                transport="streamable-http",
                url=url,
                skip_reason=skip,
            )
        )
    out.extend(
        Candidate(
            id=server.server_id,
            name=clip(server.name, MAX_NAME_CHARS) or "(unnamed)",
            source="config",
            transport="stdio",
            argv=server.argv,
            env=dict(server.env),
            cwd=server.cwd,
        )
        for server in config.servers
    )
    if not out:
        raise ConfigError(f"{path} lists no MCP servers (mcpServers or servers)")
    return out


# -------------------------------------------------------------------------- registry


@dataclass
class RegistryPage:
    candidates: list[Candidate] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    high_water: str | None = None


def _newer(a: str | None, b: str | None) -> str | None:
    def parse(value: str) -> datetime | None:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None

    if b is None or parse(b) is None:
        return a
    if a is None:
        return b
    pa, pb = parse(a), parse(b)
    assert pb is not None
    return b if pa is None or pb > pa else a


def registry_candidate(item: Mapping[str, Any]) -> tuple[Candidate | None, str | None, bool]:
    """``(candidate, updatedAt, deleted)`` of one ``ServerResponse``."""
    server = item.get("server")
    meta = item.get("_meta")
    official = meta.get(OFFICIAL_META) if isinstance(meta, dict) else None
    official = official if isinstance(official, dict) else {}
    updated = official.get("updatedAt")
    updated = updated if isinstance(updated, str) and len(updated) <= 64 else None
    if not isinstance(server, dict):
        return None, updated, False
    name = server.get("name")
    if not isinstance(name, str) or not name or len(name) > 200:
        return None, updated, False
    id_ = crawl_id("registry", name)
    if official.get("status") == "deleted":
        return Candidate(id_, name, "registry", "unknown"), updated, True
    repository = server.get("repository")
    homepage = _http_url(server.get("websiteUrl")) or (
        _http_url(repository.get("url")) if isinstance(repository, dict) else None
    )
    common: dict[str, Any] = {
        "id": id_,
        "name": name,
        "source": "registry",
        "description": _text(server.get("description")),
        "homepage": homepage,
    }
    remotes = server.get("remotes")
    remotes = [r for r in remotes if isinstance(r, dict)] if isinstance(remotes, list) else []
    for remote in remotes:
        if remote.get("type") != "streamable-http" or not isinstance(remote.get("url"), str):
            continue
        url = remote["url"]
        headers = remote.get("headers")
        skip = None
        if "{" in url:
            skip = "the remote URL has variables to fill"
        elif len(url) > MAX_URL_CHARS:
            skip = "the remote URL is too long"
        elif isinstance(headers, list) and any(
            isinstance(h, dict) and h.get("isRequired") for h in headers
        ):
            skip = "the remote needs request headers (authentication)"
        return (
            Candidate(
                **common,
                transport="streamable-http",
                url=clip(url, MAX_URL_CHARS),
                skip_reason=skip,
            ),
            updated,
            False,
        )
    packages = server.get("packages")
    packages = [p for p in packages if isinstance(p, dict)] if isinstance(packages, list) else []
    for package in packages:
        eco, ident = package.get("registryType"), package.get("identifier")
        transport = package.get("transport")
        stdio = not isinstance(transport, dict) or transport.get("type") in (None, "stdio")
        if eco in RUNNABLE_PACKAGES and isinstance(ident, str) and ident and stdio:
            version = package.get("version")
            digest = package.get("fileSha256")
            coords = PackageCoords(
                ecosystem=eco,
                name=clip(ident, MAX_NAME_CHARS) or ident,
                version=_text(version, 128),
                digest=f"sha256:{digest}"
                if isinstance(digest, str) and len(digest) == 64
                else None,
            )
            return Candidate(**common, transport="stdio", package=coords), updated, False
    if packages:
        eco = packages[0].get("registryType")
        label = eco if isinstance(eco, str) and eco.isalnum() and len(eco) <= 16 else "such"
        return (
            Candidate(
                **common, transport="stdio", skip_reason=f"no sandboxed runner for {label} packages"
            ),
            updated,
            False,
        )
    if remotes:
        return (
            Candidate(
                **common,
                transport="unknown",
                skip_reason="legacy HTTP+SSE servers are not crawled",
            ),
            updated,
            False,
        )
    return (
        Candidate(**common, transport="unknown", skip_reason="no package or remote"),
        updated,
        False,
    )


def registry_candidates(
    fetch: _Fetcher, base: str, *, since: str | None, limit: int | None
) -> RegistryPage:
    page = RegistryPage()
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(REGISTRY_MAX_PAGES):
        params = {"limit": str(REGISTRY_PAGE), "version": "latest"}
        if since:
            params["updated_since"] = since
        if cursor is not None:
            params["cursor"] = cursor
        data = fetch.get(f"{base}/v0.1/servers", params, "the MCP registry")
        servers = data.get("servers")
        if not isinstance(servers, list):
            raise SourceError("the MCP registry answered without a servers array")
        for item in servers:
            if not isinstance(item, dict):
                continue
            candidate, updated, deleted = registry_candidate(item)
            page.high_water = _newer(page.high_water, updated)
            if candidate is None:
                continue
            if deleted:
                page.deleted.append(candidate.id)
            else:
                page.candidates.append(candidate)
        if limit is not None and len(page.candidates) >= limit:
            break
        metadata = data.get("metadata")
        nxt = metadata.get("nextCursor") if isinstance(metadata, dict) else None
        if not isinstance(nxt, str) or not nxt or nxt in seen:
            break
        seen.add(nxt)
        cursor = nxt
    return page


# ------------------------------------------------------------------------------- npm


def npm_candidates(fetch: _Fetcher, base: str, *, limit: int | None) -> list[Candidate]:
    out: list[Candidate] = []
    names: set[str] = set()
    cap = min(limit, NPM_PER_QUERY) if limit is not None else NPM_PER_QUERY
    for query in NPM_QUERIES:
        start = 0
        taken = 0
        while taken < cap:
            size = min(NPM_PAGE, cap - taken)
            data = fetch.get(
                f"{base}/-/v1/search",
                {"text": query, "size": str(size), "from": str(start)},
                "the npm registry",
            )
            objects = data.get("objects")
            if not isinstance(objects, list) or not objects:
                break
            for obj in objects:
                package = obj.get("package") if isinstance(obj, dict) else None
                if not isinstance(package, dict):
                    continue
                name = package.get("name")
                if not isinstance(name, str) or not name or len(name) > 214 or name in names:
                    continue
                names.add(name)
                links = package.get("links")
                links = links if isinstance(links, dict) else {}
                out.append(
                    Candidate(
                        id=crawl_id("npm", name),
                        name=name,
                        source="npm",
                        transport="stdio",
                        package=PackageCoords("npm", name, _text(package.get("version"), 128)),
                        description=_text(package.get("description")),
                        homepage=_http_url(links.get("homepage")) or _http_url(links.get("npm")),
                    )
                )
            taken += len(objects)
            start += len(objects)
            total = data.get("total")
            if isinstance(total, int) and start >= total:
                break
        if limit is not None and len(out) >= limit:
            break
    return out


# ---------------------------------------------------------------------------- GitHub


def github_candidates(
    fetch: _Fetcher, base: str, token: str, *, limit: int | None
) -> list[Candidate]:
    out: list[Candidate] = []
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
    }
    for page in range(1, GITHUB_PAGES + 1):
        data = fetch.get(
            f"{base}/search/repositories",
            {"q": "topic:mcp-server", "per_page": "100", "page": str(page)},
            "the GitHub API",
            headers,
        )
        items = data.get("items")
        if not isinstance(items, list) or not items:
            break
        for item in items:
            full = item.get("full_name") if isinstance(item, dict) else None
            if not isinstance(full, str) or not full or len(full) > MAX_NAME_CHARS:
                continue
            assert isinstance(item, dict)
            out.append(
                Candidate(
                    id=crawl_id("github", full),
                    name=full,
                    source="github",
                    transport="unknown",
                    description=_text(item.get("description")),
                    homepage=_http_url(item.get("html_url")),
                    skip_reason="how to install a GitHub repository is not known",
                )
            )
        if limit is not None and len(out) >= limit:
            break
        if len(items) < 100:
            break
    return out


def _github(
    fetcher: Callable[[], _Fetcher], base: str, token: str, limit: int | None
) -> list[Candidate]:
    return github_candidates(fetcher(), base, token, limit=limit)


# ---------------------------------------------------------------------------- merge


def merge(groups: Iterable[Sequence[Candidate]]) -> list[Candidate]:
    """First candidate per id wins; an npm search hit for a package the registry already
    describes is dropped (the registry entry says more)."""
    out: list[Candidate] = []
    ids: set[str] = set()
    packages: set[tuple[str, str]] = set()
    for group in groups:
        for candidate in group:
            if candidate.id in ids:
                continue
            pkg = candidate.package
            key = (pkg.ecosystem, pkg.name) if pkg is not None else None
            if candidate.source == "npm" and key is not None and key in packages:
                continue
            ids.add(candidate.id)
            if key is not None:
                packages.add(key)
            out.append(candidate)
    return out


def discover(
    sources: Sequence[Source],
    *,
    config: Path | None = None,
    limit: int | None = None,
    registry_since: str | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    user_agent: str = USER_AGENT,
    on_source: Callable[[SourceReport], None] | None = None,
) -> Discovery:
    """Run every requested source (in the order config, registry, npm, github)."""
    env = os.environ if environ is None else environ
    result = Discovery()
    groups: list[list[Candidate]] = []
    fetch: _Fetcher | None = None

    def fetcher() -> _Fetcher:
        nonlocal fetch
        if fetch is None:
            fetch = _Fetcher(timeout, user_agent)
        return fetch

    def run(source: Source, body: Callable[[], list[Candidate]]) -> None:
        try:
            found = body()
        except ToolpinError as exc:
            report = SourceReport(source, 0, exc.message)
        except Exception as exc:  # a source never stops the others
            report = SourceReport(source, 0, f"failed ({type(exc).__name__})")
        else:
            groups.append(found)
            report = SourceReport(source, len(found))
        result.reports.append(report)
        if on_source is not None:
            on_source(report)

    try:
        for source in ("config", "registry", "npm", "github"):
            if source not in sources:
                continue
            if source == "config":
                if config is None:
                    raise InputError("the config source needs --servers CONFIG.json")
                run("config", partial(config_candidates, config, env))
            elif source == "registry":

                def registry() -> list[Candidate]:
                    page = registry_candidates(
                        fetcher(),
                        base_url(ENV_REGISTRY, DEFAULT_REGISTRY, env),
                        since=registry_since,
                        limit=limit,
                    )
                    result.registry_high_water = page.high_water
                    result.deleted = page.deleted
                    return page.candidates

                run("registry", registry)
            elif source == "npm":
                run(
                    "npm",
                    lambda: npm_candidates(
                        fetcher(),
                        base_url(ENV_NPM_REGISTRY, DEFAULT_NPM_REGISTRY, env),
                        limit=limit,
                    ),
                )
            else:
                token = env.get("GITHUB_TOKEN")
                if not token:
                    report = SourceReport("github", 0, "skipped: GITHUB_TOKEN is not set")
                    result.reports.append(report)
                    if on_source is not None:
                        on_source(report)
                    continue
                run(
                    "github",
                    partial(
                        _github, fetcher, base_url(ENV_GITHUB, DEFAULT_GITHUB, env), token, limit
                    ),
                )
    finally:
        if fetch is not None:
            fetch.close()
    result.candidates = merge(groups)
    return result
