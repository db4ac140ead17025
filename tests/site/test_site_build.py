"""`toolpin log site`: determinism, refusal, proofs, the served log, opt-out, headers."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import escape
from site_helpers import NOW, LogWriter, sample_log, tool

from toolpin.publog.note import Verifier
from toolpin.publog.verify import verify_log
from toolpin.site.build import build_site, parse_now
from toolpin.site.model import UnverifiedLogError
from toolpin.site.render import CSP, META_CSP


def _tree(folder: Path) -> dict[str, str]:
    """Every file of the site (the build keeps its own state outside it)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _toolpin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolpin", *args], capture_output=True, text=True, timeout=120
    )


def test_same_log_and_now_give_the_same_bytes(tmp_path: Path) -> None:
    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    build_site(tmp_path / "log", vkey, tmp_path / "a", now=parse_now(NOW))
    build_site(tmp_path / "log", vkey, tmp_path / "b", now=parse_now(NOW))
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    again = build_site(tmp_path / "log", vkey, tmp_path / "a", now=parse_now(NOW))
    assert again.written == 0 and again.removed == 0 and again.unchanged == again.files


def test_an_unchanged_rebuild_touches_no_file(tmp_path: Path) -> None:
    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    out = tmp_path / "out"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW))
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW))
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before


def test_a_log_that_does_not_verify_is_refused(tmp_path: Path, toolpin_home: Path) -> None:
    writer, _ = sample_log(tmp_path / "log")
    tile = tmp_path / "log" / "tile" / "0" / "000.p" / "5"
    data = bytearray(tile.read_bytes())
    data[0] ^= 1
    tile.write_bytes(bytes(data))
    with pytest.raises(UnverifiedLogError):
        build_site(
            tmp_path / "log", Verifier.from_text(writer.vkey), tmp_path / "out", now=parse_now(NOW)
        )
    done = _toolpin(
        "log",
        "site",
        "--log",
        str(tmp_path / "log"),
        "--vkey",
        writer.vkey,
        "--out",
        str(tmp_path / "out2"),
        "--now",
        NOW,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("toolpin: the log does not verify: ")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out2").exists()


def test_the_cli_builds_and_reports(tmp_path: Path, toolpin_home: Path) -> None:
    writer, _ = sample_log(tmp_path / "log")
    done = _toolpin(
        "log",
        "site",
        "--log",
        str(tmp_path / "log"),
        "--vkey",
        writer.vkey,
        "--out",
        str(tmp_path / "out"),
        "--now",
        NOW,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["checkpoint"] == 5 and summary["servers"] == 3 and summary["optedOut"] == 1
    bad = _toolpin(
        "log",
        "site",
        "--log",
        str(tmp_path / "log"),
        "--vkey",
        writer.vkey,
        "--out",
        str(tmp_path / "log" / "site"),
        "--now",
        NOW,
    )
    assert bad.returncode == 2 and "outside the log directory" in bad.stderr
    bad_now = _toolpin(
        "log",
        "site",
        "--log",
        str(tmp_path / "log"),
        "--vkey",
        writer.vkey,
        "--out",
        str(tmp_path / "o3"),
        "--now",
        "yesterday",
    )
    assert bad_now.returncode == 2 and "ISO 8601" in bad_now.stderr


def test_no_page_names_the_moving_checkpoint(sample_site: dict[str, Any]) -> None:
    """Issue 26: a page's bytes never carry the current checkpoint (it would rewrite every
    page on every append); each links the signed checkpoint and loads the script that
    shows it from api/v1/log.json."""
    out = sample_site["out"]
    note = (out / "checkpoint").read_text(encoding="utf-8")
    root = note.split("\n")[2]
    pages = [p for p in out.rglob("*.html") if p.parent.name != "reports"]
    assert len(pages) >= 7
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert root not in text, page
        assert 'href="/checkpoint">its signed checkpoint</a>' in text, page
        assert '<script src="/static/status.js" defer></script>' in text, page
        assert f'content="{escape(META_CSP)}"' in text, page
    log = json.loads((out / "api/v1/log.json").read_bytes())
    assert log["checkpoint"]["root"] == root and log["checkpoint"]["size"] == 5


def test_the_served_log_verifies_and_every_change_proof_is_accepted(
    sample_site: dict[str, Any],
) -> None:
    out = sample_site["out"]
    result = verify_log(out, sample_site["vkey"])
    assert result.ok, result.reason
    for index in range(5):
        done = _toolpin(
            "log",
            "verify-proof",
            "--vkey",
            sample_site["vkey"],
            "--proof",
            str(out / "proof" / f"{index}.tlog-proof"),
            "--log",
            str(out),
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith(f"ok: entry {index} is in ")


def test_each_change_links_its_proof_and_its_window(sample_site: dict[str, Any]) -> None:
    page = (sample_site["out"] / "servers" / f"{sample_site['ids']['changed']}.html").read_text()
    assert 'href="/proof/2.tlog-proof"' in page and 'href="/proof/1.tlog-proof"' in page
    assert (
        'Changed between <time datetime="2026-11-20T03:00:00Z">20 Nov 2026, 03:00 UTC</time> '
        'and <time datetime="2026-11-30T03:00:00Z">30 Nov 2026, 03:00 UTC</time>'
    ) in page
    assert "The crawl had a gap" in page
    assert '<li class="label high" data-key="secrets">' in page  # the labels of review
    assert "<ins>" in page and "<del>" in page  # the description word by word
    assert "<code>/properties/mode</code>" in page  # the schema by JSON path
    assert "toolpin run --name " in page and "uvx files-plus==0.3.1" in page


def test_an_opted_out_server_gets_a_stub_and_the_log_still_verifies(
    sample_site: dict[str, Any],
) -> None:
    out = sample_site["out"]
    sid = sample_site["ids"]["optout"]
    stub = (out / "servers" / f"{sid}.html").read_text()
    assert "Removed at the maintainer" in stub
    for rel in ("servers", "api", "feed.atom", "feed", "badge", "index.html"):
        for path in [out / rel] if (out / rel).is_file() else (out / rel).rglob("*"):
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                assert "secret_tool" not in text and "private-thing" not in text, path
    assert not (out / "badge" / f"{sid}.svg").exists()
    assert verify_log(out, sample_site["vkey"]).ok


def test_headers_manifest(sample_site: dict[str, Any]) -> None:
    text = (sample_site["out"] / "_headers").read_text()
    blocks = {b.split("\n", 1)[0]: b for b in text.split("\n\n")}
    assert "Cache-Control: no-cache" in blocks["/checkpoint"]
    assert "immutable" in blocks["/tile/*"] and "immutable" in blocks["/blob/*"]
    for path in ("/checkpoint", "/tile/*", "/blob/*", "/api/*"):
        assert "Access-Control-Allow-Origin: *" in blocks[path]
    assert f"Content-Security-Policy: {CSP}" in text


def test_no_free_text_from_crawl_state(tmp_path: Path) -> None:
    import sqlite3

    writer, ids = sample_log(tmp_path / "log")
    state = tmp_path / "crawl-state.sqlite"
    from toolpin.crawl.state import CrawlState

    with CrawlState.open(state):
        pass
    db = sqlite3.connect(state)
    db.execute(
        "INSERT INTO servers(id, name, source, transport, descriptor, first_seen, last_ok, "
        "last_error) VALUES(?, 'x', 'registry', 'stdio', ?, ?, ?, ?)",
        (
            ids["stable"],
            json.dumps({"homepage": "https://HOMEPAGE.example"}),
            "2026-09-01T03:00:00Z",
            "2026-12-01T03:00:00Z",
            "CRAWL-ERROR-TEXT",
        ),
    )
    db.commit()
    db.close()
    out = tmp_path / "out"
    build_site(
        tmp_path / "log", Verifier.from_text(writer.vkey), out, now=parse_now(NOW), state=state
    )
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".html", ".atom", ".svg"):
            text = path.read_text(encoding="utf-8")
            assert "CRAWL-ERROR-TEXT" not in text and "HOMEPAGE" not in text
    server = json.loads((out / "api/v1/servers.json").read_text())["servers"]
    stable = next(s for s in server if s["id"] == ids["stable"])
    assert stable["lastGoodLook"] == "2026-12-01T03:00:00Z"
    assert stable["badge"]["message"] == "unchanged 91d · 1 Dec"


def test_a_growing_log_keeps_entry_ids_and_removes_nothing_it_should_keep(tmp_path: Path) -> None:
    writer = LogWriter(tmp_path / "log")
    writer.observe("one", [tool("a")], "2026-11-01T00:00:00Z")
    writer.commit()
    vkey = Verifier.from_text(writer.vkey)
    out = tmp_path / "out"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW))
    first = json.loads((out / "feed.json").read_text())["items"]
    writer.observe(
        "one", [tool("a", "changed")], "2026-11-30T00:00:00Z", last_good_look="2026-11-29T00:00:00Z"
    )
    writer.commit()
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW))
    second = json.loads((out / "feed.json").read_text())["items"]
    assert second[-1]["id"] == first[0]["id"]
    assert (out / "proof" / "1.tlog-proof").exists()


def test_server_ids_that_are_not_hex_never_name_a_file(tmp_path: Path) -> None:
    from toolpin.publog.entries import encode_entry

    writer, _ = sample_log(tmp_path / "log")
    writer.pending.append(
        encode_entry(
            {
                "type": "toolpin/observation",
                "v": 1,
                "observedAt": NOW,
                "server": {"id": "../../../escape", "name": "x"},
                "digests": {"surface": "0" * 64},
            }
        )
    )
    writer.commit()
    out = tmp_path / "out"
    build_site(tmp_path / "log", Verifier.from_text(writer.vkey), out, now=parse_now(NOW))
    assert not list(tmp_path.rglob("escape*"))
    assert len(list((out / "servers").glob("*.html"))) == 4 + 3


def test_install_and_report_pages_are_built_when_their_modules_exist(
    sample_site: dict[str, Any],
) -> None:
    import importlib.util

    out = sample_site["out"]
    if importlib.util.find_spec("toolpin.site.install") is None:
        pytest.skip("toolpin.site.install is not in this tree")
    assert (out / "install" / "index.html").is_file()
    if importlib.util.find_spec("toolpin.site.reports") is not None:
        assert (out / "reports" / "index.html").is_file()


def test_worker_processes_build_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolpin.site.build as build

    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    build_site(tmp_path / "log", vkey, tmp_path / "one", now=parse_now(NOW))
    monkeypatch.setattr(build, "PARALLEL_FROM", 1)
    monkeypatch.setattr(build, "_workers", lambda: 2)
    result = build_site(tmp_path / "log", vkey, tmp_path / "two", now=parse_now(NOW))
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two")
    assert result.files == len(_tree(tmp_path / "two"))


def test_the_collector_is_paused_for_the_build_workers_included_and_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import os

    import toolpin.site.build as build

    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    seen = tmp_path / "seen"
    seen.mkdir()
    main, task, whole = os.getpid(), build._run, build._build

    def recording_task(job: Any, *args: Any) -> Any:  # a forked worker says so in a file
        where = "main" if os.getpid() == main else "worker"
        (seen / f"{where}-{job[0]}-{gc.isenabled()}").touch()
        return task(job, *args)

    def recording_build(*args: Any, **kwargs: Any) -> Any:
        (seen / f"main-build-{gc.isenabled()}").touch()
        return whole(*args, **kwargs)

    monkeypatch.setattr(build, "PARALLEL_FROM", 1)
    monkeypatch.setattr(build, "_workers", lambda: 2)
    monkeypatch.setattr(build, "_run", recording_task)
    monkeypatch.setattr(build, "_build", recording_build)
    assert gc.isenabled()
    build_site(tmp_path / "log", vkey, tmp_path / "out", now=parse_now(NOW))
    assert gc.isenabled()
    names = sorted(path.name for path in seen.iterdir())
    assert "main-build-False" in names and "worker-servers-False" in names
    assert not [name for name in names if name.endswith("-True")]
    (tmp_path / "log" / "checkpoint").write_text("not a checkpoint\n")
    with pytest.raises(UnverifiedLogError):
        build_site(tmp_path / "log", vkey, tmp_path / "out2", now=parse_now(NOW))
    assert gc.isenabled()  # resumed when the build fails too


def test_the_reports_take_the_entries_the_site_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolpin.crawl.report import load_view
    from toolpin.publog.tiles import TileLog
    from toolpin.site.model import read_log

    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    view = read_log(tmp_path / "log", vkey)
    assert view.audited is not None and view.observations is not None
    assert len(view.observations) == view.audited.size
    read = load_view(tmp_path / "log", vkey)
    with monkeypatch.context() as patch:  # the entries are not read again
        patch.setattr(TileLog, "iter_entries", None)
        given = load_view(
            tmp_path / "log", vkey, audited=view.audited, observations=view.observations
        )
    assert given.changes == read.changes and given.other_entries == read.other_entries
    assert [c.index for c in given.changes if c.previous is not None]
    # observations of another size (another checkpoint) are not taken
    short = load_view(
        tmp_path / "log", vkey, audited=view.audited, observations=view.observations[:-1]
    )
    assert short.changes == read.changes


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["sha256:" + c * 64 for c in "abc"] + [None]), max_size=5),
        max_size=6,
    ),
    st.randoms(use_true_random=False),
)
def test_each_blob_is_owned_by_the_server_of_its_first_version(
    servers: list[list[str | None]], random: Any
) -> None:
    from toolpin.site.build import _blob_owners
    from toolpin.site.model import LogView, ServerHistory, SiteCheckpoint, Version

    indices = list(range(sum(map(len, servers))))
    random.shuffle(indices)
    order = iter(indices)
    histories: dict[str, ServerHistory] = {}
    for n, blobs in enumerate(servers):
        sid = f"s{n}"
        histories[sid] = ServerHistory(sid)
        for blob in blobs:
            histories[sid].versions.append(
                Version(
                    index=next(order),
                    leaf_hash="",
                    observed_at="",
                    last_good_look=None,
                    surface="",
                    counts={},
                    digests={},
                    blob=blob,
                    previous=None,
                    name="",
                    source="",
                    transport="",
                    url=None,
                    package=None,
                    server_info=None,
                    era=None,
                    protocol_version=None,
                )
            )
    checkpoint = SiteCheckpoint("o", 0, "", "", "", "")
    view = LogView(checkpoint, histories, Path("."))
    expected: dict[str, str] = {}
    every = sorted((v.index, h.id, v.blob) for h in histories.values() for v in h.versions)
    for _, sid, blob in every:
        if blob is not None:
            expected.setdefault(blob, sid)
    assert list(_blob_owners(view).items()) == sorted(expected.items())
