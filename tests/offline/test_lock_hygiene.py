"""Lock hygiene: atomic pin, a failed pin leaves nothing, check never writes the lock,
every tampering is caught, a forged lock cannot hide a change, and the per-machine record
of verified results is only a shortcut to the same verdict."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from offline_support import MTPC, PIN_ARGS, run_inprocess

from toolpin.lockfile.native import render_lock
from toolpin.offline.check import check

EXAMPLE = MTPC / "examples" / "tools-list.json"
CHANGED = MTPC / "examples" / "tools-list.changed.json"
_HEX64 = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLPIN_HOME", str(tmp_path / "home"))
    shutil.copyfile(EXAMPLE, tmp_path / "listing.json")
    shutil.copyfile(CHANGED, tmp_path / "changed.json")
    return tmp_path


def pin(work: Path, *extra: str, listing: str = "listing.json", lock: str = "tp.lock") -> int:
    return run_inprocess(
        ["pin", "--listing", listing, "--lock", lock, *PIN_ARGS, *extra], work
    ).exit


def checked(work: Path, listing: str = "listing.json", lock: str = "tp.lock") -> int:
    return run_inprocess(["check", "--listing", listing, "--lock", lock], work).exit


def flip(digest: str) -> str:
    return "".join("0123456789abcdef"[15 - int(c, 16)] for c in digest)


def cache_files(work: Path) -> list[Path]:
    return sorted((work / "home" / "cache" / "check").glob("*.json"))


# ---------------------------------------------------------------------------------- pin


def test_failed_pin_leaves_no_lock_and_keeps_an_existing_one(work: Path) -> None:
    (work / "bad.json").write_text('{"tools": [{"name": "a"}, {"name": "a"}]}')
    run = run_inprocess(["pin", "--listing", "bad.json", "--lock", "new.lock"], work)
    run.assert_clean_failure()
    assert not (work / "new.lock").exists()
    assert pin(work) == 0
    before = (work / "tp.lock").read_bytes()
    run = run_inprocess(["pin", "--listing", "bad.json", "--lock", "tp.lock"], work)
    run.assert_clean_failure()
    assert (work / "tp.lock").read_bytes() == before
    assert sorted(p.name for p in work.iterdir() if p.name.startswith(".")) == []


def test_pin_into_a_missing_directory_fails_cleanly(work: Path) -> None:
    run = run_inprocess(["pin", "--listing", "listing.json", "--lock", "no/such/dir/x.lock"], work)
    assert "cannot write" in run.assert_clean_failure()


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a non-root POSIX user")
def test_pin_into_a_read_only_directory(work: Path) -> None:
    ro = work / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        run = run_inprocess(["pin", "--listing", "listing.json", "--lock", "ro/x.lock"], work)
        run.assert_clean_failure()
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o700)


def test_pin_refuses_to_overwrite_something_that_is_not_a_lock(work: Path) -> None:
    (work / "notes.txt").write_text("my notes\n")
    run = run_inprocess(["pin", "--listing", "listing.json", "--lock", "notes.txt"], work)
    assert "refusing to overwrite" in run.assert_clean_failure()
    assert (work / "notes.txt").read_text() == "my notes\n"
    (work / "other.json").write_text('{"a": 1}')
    run = run_inprocess(["pin", "--listing", "listing.json", "--lock", "other.json"], work)
    run.assert_clean_failure()


def test_pin_replaces_a_mcp_tool_pin_check_lock(work: Path) -> None:
    shutil.copyfile(MTPC / "legacy" / "v0.2.0.lock.json", work / "old.lock")
    assert pin(work, lock="old.lock") == 0
    assert json.loads((work / "old.lock").read_text())["toolpinLock"] == 1
    assert checked(work, lock="old.lock") == 0


def test_pin_keeps_other_entries_of_a_lock(work: Path) -> None:
    assert pin(work, "--server", "notes") == 0
    shutil.copyfile(MTPC / "examples" / "tools-list.output.json", work / "out.json")
    assert pin(work, "--server", "output", listing="out.json") == 0
    doc = json.loads((work / "tp.lock").read_text())
    assert sorted(doc["servers"]) == ["notes", "output"]
    assert checked(work) == 2, "two entries: which one?"
    run = run_inprocess(
        ["check", "--listing", "out.json", "--lock", "tp.lock", "--server", "output"], work
    )
    assert run.exit == 0
    run = run_inprocess(
        ["check", "--listing", "out.json", "--lock", "tp.lock", "--server", "x"], work
    )
    run.assert_clean_failure()


def test_pin_is_byte_deterministic_and_member_order_free(work: Path) -> None:
    assert pin(work, lock="a.lock") == 0
    doc = json.loads((work / "listing.json").read_text())
    doc["result"]["tools"].reverse()
    for tool in doc["result"]["tools"]:
        items = list(tool.items())
        tool.clear()
        tool.update(reversed(items))
    (work / "reordered.json").write_text(json.dumps(doc, indent=4))
    assert pin(work, listing="reordered.json", lock="b.lock") == 0
    a = json.loads((work / "a.lock").read_text())["servers"]["default"]
    b = json.loads((work / "b.lock").read_text())["servers"]["default"]
    a.pop("listingSha256"), b.pop("listingSha256")
    a.pop("source"), b.pop("source")
    assert a == b


# ------------------------------------------------------------------------------- check


def test_check_never_writes_the_lock(work: Path) -> None:
    assert pin(work) == 0
    lock = work / "tp.lock"
    stat = lock.stat()
    data = lock.read_bytes()
    for listing in ("listing.json", "changed.json", "listing.json"):
        for extra in ([], ["--json"], ["--sarif", "out.sarif"]):
            run_inprocess(["check", "--listing", listing, "--lock", "tp.lock", *extra], work)
    assert lock.read_bytes() == data
    assert lock.stat().st_mtime_ns == stat.st_mtime_ns


def _entry_hex_fields(doc: dict[str, Any]) -> list[str]:
    entry = doc["servers"]["default"]
    return [
        *(item["hash"] for item in entry["tools"]["items"]),
        entry["tools"]["setHash"],
        entry["surfaceHash"],
    ]


def test_every_verified_digest_is_checked(work: Path) -> None:
    assert pin(work) == 0
    text = (work / "tp.lock").read_text()
    digests = _entry_hex_fields(json.loads(text))
    assert len(digests) == 4
    for digest in digests:
        (work / "t.lock").write_text(text.replace(digest, flip(digest)))
        run = run_inprocess(["check", "--listing", "listing.json", "--lock", "t.lock"], work)
        assert "does not match" in run.assert_clean_failure(), digest


def test_every_hex_digest_flipped_at_once(work: Path) -> None:
    assert pin(work) == 0
    text = (work / "tp.lock").read_text()
    tampered, count = _HEX64.subn(lambda m: flip(m.group()), text)
    assert count == 6  # 2 definitions, setHash, surfaceHash, listingSha256, file digest
    (work / "t.lock").write_text(tampered)
    run = run_inprocess(["check", "--listing", "listing.json", "--lock", "t.lock"], work)
    run.assert_clean_failure()


def test_reformatted_lock_is_still_accepted(work: Path) -> None:
    """The file digest only says "exactly as toolpin wrote it"; a reformatted lock whose
    hashes agree is verified the long way and accepted (git may convert line endings)."""
    assert pin(work) == 0
    doc = json.loads((work / "tp.lock").read_text())
    (work / "crlf.lock").write_bytes(json.dumps(doc, indent=3).replace("\n", "\r\n").encode())
    assert checked(work, lock="crlf.lock") == 0
    assert checked(work, listing="changed.json", lock="crlf.lock") == 1


def _rewrite(doc: dict[str, Any]) -> bytes:
    """Bytes with a valid file digest for ``doc`` (what an attacker can always compute)."""
    from toolpin.lockfile.native import dumps_with_digest

    body = {k: v for k, v in doc.items() if k != "digest"}
    return dumps_with_digest(body)


def test_forged_listing_digest_cannot_hide_a_change(work: Path) -> None:
    """Pointing listingSha256 at another export and re-computing the file digest changes
    nothing: the definitions in the lock are what is enforced."""
    assert pin(work) == 0
    doc = json.loads((work / "tp.lock").read_text())
    changed_bytes = (work / "changed.json").read_bytes()
    outer = hashlib.sha256(hashlib.sha256(changed_bytes).digest()).hexdigest()
    doc["servers"]["default"]["listingSha256"] = outer
    (work / "forged.lock").write_bytes(_rewrite(doc))
    assert checked(work, listing="changed.json", lock="forged.lock") == 1


def test_forged_definition_text_is_caught(work: Path) -> None:
    """Benign-looking text beside the hash of another definition: exit 2, even with a
    freshly computed file digest."""
    assert pin(work) == 0
    doc = json.loads((work / "tp.lock").read_text())
    item = doc["servers"]["default"]["tools"]["items"][0]
    item["definition"]["description"] = "Harmless, honest."
    (work / "forged.lock").write_bytes(_rewrite(doc))
    run = run_inprocess(["check", "--listing", "listing.json", "--lock", "forged.lock"], work)
    assert "does not match its hash" in run.assert_clean_failure()


def test_a_consistent_hand_edit_is_drift_not_error(work: Path) -> None:
    from toolpin.lockfile.native import read_lock

    assert pin(work) == 0
    lock = read_lock(work / "tp.lock")
    assert lock.servers["default"].snapshot.tools is not None
    # re-render the same entries: a consistent lock that is not byte-identical to a pin
    (work / "again.lock").write_bytes(render_lock(lock.servers))
    assert checked(work, lock="again.lock") == 0


# ------------------------------------------------------------------ verified-result record


def test_unchanged_result_is_remembered_for_the_same_bytes_only(work: Path) -> None:
    assert pin(work) == 0
    first = check([work / "listing.json"], work / "tp.lock")
    assert first.ok and not first.fast_path
    assert len(cache_files(work)) == 1
    second = check([work / "listing.json"], work / "tp.lock")
    assert second.fast_path and second.ok
    assert second.drift.unchanged == first.drift.unchanged
    assert (second.source, second.pinned_at) == (first.source, first.pinned_at)
    # one byte of whitespace more: full path again (and a second record)
    (work / "listing.json").write_bytes((work / "listing.json").read_bytes() + b" ")
    third = check([work / "listing.json"], work / "tp.lock")
    assert third.ok and not third.fast_path
    assert len(cache_files(work)) == 2


def test_drift_and_errors_are_never_remembered(work: Path) -> None:
    assert pin(work) == 0
    assert checked(work, listing="changed.json") == 1
    assert checked(work, listing="changed.json") == 1
    assert cache_files(work) == []
    (work / "tp.lock").write_text((work / "tp.lock").read_text().replace('"hash": "', '"hash": "0'))
    assert checked(work) == 2
    assert cache_files(work) == []


def test_unreadable_record_is_ignored(work: Path) -> None:
    assert pin(work) == 0
    assert checked(work) == 0
    (record,) = cache_files(work)
    for junk in (b"not json", b"{}", b'{"format": 1}', b"[]"):
        record.write_bytes(junk)
        assert checked(work) == 0
    doc = json.loads(record.read_text())
    doc["unchanged"] = {"bogus": []}
    record.write_text(json.dumps(doc))
    assert checked(work) == 0


def test_unwritable_home_still_checks(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (work / "home-file").write_text("not a directory")
    monkeypatch.setenv("TOOLPIN_HOME", str(work / "home-file"))
    assert pin(work) == 0
    assert checked(work) == 0
    assert checked(work, listing="changed.json") == 1


def test_record_does_not_outlive_a_lock_change(work: Path) -> None:
    assert pin(work) == 0
    assert checked(work) == 0
    doc = json.loads((work / "tp.lock").read_text())
    item = doc["servers"]["default"]["tools"]["items"][0]
    item["definition"]["description"] = "Edited."
    (work / "tp.lock").write_bytes(_rewrite(doc))
    assert checked(work) == 2


def test_concurrent_pins_into_one_lock_keep_every_entry(work: Path) -> None:
    """Real processes pinning different entries of one lock at once: none is lost."""
    import subprocess
    import sys

    from offline_support import SRC

    env = {**os.environ, "PYTHONPATH": str(SRC), "TOOLPIN_HOME": str(work / "home")}
    procs = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "toolpin", "pin", "--listing", "listing.json"),
                *("--lock", "shared.lock", "--server", f"s{i}", *PIN_ARGS),
            ],
            cwd=work,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for i in range(3)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    doc = json.loads((work / "shared.lock").read_text())
    assert sorted(doc["servers"]) == ["s0", "s1", "s2"]
    assert checked(work, lock="shared.lock") == 2  # three entries: --server is needed
    assert list(work.glob("*.lock.lock")) == [], "nothing is left beside the lockfile"
