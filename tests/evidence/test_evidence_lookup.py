"""Verified digest lookups against real sites served over loopback."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from evidence_helpers import Served, entries, replace_file, site_of, versions_log
from site_helpers import ORIGIN, LogWriter, legacy_digests, tool

from toolpin.core import digestindex
from toolpin.errors import StoreError
from toolpin.evidence import (
    LogProblem,
    LogRef,
    NeverRecorded,
    Recorded,
    describe,
    look_up,
    to_json,
)
from toolpin.evidence.lookup import bundle_cache
from toolpin.evidence.state import load, state_path
from toolpin.publog.note import Signer


def _look(served: Served, writer: LogWriter, digest: str, home: Path, **kw: Any) -> Any:
    return look_up(LogRef(served.url, writer.vkey), digest, home=home, allow_private=True, **kw)


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> tuple[LogWriter, Path, list[dict[str, Any]]]:
    root = tmp_path_factory.mktemp("three")
    writer = versions_log(root / "log")
    return writer, site_of(writer, root / "site"), entries(root / "log")


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> tuple[LogWriter, Path, Path]:
    return _grown_pair(tmp_path_factory.mktemp("grown"))


@pytest.fixture(scope="module")
def forked(tmp_path_factory: pytest.TempPathFactory) -> tuple[LogWriter, Path, Path]:
    return _forked_pair(tmp_path_factory.mktemp("forked"))


def test_recorded_surface_names_entry_time_and_earlier_versions(
    three: Any, served: Served, tmp_path: Path
) -> None:
    writer, site, logged = three
    served.show(site)
    found = _look(served, writer, logged[3]["digests"]["surface"], tmp_path / "home")
    assert found == Recorded(
        origin=ORIGIN,
        checkpoint_size=4,
        entry_index=3,
        recorded_at="2026-11-20T03:00:00Z",
        versions=(("1.0.0", "2026-09-01T03:00:00Z"), ("1.1.0", "2026-10-01T03:00:00Z")),
    )
    assert describe(found) == (
        f"publicly recorded since 2026-11-20 (entry 3, verified against checkpoint 4 of "
        f"{ORIGIN}); earlier versions recorded: 1.0.0 on 2026-09-01, 1.1.0 on 2026-10-01"
    )
    assert to_json(found)["versions"][0] == {
        "version": "1.0.0",
        "first_recorded": "2026-09-01T03:00:00Z",
    }
    # The verified checkpoint is kept for the next lookup.
    assert load(tmp_path / "home", ORIGIN).checkpoint == (site / "checkpoint").read_text()


def test_recorded_tools_digest_and_sha256_prefix(
    three: Any, served: Served, tmp_path: Path
) -> None:
    writer, site, logged = three
    served.show(site)
    tools = logged[0]["digests"]["tools"]
    found = _look(served, writer, "sha256:" + tools.upper(), tmp_path / "home", kind="tools")
    assert isinstance(found, Recorded) and found.entry_index == 0 and found.versions == ()
    # The same digest as a surface digest is not recorded.
    assert isinstance(_look(served, writer, tools, tmp_path / "home"), NeverRecorded)


def test_never_recorded(three: Any, served: Served, tmp_path: Path) -> None:
    writer, site, _ = three
    served.show(site)
    found = _look(served, writer, "ab" * 32, tmp_path / "home")
    assert found == NeverRecorded(origin=ORIGIN, checkpoint_size=4)
    assert describe(found) == f"never recorded in {ORIGIN} (checked against checkpoint 4)"
    assert to_json(found) == {"recorded": False, "origin": ORIGIN, "checkpoint_size": 4}


def _grown_pair(tmp_path: Path) -> tuple[LogWriter, Path, Path]:
    """One log's site at size 2 and the same log's site at size 4."""
    writer = LogWriter(tmp_path / "grow")
    writer.observe("a", [tool("one")], "2026-09-01T03:00:00Z")
    writer.observe("b", [tool("two")], "2026-09-01T04:00:00Z")
    writer.commit()
    small = site_of(writer, tmp_path / "small")
    writer.observe("c", [tool("three")], "2026-10-01T03:00:00Z")
    writer.observe("a", [tool("one"), tool("four")], "2026-10-02T03:00:00Z")
    writer.commit()
    return writer, small, site_of(writer, tmp_path / "big")


def test_growth_is_accepted_with_a_consistency_proof(
    grown: Any, served: Served, tmp_path: Path
) -> None:
    writer, small, big = grown
    home = tmp_path / "home"
    served.show(small)
    assert isinstance(_look(served, writer, "cd" * 32, home), NeverRecorded)
    served.show(big)
    digest = entries(writer.path)[3]["digests"]["surface"]
    found = _look(served, writer, digest, home)
    assert isinstance(found, Recorded) and found.checkpoint_size == 4
    assert load(home, ORIGIN).checkpoint == (big / "checkpoint").read_text()


def test_rolled_back_log_is_distrusted_until_reset(
    grown: Any, served: Served, tmp_path: Path
) -> None:
    writer, small, big = grown
    home = tmp_path / "home"
    served.show(big)
    _look(served, writer, "cd" * 32, home)
    served.show(small)
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, "cd" * 32, home)
    assert caught.value.kind == "rollback"
    assert "rolled back" in caught.value.message
    kept = load(home, ORIGIN)
    assert kept.distrusted is not None and kept.distrusted.kind == "rollback"
    assert kept.distrusted.checkpoint == (small / "checkpoint").read_text()
    # The good log again: still refused, before anything is fetched.
    served.show(big)
    with pytest.raises(LogProblem) as again:
        _look(served, writer, "cd" * 32, home)
    assert again.value.kind == "distrusted"
    assert f"toolpin log trust --reset {ORIGIN}" in (again.value.advice or "")


def _forked_pair(tmp_path: Path) -> tuple[LogWriter, Path, Path]:
    """Two logs signed by one key, the same size, different entries."""
    first = LogWriter(tmp_path / "one")
    second = LogWriter(tmp_path / "two")
    for writer, name in ((first, "honest"), (second, "shown-to-one-user")):
        writer.observe("a", [tool("one")], "2026-09-01T03:00:00Z")
        writer.observe(name, [tool("two")], "2026-09-01T04:00:00Z")
        writer.commit()
    return first, site_of(first, tmp_path / "s1"), site_of(second, tmp_path / "s2")


def test_fork_same_size_other_root(forked: Any, served: Served, tmp_path: Path) -> None:
    writer, one, two = forked
    assert (one / "checkpoint").read_text() != (two / "checkpoint").read_text()
    home = tmp_path / "home"
    served.show(one)
    _look(served, writer, "cd" * 32, home)
    served.show(two)
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, "cd" * 32, home)
    assert caught.value.kind == "fork"
    assert "size 2" in caught.value.message
    assert load(home, ORIGIN).distrusted is not None


def test_fork_that_grew_is_proven_from_its_tiles(
    forked: Any, served: Served, tmp_path: Path
) -> None:
    writer, one, _ = forked
    other = LogWriter(tmp_path / "three")
    other.observe("a", [tool("one")], "2026-09-01T03:00:00Z")
    other.observe("someone-else", [tool("two")], "2026-09-01T04:00:00Z")
    other.observe("c", [tool("three")], "2026-09-02T04:00:00Z")
    other.commit()
    grown = site_of(other, tmp_path / "s3")
    home = tmp_path / "home"
    served.show(one)
    _look(served, writer, "cd" * 32, home)
    served.show(grown)
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, "cd" * 32, home)
    assert caught.value.kind == "fork"
    assert "does not extend checkpoint 2" in caught.value.message


def _flip(path: Path, offset: int = 5) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    replace_file(path, bytes(data))


def test_tampered_tile_is_named_and_does_not_distrust(
    three: Any, served: Served, tmp_path: Path
) -> None:
    writer, site, logged = three
    served.show(site)
    _flip(served.folder / "tile/0/000.p/4")
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, logged[3]["digests"]["surface"], tmp_path / "home")
    assert caught.value.kind == "tampered"
    assert load(tmp_path / "home", ORIGIN).distrusted is None
    served.show(site)
    assert isinstance(
        _look(served, writer, logged[3]["digests"]["surface"], tmp_path / "home"), Recorded
    )


def test_tampered_tile_during_growth_is_not_called_a_fork(
    grown: Any, served: Served, tmp_path: Path
) -> None:
    writer, small, big = grown
    home = tmp_path / "home"
    served.show(small)
    _look(served, writer, "cd" * 32, home)
    served.show(big)
    _flip(served.folder / "tile/0/000.p/4", 2 * 32 + 5)  # leaf 2: in the consistency proof
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, "cd" * 32, home)
    assert caught.value.kind == "tampered"
    assert load(home, ORIGIN).distrusted is None


def _prefix(site: Path, digest: str) -> str:
    """The prefix of ``digest``'s bucket at the length ``site`` publishes."""
    digits: int = json.loads((site / "api/v1/digests/index.json").read_bytes())["prefix_digits"]
    return digest[:digits]


def _rewrite_bucket(folder: Path, prefix: str, rows: list[dict[str, Any]]) -> None:
    path = folder / f"api/v1/digests/{prefix}.json"
    bucket = json.loads(path.read_bytes())
    bucket["digests"] = rows
    replace_file(path, rfc8785.dumps(bucket))


def test_bucket_that_lies_is_not_believed(three: Any, served: Served, tmp_path: Path) -> None:
    writer, site, logged = three
    served.show(site)
    real = logged[3]["digests"]["surface"]
    fake = real[:3] + "0" * 61
    # The bucket says entry 3 recorded `fake`; entry 3 records `real`.
    _rewrite_bucket(
        served.folder,
        _prefix(site, real),
        [{"digest": fake, "kind": "surface", "entries": [3]}],
    )
    assert isinstance(_look(served, writer, fake, tmp_path / "home"), NeverRecorded)
    # And a bucket that names a checkpoint not in this log is refused.
    path = served.folder / f"api/v1/digests/{_prefix(site, real)}.json"
    bucket = json.loads(path.read_bytes())
    bucket["checkpoint"]["root"] = "A" * 43 + "="
    replace_file(path, rfc8785.dumps(bucket))
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, fake, tmp_path / "home")
    assert caught.value.kind == "tampered"


def test_digest_prefix_collision(served: Served, tmp_path: Path) -> None:
    writer = LogWriter(tmp_path / "log")
    seen: dict[str, str] = {}
    pair: tuple[str, str] | None = None
    from site_helpers import snapshot

    for n in range(5000):
        digest = snapshot([tool(f"t{n}")]).surface_hash()
        if digest[:3] in seen:
            pair = (seen[digest[:3]], f"t{n}")
            break
        seen[digest[:3]] = f"t{n}"
    assert pair is not None
    writer.observe("first", [tool(pair[0])], "2026-09-01T03:00:00Z")
    writer.observe("second", [tool(pair[1])], "2026-09-02T03:00:00Z")
    writer.commit()
    site = site_of(writer, tmp_path / "site")
    logged = entries(writer.path)
    d0, d1 = (e["digests"]["surface"] for e in logged)
    assert d0[:3] == d1[:3] and d0 != d1
    bucket = json.loads((site / f"api/v1/digests/{_prefix(site, d0)}.json").read_bytes())
    assert {row["digest"] for row in bucket["digests"] if row["kind"] == "surface"} == {d0, d1}
    served.show(site)
    home = tmp_path / "home"
    assert _look(served, writer, d0, home).entry_index == 0
    assert _look(served, writer, d1, home).entry_index == 1
    assert isinstance(_look(served, writer, d0[:3] + "f" * 61, home), NeverRecorded)


def test_bad_signature(three: Any, served: Served, tmp_path: Path) -> None:
    _, site, _ = three
    served.show(site)
    other = Signer.from_seed(ORIGIN, b"\x07" * 32).verifier.text
    with pytest.raises(LogProblem) as caught:
        look_up(LogRef(served.url, other), "ab" * 32, home=tmp_path / "h", allow_private=True)
    assert caught.value.kind == "bad-signature"


def test_unreachable_log_and_loopback_refused_by_default(three: Any, tmp_path: Path) -> None:
    writer, _, _ = three
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ref = LogRef(f"http://127.0.0.1:{port}/", writer.vkey)
    with pytest.raises(LogProblem) as caught:
        look_up(ref, "ab" * 32, home=tmp_path / "h", timeout=0.5, allow_private=True)
    assert caught.value.kind == "unreachable"
    assert caught.value.message == "the log cannot be reached (the checkpoint)"
    with pytest.raises(LogProblem) as refused:
        look_up(ref, "ab" * 32, home=tmp_path / "h", timeout=0.5, allow_private=False)
    assert refused.value.kind == "unreachable"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOOLPIN_HOME": str(home), "PYTHONPATH": "src"}
    return subprocess.run(
        [sys.executable, "-m", "toolpin", "log", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_cli_lookup_exit_codes_and_trust_reset(forked: Any, served: Served, tmp_path: Path) -> None:
    writer, one, two = forked
    home = tmp_path / "home"
    vkey = tmp_path / "log.vkey"
    vkey.write_text(writer.vkey + "\n", encoding="utf-8")
    digest = entries(writer.path)[1]["digests"]["surface"]
    served.show(one)
    base = ["lookup", "--log", served.url, "--vkey", str(vkey), "--allow-private"]
    found = _cli(home, *base, digest)
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("publicly recorded since 2026-09-01 (entry 1, verified")
    missing = _cli(home, *base, "--json", "ab" * 32)
    assert missing.returncode == 1
    assert json.loads(missing.stdout) == {
        "recorded": False,
        "origin": ORIGIN,
        "checkpoint_size": 2,
    }
    served.show(two)
    forked = _cli(home, *base, digest)
    assert forked.returncode == 2
    assert forked.stderr.startswith("toolpin: the log is forked")
    assert "Traceback" not in forked.stderr
    served.show(one)
    refused = _cli(home, *base, "--json", digest)
    assert refused.returncode == 2
    assert json.loads(refused.stdout)["problem"] == "distrusted"
    shown = _cli(home, "trust", ORIGIN)
    assert shown.returncode == 1 and "distrusted: a fork was detected" in shown.stdout
    reset = _cli(home, "trust", "--reset", ORIGIN)
    assert reset.returncode == 0
    assert reset.stdout == (
        f"forgot the kept checkpoint of {ORIGIN} (it was distrusted: fork); "
        "the next lookup starts over\n"
    )
    assert not state_path(home, ORIGIN).exists()
    assert _cli(home, *base, digest).returncode == 0
    assert _cli(home, "trust", ORIGIN).stdout.startswith(f"kept checkpoint 2 of {ORIGIN}")


def test_bad_digest_is_input_error(forked: Any, served: Served, tmp_path: Path) -> None:
    writer, one, _ = forked
    served.show(one)
    result = _cli(tmp_path / "h", "lookup", "--log", served.url, "--vkey", writer.vkey, "xyz")
    assert result.returncode == 2
    assert result.stderr.startswith("toolpin: a digest is 64 hex digits")


def test_index_newer_than_the_checkpoint(grown: Any, served: Served, tmp_path: Path) -> None:
    writer, small, big = grown
    served.show(small)
    shutil.rmtree(served.folder / "api/v1/digests")
    shutil.copytree(big / "api/v1/digests", served.folder / "api/v1/digests")
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, "cd" * 32, tmp_path / "home")
    assert caught.value.kind == "tampered"
    assert "newer than the log serves" in caught.value.message


def test_concurrent_lookups_share_one_kept_checkpoint(
    grown: Any, served: Served, tmp_path: Path
) -> None:
    writer, small, big = grown
    home = tmp_path / "home"
    served.show(small)
    assert isinstance(_look(served, writer, "cd" * 32, home), NeverRecorded)
    served.show(big)
    env = {**os.environ, "TOOLPIN_HOME": str(home), "PYTHONPATH": "src"}
    args = ["lookup", "--log", served.url, "--vkey", writer.vkey, "--allow-private", "cd" * 32]
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "toolpin", "log", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [run.communicate(timeout=60) for run in runs]
    assert [run.returncode for run in runs] == [1, 1, 1, 1], outputs
    assert all(out.startswith("never recorded") for out, _ in outputs)
    kept = load(home, ORIGIN)
    assert kept.checkpoint == (big / "checkpoint").read_text() and kept.distrusted is None


def test_log_that_never_answers_times_out(three: Any, tmp_path: Path) -> None:
    writer, _, _ = three
    with socket.socket() as sock:  # accepts connections (the backlog), never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        ref = LogRef(f"http://127.0.0.1:{sock.getsockname()[1]}/", writer.vkey)
        with pytest.raises(LogProblem) as caught:
            look_up(ref, "ab" * 32, home=tmp_path / "h", timeout=0.3, allow_private=True)
    assert caught.value.kind == "unreachable"
    assert caught.value.message == "the log did not answer in time (the checkpoint)"


def test_state_file_not_written_by_toolpin_fails_closed(
    three: Any, served: Served, tmp_path: Path
) -> None:
    writer, site, _ = three
    served.show(site)
    home = tmp_path / "home"
    _look(served, writer, "ab" * 32, home)
    path = state_path(home, ORIGIN)
    path.write_text('{"origin": "somewhere/else"}', encoding="utf-8")
    with pytest.raises(StoreError):
        _look(served, writer, "ab" * 32, home)
    # A kept checkpoint the pinned key did not sign (another key, same origin).
    other = LogWriter(tmp_path / "other", key=Signer.from_seed(ORIGIN, b"\x09" * 32))
    other.observe("x", [tool("x")], "2026-09-01T03:00:00Z")
    other.commit()
    path.write_text(
        json.dumps({"origin": ORIGIN, "checkpoint": (other.path / "checkpoint").read_text()}),
        encoding="utf-8",
    )
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, "ab" * 32, home)
    assert caught.value.kind == "bad-signature"


def test_distrusted_log_is_refused_before_any_request(
    forked: Any, served: Served, tmp_path: Path
) -> None:
    writer, one, two = forked
    home = tmp_path / "home"
    served.show(one)
    _look(served, writer, "ab" * 32, home)
    served.show(two)
    with pytest.raises(LogProblem):
        _look(served, writer, "ab" * 32, home)
    before = served.requests
    unreachable = LogRef("http://127.0.0.1:9/", writer.vkey)
    with pytest.raises(LogProblem) as caught:
        look_up(unreachable, "ab" * 32, home=home, allow_private=True)
    assert caught.value.kind == "distrusted"
    assert served.requests == before


def test_an_unchanged_checkpoint_verified_before_is_not_verified_again(
    three: Any, served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept checkpoint's exact bytes, marked as verified with this key, skip the
    signature check; another key, a changed mark or changed bytes verify in full."""
    from toolpin.evidence.lookup import VERIFIED_MARK, bundle_cache
    from toolpin.publog.note import Verifier

    writer, site, logged = three
    served.show(site)
    home = tmp_path / "home"
    digest = logged[3]["digests"]["surface"]
    assert _look(served, writer, digest, home).entry_index == 3  # verified and marked
    mark = bundle_cache(home, ORIGIN) / VERIFIED_MARK
    assert mark.is_file()
    checks: list[bytes] = []
    real = Verifier.verify

    def counted(self: Verifier, message: bytes, signature: bytes) -> bool:
        checks.append(message)
        return real(self, message, signature)

    monkeypatch.setattr(Verifier, "verify", counted)
    assert _look(served, writer, digest, home).entry_index == 3
    assert checks == []  # the same bytes, verified before with this key
    mark.write_bytes(b"0" * 64)
    assert _look(served, writer, digest, home).entry_index == 3
    assert checks  # a mark that does not match: verified in full, and marked again
    checks.clear()
    assert _look(served, writer, digest, home).entry_index == 3
    assert checks == []
    # Another key of the same name: the kept checkpoint is not signed by it.
    other = Signer.from_seed(ORIGIN, b"\x07" * 32).verifier.text
    with pytest.raises(LogProblem) as caught:
        look_up(LogRef(served.url, other), digest, home=home, allow_private=True)
    assert caught.value.kind == "bad-signature"


def test_an_old_three_digit_site_is_looked_up_and_its_new_layout_next(
    three: Any, served: Served, tmp_path: Path
) -> None:
    writer, site, logged = three
    old = Path(shutil.copytree(site, tmp_path / "old"))
    legacy_digests(old)  # no index.json, 4,096 buckets of 3 digits
    served.show(old)
    home = tmp_path / "home"
    found = _look(served, writer, logged[3]["digests"]["surface"], home)
    assert isinstance(found, Recorded) and found.entry_index == 3
    assert isinstance(_look(served, writer, "ab" * 32, home), NeverRecorded)
    mark = bundle_cache(home, ORIGIN) / "digest-prefix"
    assert mark.read_bytes() == b"3"
    # The site rebuilt in the new layout (one digit): the kept 3 finds no bucket, the
    # index is read again, and the lookup carries on.
    served.show(site)
    found = _look(served, writer, logged[2]["digests"]["surface"], home)
    assert isinstance(found, Recorded) and found.entry_index == 2
    assert mark.read_bytes() == b"1"


def test_a_reader_holding_a_shorter_length_reads_the_index_again(
    served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(digestindex, "RECORDS_PER_BUCKET", 1)  # 17 records: two digits
    writer = LogWriter(tmp_path / "log")
    for n in range(9):
        writer.observe(f"s{n}", [tool(f"t{n}")], f"2026-11-{n + 1:02d}T00:00:00Z")
        if n == 3:
            writer.commit()
            small = site_of(writer, tmp_path / "small")  # 8 records: one digit
    writer.commit()
    big = site_of(writer, tmp_path / "big")
    logged = entries(writer.path)
    home = tmp_path / "home"
    mark = bundle_cache(home, ORIGIN) / "digest-prefix"
    served.show(small)
    assert _look(served, writer, logged[0]["digests"]["surface"], home).entry_index == 0
    assert mark.read_bytes() == b"1"
    served.show(big)  # its one-digit buckets are gone: the kept length finds none
    found = _look(served, writer, logged[8]["digests"]["surface"], home)
    assert isinstance(found, Recorded) and (found.entry_index, found.checkpoint_size) == (8, 9)
    assert mark.read_bytes() == b"2"
    # kept, the length costs a warm lookup no request; without it, one (the index)
    digest = logged[5]["digests"]["surface"]
    before = served.requests
    assert _look(served, writer, digest, home).entry_index == 5
    warm = served.requests - before
    mark.unlink()
    before = served.requests
    assert _look(served, writer, digest, home).entry_index == 5
    assert served.requests - before == warm + 1


def test_a_tampered_prefix_length_is_refused_or_harmless(
    three: Any, served: Served, tmp_path: Path
) -> None:
    writer, site, logged = three
    real = logged[3]["digests"]["surface"]
    served.show(site)
    index = served.folder / "api/v1/digests/index.json"
    # Longer than a log of 4 entries can need: it would tell the host more of the digest.
    replace_file(index, b'{"prefix_digits":5}')
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, real, tmp_path / "h1")
    assert caught.value.kind == "tampered"
    assert caught.value.message == (
        "the log's digest index asks for a prefix of 5 hex digits, more than a log of 4 "
        "entries needs"
    )
    for bad in (b"[]", b'{"prefix_digits":"2"}', b'{"prefix_digits":2,"more":1}', b"{"):
        replace_file(index, bad)
        with pytest.raises(LogProblem) as caught:
            _look(served, writer, real, tmp_path / "h2")
        assert caught.value.kind == "tampered", bad
        assert caught.value.message == "the log's digest index prefix length is malformed"
    # A bucket of another length where the index's length points: refused as today.
    replace_file(index, b'{"prefix_digits":1}')
    path = served.folder / f"api/v1/digests/{real[:1]}.json"
    bucket = json.loads(path.read_bytes())
    replace_file(path, rfc8785.dumps({**bucket, "prefix": real[:2]}))
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, real, tmp_path / "h6")
    assert caught.value.kind == "tampered"
    assert caught.value.message == f"the digest index bucket {real[:1]} is malformed"
    replace_file(path, rfc8785.dumps(bucket))
    # A length within the bound but not the site's, or no index (3 digits): no such
    # bucket, which is a problem, never "not recorded".
    replace_file(index, b'{"prefix_digits":2}')
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, real, tmp_path / "h3")
    assert caught.value.kind == "unreachable"
    assert caught.value.message == f"the log has no digest index bucket {real[:2]}"
    index.unlink()
    with pytest.raises(LogProblem) as caught:
        _look(served, writer, real, tmp_path / "h4")
    assert caught.value.message == f"the log has no digest index bucket {real[:3]}"
    # Every bucket of a wrong length forged, one omitting the digest: a miss, as a lying
    # bucket makes (the audit catches both); a digest still listed is proven from its entry.
    forged = Path(shutil.copytree(site, tmp_path / "forged"))
    legacy_digests(forged, digits=2, index=True)
    _rewrite_bucket(forged, real[:2], [])
    served.show(forged)
    assert isinstance(_look(served, writer, real, tmp_path / "h5"), NeverRecorded)
    other = next(i for i, e in enumerate(logged) if e["digests"]["surface"][:2] != real[:2])
    found = _look(served, writer, logged[other]["digests"]["surface"], tmp_path / "h5")
    assert isinstance(found, Recorded) and found.entry_index == other
