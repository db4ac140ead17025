"""The append-only layout (issue 26): adding entries rewrites only what changed, an
entry's proof is issued once against the checkpoint first published with it, readers
prove the rest with a consistency proof, and a site of the layout before is upgraded by
``toolpin log site`` alone."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from site_helpers import NOW, LogWriter, sample_log, tool

import toolpin.cli
from toolpin.publog.note import Verifier
from toolpin.site.build import build_site, parse_now

toolpin.cli._register_commands()


def _tree(folder: Path) -> dict[str, tuple[str, int]]:
    return {
        p.relative_to(folder).as_posix(): (
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_mtime_ns,
        )
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _cli(*args: str) -> Result:
    return CliRunner().invoke(toolpin.cli.cli, list(args), standalone_mode=False)


def _grow(writer: LogWriter) -> None:
    writer.observe("later-server", [tool("a")], "2026-11-30T06:00:00Z")
    writer.observe(
        "files-plus",
        [tool("read_file", "Read a file, again.")],
        "2026-11-30T07:00:00Z",
        last_good_look="2026-11-30T03:30:00Z",
        package=("pypi", "files-plus", "0.3.2"),
    )
    writer.commit()


def test_adding_entries_rewrites_only_what_changed(tmp_path: Path) -> None:
    writer, ids = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    out, cache = tmp_path / "out", tmp_path / "cache"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    before = _tree(out)
    _grow(writer)
    result = build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    after = _tree(out)
    changed = sorted(rel for rel in after if before.get(rel) != after[rel])
    assert result.written == len(changed)
    stable, changed_id = ids["stable"], ids["changed"]
    # the servers without a new entry: not one of their files was rewritten
    for sid in (stable, ids["new"], ids["optout"]):
        assert not [rel for rel in changed if sid in rel], sid
    assert f"servers/{changed_id}.html" in changed
    # the old proofs are the ones first published, against checkpoint 5
    assert [rel for rel in changed if rel.startswith("proof/")] == [
        "proof/5.tlog-proof",
        "proof/6.tlog-proof",
    ]
    for n in range(5):
        text = (out / f"proof/{n}.tlog-proof").read_text(encoding="utf-8")
        assert "\n\nlog.example/toolpin-site-test\n5\n" in text
    assert "\n\nlog.example/toolpin-site-test\n7\n" in (out / "proof/6.tlog-proof").read_text()
    # what else changed: whole-log pages, feeds, the log, the history and a few buckets
    other = {
        re.sub(r"/[^/]*$", "/", rel)
        for rel in changed
        if changed_id not in rel and not rel.startswith("proof/")
    }
    allowed = {
        "./",
        "api/v1/",
        "api/v1/digests/",
        "api/v1/servers/",
        "badge/",
        "blob/sha256/",
        "checkpoints/",
        "feed/",
        "feed/label/",
        "install/",
        "reports/",
        "servers/",
        "tile/0/000.p/",
        "tile/entries/000.p/",
    }
    assert {o if "/" in o else "./" for o in other} <= allowed, other
    buckets = [rel for rel in changed if rel.startswith("api/v1/digests/")]
    assert 0 < len(buckets) <= 4  # two entries, two digests each
    history = json.loads((out / "api/v1/checkpoints.json").read_bytes())["checkpoints"]
    assert [c["size"] for c in history] == [5, 7]
    assert (out / "checkpoints/5").read_text() in (out / "proof/0.tlog-proof").read_text()
    api = json.loads((out / f"api/v1/servers/{stable}.json").read_bytes())
    assert api["checkpoint"]["size"] == 5 and api["versions"][0]["proofCheckpoint"] == 5
    # the whole published site verifies, and so does every bucket naming its own checkpoint
    verified = _cli("log", "verify", "--log", str(out), "--vkey", writer.vkey, "--json")
    assert verified.exit_code == 0, verified.output


def test_verify_proof_proves_an_old_proof_consistent_with_the_current_checkpoint(
    tmp_path: Path,
) -> None:
    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    out, cache = tmp_path / "out", tmp_path / "cache"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    _grow(writer)
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    proof = str(out / "proof/0.tlog-proof")
    for where in (out, tmp_path / "log"):  # the site's copy of the log, or the log
        done = _cli(
            "log", "verify-proof", "--vkey", writer.vkey, "--proof", proof, "--log", str(where)
        )
        assert done.exit_code == 0, done.output
        assert done.output == (
            "ok: entry 0 is in log.example/toolpin-site-test at tree size 5, "
            "consistent with the current checkpoint 7\n"
        )
    newest = str(out / "proof/6.tlog-proof")
    done = _cli("log", "verify-proof", "--vkey", writer.vkey, "--proof", newest, "--log", str(out))
    assert done.output == "ok: entry 6 is in log.example/toolpin-site-test at tree size 7\n"
    # a log whose tree at size 5 is another one: the old proof holds, the consistency fails
    fork = LogWriter(tmp_path / "fork")
    from toolpin.publog.tiles import TileLog

    fork.pending.append(TileLog.open(tmp_path / "log").read_entry(0))
    for n in range(6):
        fork.observe(f"fork-{n}", [tool("x")], "2026-11-30T06:00:00Z")
    shutil.copytree(tmp_path / "log" / "blob", tmp_path / "fork" / "blob", dirs_exist_ok=True)
    fork.commit()
    done = _cli(
        "log",
        "verify-proof",
        "--vkey",
        writer.vkey,
        "--proof",
        proof,
        "--log",
        str(tmp_path / "fork"),
    )
    assert done.return_value == 1
    assert done.output == (
        "FAILED: the log's checkpoint 7 is not consistent with the proof's checkpoint 5\n"
    )


OLD_FOOTER = (
    "<p>Built from checkpoint <strong>5</strong> of <code>log.example/toolpin-site-test</code>,\n"
    'root <code class="hash">ROOT</code>.\n<a href="/checkpoint">The signed checkpoint</a>.</p>\n'
)


def _as_old_layout(out: Path, home: Path) -> None:
    """What the layout before this one left: no ``checkpoints/`` nor its index, pages
    that name the checkpoint in their footer, and a build state without servers' keys."""
    shutil.rmtree(out / "checkpoints")
    (out / "api/v1/checkpoints.json").unlink()
    root = (out / "checkpoint").read_text().split("\n")[2]
    footer = re.compile(r"<p>The log <code>.*?</span>\.</p>\n", re.S)
    for page in out.rglob("*.html"):
        text = footer.sub(OLD_FOOTER.replace("ROOT", root), page.read_text(encoding="utf-8"))
        text = text.replace('<script src="/static/status.js" defer></script>\n', "")
        page.write_text(text, encoding="utf-8")
    (out / "static/status.js").unlink()
    states = list(home.glob("cache/site-*/outputs/*.manifest"))
    assert len(states) == 1
    lines = states[0].read_text(encoding="utf-8").split("\n")
    states[0].write_text("\n".join(x for x in lines if not x.startswith("@")), encoding="utf-8")


def test_a_site_of_the_old_layout_is_upgraded_by_log_site(
    tmp_path: Path, toolpin_home: Path
) -> None:
    writer, _ = sample_log(tmp_path / "log")
    out = tmp_path / "out"
    site = ("log", "site", "--log", str(tmp_path / "log"), "--vkey", writer.vkey)
    site += ("--out", str(out), "--now", NOW)
    assert _cli(*site).exit_code == 0
    _as_old_layout(out, toolpin_home)
    old_proofs = {n: (out / f"proof/{n}.tlog-proof").read_bytes() for n in range(5)}
    assert "Built from checkpoint" in (out / "index.html").read_text()
    _grow(writer)
    done = _cli(*site)
    assert done.exit_code == 0, done.output
    # the old site's checkpoint became the first of its history: its proofs stay as they are
    assert {n: (out / f"proof/{n}.tlog-proof").read_bytes() for n in range(5)} == old_proofs
    history = json.loads((out / "api/v1/checkpoints.json").read_bytes())["checkpoints"]
    assert [c["size"] for c in history] == [5, 7]
    pages = list(out.rglob("*.html"))
    assert pages and not [p for p in pages if "Built from checkpoint" in p.read_text()]
    assert (out / "static/status.js").is_file()
    verified = _cli("log", "verify", "--log", str(out), "--vkey", writer.vkey)
    assert verified.exit_code == 0, verified.output
    # and the next build of the upgraded site keeps everything
    again = _cli(*site, "--json")
    assert json.loads(again.output)["written"] == 0


def test_a_history_that_does_not_check_is_ignored(tmp_path: Path) -> None:
    """A published note that is not the log's (another key, a root this log never had,
    a file that is not a note) is not a checkpoint of the history: the entries it would
    cover are proven against the current checkpoint."""
    writer, _ = sample_log(tmp_path / "log")
    vkey = Verifier.from_text(writer.vkey)
    out = tmp_path / "out"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW))
    note = (out / "checkpoints/5").read_text()
    other = LogWriter(tmp_path / "other")  # the same key, another tree of 3
    for n in range(3):
        other.observe(f"other-{n}", [tool("x")], "2026-11-30T06:00:00Z")
    other.commit()
    shutil.copy(tmp_path / "other/checkpoint", out / "checkpoints/3")
    (out / "checkpoints/4").write_text(note.replace("\n5\n", "\n4\n"))  # a forged signature
    (out / "checkpoints/2").write_bytes(b"\xff\xfe not a note")
    _grow(writer)
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW))
    history: list[dict[str, Any]] = json.loads((out / "api/v1/checkpoints.json").read_bytes())[
        "checkpoints"
    ]
    assert [c["size"] for c in history] == [5, 7]
    assert "\n\nlog.example/toolpin-site-test\n5\n" in (out / "proof/0.tlog-proof").read_text()


def test_the_report_of_a_month_that_is_over_is_issued_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolpin.site.reports as reports

    writer = LogWriter(tmp_path / "log")
    writer.observe("one", [tool("a")], "2026-10-03T00:00:00Z")
    writer.observe("two", [tool("b")], "2026-10-04T00:00:00Z")
    writer.commit()
    writer.observe("one", [tool("a", "changed")], "2026-11-20T00:00:00Z")
    writer.commit()
    vkey = Verifier.from_text(writer.vkey)
    out, cache = tmp_path / "out", tmp_path / "cache"
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    october = json.loads((out / "reports/2026-10.json").read_bytes())
    assert october["generatedAt"] == "2026-11-01T00:00:00Z" and october["partial"] is False
    assert october["checkpoint"]["size"] == 3  # the site's first checkpoint
    before = _tree(out)
    # Entries observed after October: its report is kept as it was (not made again).
    writer.observe("two", [tool("b", "new")], "2026-11-30T00:00:00Z")
    writer.commit()
    shutil.copytree(out, tmp_path / "cold")
    made: list[str] = []
    monthly = reports.monthly_report

    def counted(view: Any, month: str, **kwargs: Any) -> Any:
        made.append(month)
        return monthly(view, month, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(reports, "monthly_report", counted)
        build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    assert made == ["2026-11", "2026-12"]  # October's report was not made again
    after = _tree(out)
    for rel in ("reports/2026-10.json", "reports/2026-10.html"):
        assert after[rel] == before[rel]
    november = json.loads((out / "reports/2026-11.json").read_bytes())
    assert november["checkpoint"]["size"] == 4 and november["partial"] is False
    # the same bytes as a build over a copy of the published site (the same history)
    build_site(tmp_path / "log", vkey, tmp_path / "cold", now=parse_now(NOW))
    assert {k: v[0] for k, v in _tree(tmp_path / "cold").items()} == {
        k: v[0] for k, v in after.items()
    }
    for month in ("2026-10", "2026-11"):
        done = _cli(
            "log", "report", "--log", str(tmp_path / "log"), "--vkey", writer.vkey,
            "--verify", str(out / f"reports/{month}.json"),
        )  # fmt: skip
        assert done.exit_code == 0, done.output
    # A file not as the build state records it is made again (the same bytes).
    (out / "reports/2026-10.html").write_text("tampered", encoding="utf-8")
    writer.observe("two", [tool("b", "newer")], "2026-11-30T01:00:00Z")
    writer.commit()
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    assert (out / "reports/2026-10.html").read_bytes() == (
        tmp_path / "cold/reports/2026-10.html"
    ).read_bytes()
    # A late entry observed in October: its report is made again, at the checkpoint that
    # holds it.
    writer.observe("three", [tool("c")], "2026-10-30T00:00:00Z")
    writer.commit()
    build_site(tmp_path / "log", vkey, out, now=parse_now(NOW), cache=cache)
    october = json.loads((out / "reports/2026-10.json").read_bytes())
    assert october["checkpoint"]["size"] == 6 and october["servers"]["recordedNew"] == 3
    shutil.rmtree(tmp_path / "cold")
    shutil.copytree(out, tmp_path / "cold")
    build_site(tmp_path / "log", vkey, tmp_path / "cold", now=parse_now(NOW))
    assert {k: v[0] for k, v in _tree(tmp_path / "cold").items()} == {
        k: v[0] for k, v in _tree(out).items()
    }
