"""The public log's crawler: find MCP servers, look at them safely, log what changed.

Modules (each small, each importable on its own; nothing heavy at import time here)::

    candidates   Candidate, PackageCoords: what discovery hands to the prober
    sources      discovery: client config, official MCP registry, npm search, GitHub topic
    optout       OPTOUT.txt (names, case-insensitive, # comments)
    sandbox      minimal environment, the placeholder-credential rule
    hostconfig   the user's package set-up (npmrc, pip/uv config, CA and proxy variables)
    caches       package caches shared across probes and crawls
    identity     a config entry's package: resolved, pinned, installed before the probe
    hint         a short, sanitised tail of a failing tool's stderr
    stdio        sandboxed stdio probe (toolpin.probe.probe_stdio + a bounded stderr tail)
    install      npm / PyPI package install into a scratch prefix (--allow-exec only)
    ssrf         the SSRF guard: URL checks, connect-time address checks, redirects
    streamable   the Streamable HTTP probe (both protocol eras) through the guard
    limits       validation caps (rejected, never truncated)
    record       the observation record (one log entry per change) and its blob
    state        SQLite crawl state (liveness, change windows, continuity links)
    runner       crawl(): the whole run, one signed checkpoint per run

Typical use (what ``toolpin log crawl`` does)::

    from toolpin.crawl.runner import CrawlOptions, crawl
    from toolpin.publog import load_signer

    summary = crawl(CrawlOptions(log_dir=Path("public-log"), signer=load_signer("log.key"),
                                 sources=("config",), servers_config=Path("servers.json")))
    print(summary.summary_line())
"""
