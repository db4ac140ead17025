"""A change record carries the last good look before it (``previousLookAt``), so reports
date a change first seen after a crawl gap by its window."""

from __future__ import annotations

from pathlib import Path

from crawl_helpers import LogKey, independent_check, stub_argv, tool, write_config, write_spec

from toolpin.crawl.report import load_view
from toolpin.crawl.runner import CrawlOptions, crawl
from toolpin.publog.note import Verifier


def test_a_change_record_names_the_last_good_look_before_it(
    tmp_path: Path, log_key: LogKey
) -> None:
    spec = write_spec(tmp_path / "alpha.json", name="alpha", tools=[tool("a1")])
    config = write_config(tmp_path / "servers.json", {"alpha": stub_argv(spec)})
    opts = CrawlOptions(
        log_dir=tmp_path / "log",
        signer=log_key.signer,
        sources=("config",),
        servers_config=config,
        timeout=20.0,
        concurrency=1,
        optout_dirs=(tmp_path / "log",),
    )
    crawl(opts)
    crawl(opts)  # a look that finds nothing new: no entry, but it moves the window
    write_spec(spec, name="alpha", tools=[tool("a1", "now different")])
    crawl(opts)
    first, second = independent_check(tmp_path / "log", log_key.vkey)
    assert "previousLookAt" not in first
    assert first["observedAt"] <= second["previousLookAt"] <= second["observedAt"]
    view = load_view(tmp_path / "log", Verifier.from_text(log_key.vkey))
    change = view.changes[1]
    assert change.window_source == "look" and change.window_from == second["previousLookAt"]
    assert change.tools_changed == ("a1",) and not change.gap
