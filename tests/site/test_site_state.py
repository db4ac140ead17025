"""The published folder is a pure function of the log and ``--now`` (issue 23): the
build's own state lives in the work cache, never in the folder, so two builds give
``diff -r``-identical folders, after an incremental rebuild too; a manifest older builds
wrote into the folder is read for its file list once and removed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from site_helpers import NOW, LogWriter, sample_log, tool

from toolpin.site.output import MANIFEST


def _site(log: Path, vkey: str, out: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "toolpin", "log", "site", "--log", str(log)),
            *("--vkey", vkey, "--out", str(out), "--now", NOW, "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done


def _diff(a: Path, b: Path) -> str:
    done = subprocess.run(["diff", "-r", str(a), str(b)], capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def _states(home: Path) -> list[Path]:
    return sorted(home.glob("cache/site-*/outputs/*.manifest"))


def test_two_builds_and_an_incremental_one_are_identical(
    tmp_path: Path, toolpin_home: Path
) -> None:
    writer = LogWriter(tmp_path / "log")
    writer.observe("one", [tool("a")], "2026-11-01T00:00:00Z")
    writer.observe("two", [tool("b")], "2026-11-02T00:00:00Z")
    writer.commit()
    log = tmp_path / "log"
    _site(log, writer.vkey, tmp_path / "a")
    _site(log, writer.vkey, tmp_path / "b")
    assert _diff(tmp_path / "a", tmp_path / "b") == ""
    for folder in ("a", "b"):
        assert not [p for p in (tmp_path / folder).rglob("*") if "manifest" in p.name.lower()]
        assert not list((tmp_path / folder).rglob(MANIFEST))
    assert len(_states(toolpin_home)) == 2  # one per output folder, in the cache

    unchanged = json.loads(_site(log, writer.vkey, tmp_path / "a").stdout)
    assert unchanged["written"] == 0 and unchanged["removed"] == 0

    writer.observe(
        "one", [tool("a", "changed")], "2026-11-30T00:00:00Z", last_good_look="2026-11-29T00:00:00Z"
    )
    writer.commit()
    assert _diff(tmp_path / "a", tmp_path / "b") == ""
    grown = json.loads(_site(log, writer.vkey, tmp_path / "a").stdout)  # incremental
    assert grown["written"] > 0 and grown["unchanged"] > 0
    assert _diff(tmp_path / "a", tmp_path / "b") != ""  # the comparison can fail
    _site(log, writer.vkey, tmp_path / "b")  # the same published site, grown the same way
    assert _diff(tmp_path / "a", tmp_path / "b") == ""
    # From scratch, the same log: the same pages, but every proof names the one checkpoint
    # this new site published (the grown one kept its first proofs against checkpoint 2).
    _site(log, writer.vkey, tmp_path / "c")
    listed = json.loads((tmp_path / "c/api/v1/checkpoints.json").read_bytes())["checkpoints"]
    assert [c["size"] for c in listed] == [3]
    kept = json.loads((tmp_path / "a/api/v1/checkpoints.json").read_bytes())["checkpoints"]
    assert [c["size"] for c in kept] == [2, 3]
    differ = _diff(tmp_path / "a", tmp_path / "c")
    only = [line for line in differ.splitlines() if line.startswith("Only in")]
    kept = [  # checkpoint 2's note and its partial tiles, which the grown site keeps
        f"Only in {tmp_path / 'a' / rel}: 2"
        for rel in ("checkpoints", "tile/0/000.p", "tile/entries/000.p")
    ]
    assert only == kept, only
    changed = sorted(
        line.split()[-1].removeprefix(str(tmp_path / "c") + "/")
        for line in differ.splitlines()
        if line.startswith("diff -r")
    )
    assert all(
        rel.startswith(("proof/", "api/v1/digests/", "api/v1/servers/"))
        or rel in ("api/v1/checkpoints.json")
        for rel in changed
    ), changed
    assert not list(tmp_path.rglob(MANIFEST))


def test_an_old_manifest_in_the_folder_is_used_once_and_removed(
    tmp_path: Path, toolpin_home: Path
) -> None:
    writer, _ = sample_log(tmp_path / "log")
    out = tmp_path / "out"
    _site(tmp_path / "log", writer.vkey, out)
    _site(tmp_path / "log", writer.vkey, tmp_path / "fresh")
    for state in _states(toolpin_home):
        state.unlink()  # as left by a build before the state moved
    (out / "stale.html").write_text("left by an older build")
    listed = sorted(
        str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != MANIFEST
    )
    (out / MANIFEST).write_text(
        "toolpin-site 1 old-inputs\n" + "".join(f"{rel}\t1\t1\n" for rel in listed)
    )
    done = json.loads(_site(tmp_path / "log", writer.vkey, out).stdout)
    assert done["removed"] == 1
    assert not (out / MANIFEST).exists() and not (out / "stale.html").exists()
    assert _diff(out, tmp_path / "fresh") == ""
    assert len(_states(toolpin_home)) == 1  # out's state, in the cache again


def test_a_file_of_that_name_that_is_not_a_manifest_stays(
    tmp_path: Path, toolpin_home: Path
) -> None:
    writer, _ = sample_log(tmp_path / "log")
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text("the user's own file\n")
    _site(tmp_path / "log", writer.vkey, out)
    assert (out / MANIFEST).read_text() == "the user's own file\n"
