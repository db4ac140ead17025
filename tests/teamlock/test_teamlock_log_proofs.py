"""The lock carries the log's evidence: ``toolpin lock --log URL --vkey FILE`` records,
per server the log recorded, the signed checkpoint, the entry and its inclusion proof;
``lock --check`` verifies them offline (the log server stopped), and with the log
reachable proves the log's current checkpoint extends the recorded one. Real logs
(the crawler's record code, ``build_site``) served on loopback."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from teamlock_support import Project, Servers, entry
from tests.site.site_helpers import NOW, ORIGIN, LogWriter, serve, snapshot
from tests.site.site_helpers import tool as make_tool

from toolpin.core.snapshot import Snapshot
from toolpin.crawl.candidates import Candidate, crawl_id
from toolpin.crawl.record import Observation, definitions_blob, observation_record
from toolpin.evidence.state import load
from toolpin.lockfile.native import bytes_intact, read_lock
from toolpin.publog.entries import decode_entry, encode_entry
from toolpin.publog.merkle import leaf_hash
from toolpin.publog.note import Signer, Verifier
from toolpin.site.build import build_site, parse_now


class Published:
    """A log written as ``toolpin log crawl`` writes it, its site served from a folder
    that :meth:`publish` replaces (so the log can grow, fork or go away)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.www = root / "www"
        self.www.mkdir(parents=True)
        self.server, self.url = serve(self.www)
        self.running = True
        self.writers = 0

    def writer(self) -> LogWriter:
        self.writers += 1
        return LogWriter(self.root / f"log{self.writers}")

    def publish(self, writer: LogWriter, recorded: dict[str, Snapshot]) -> None:
        for name, snap in recorded.items():
            record(writer, name, snap)
        writer.commit()
        out = self.root / f"site{self.writers}-{writer.log.size}"
        build_site(writer.path, Verifier.from_text(writer.vkey), out, now=parse_now(NOW))
        for child in list(self.www.iterdir()):
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        shutil.copytree(out, self.www, dirs_exist_ok=True)
        key = self.root / "log.vkey"
        key.write_text(writer.vkey + "\n", encoding="utf-8")

    @property
    def key(self) -> str:
        return str(self.root / "log.vkey")

    def stop(self) -> None:
        if self.running:
            self.server.shutdown()
            self.server.server_close()
            self.running = False


def record(writer: LogWriter, name: str, snap: Snapshot) -> None:
    cand = Candidate(id=crawl_id("registry", name), name=name, source="registry", transport="stdio")
    obs = Observation(
        snapshot=snap,
        era="handshake",
        protocol_version="2025-06-18",
        observed_at="2026-11-20T03:00:00Z",
    )
    rec = observation_record(
        cand, obs, previous=None, blob=writer.blobs.put(definitions_blob(snap))
    )
    writer.pending.append(encode_entry(rec))


def other(tool: str) -> Snapshot:
    return snapshot([make_tool(tool)])


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TOOLPIN_LOG_ALLOW_PRIVATE", "1")
    published = Published(tmp_path / "pub")
    yield published
    published.stop()


def _locked_with_proof(project: Project, servers: Servers, log: Published) -> LogWriter:
    """Lock two servers, publish a log recording one of them (among others), and lock
    again with --log: the recorded one gets its proof."""
    project.write_config(
        {
            "notes": entry(servers.command("notes", instructions="Use search first.")),
            "mine": entry(servers.command("mine", tools=[{"name": "only_here"}])),
        }
    )
    assert project.toolpin("lock").code == 0
    snap = read_lock(project.lock_path).servers["notes"].snapshot
    writer = log.writer()
    log.publish(writer, {"a": other("one"), "notes": snap, "b": other("two")})
    written = project.toolpin("lock", "--log", log.url, "--vkey", log.key)
    assert written.code == 0, written.err
    lines = written.out.splitlines()
    at = lines.index("notes: locked (2 tools)")
    assert lines[at + 2] == (f"  proof: recorded in the lock (entry 1 in checkpoint 3 of {ORIGIN})")
    assert "proof:" not in lines[lines.index("mine: locked (1 tool)") + 2]
    return writer


def _proof(project: Project) -> dict[str, Any]:
    doc = json.loads(project.lock_path.read_text(encoding="utf-8"))
    member: dict[str, Any] = doc["servers"]["notes"]["publicLog"]
    return member


def _rewrite(project: Project, change: Any) -> None:
    doc = json.loads(project.lock_path.read_text(encoding="utf-8"))
    change(doc["servers"]["notes"]["publicLog"])
    project.lock_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def test_lock_records_the_proof_and_check_verifies_it_offline(
    project: Project, servers: Servers, log: Published
) -> None:
    _locked_with_proof(project, servers, log)
    data = project.lock_path.read_bytes()
    assert bytes_intact(data)  # the lock's own digest covers the proof
    locked = json.loads(data)["servers"]
    assert "publicLog" not in locked["mine"]  # the log never recorded it
    proof = locked["notes"]["publicLog"]
    assert proof["entryIndex"] == 1
    assert proof["checkpoint"] == (log.www / "checkpoint").read_text(encoding="utf-8")
    assert proof["checkpoint"].startswith(f"{ORIGIN}\n3\n")
    raw = base64.b64decode(proof["entry"])
    assert base64.b64decode(proof["leafHash"]) == leaf_hash(raw)
    assert decode_entry(raw)["digests"]["surface"] == locked["notes"]["surfaceHash"]
    assert len(proof["inclusion"]) == 2  # entry 1 of a tree of 3

    online = project.toolpin("lock", "--check", "--log", log.url, "--vkey", log.key)
    assert online.code == 0, online.err
    lines = online.out.splitlines()
    at = lines.index("notes: matches the lock")
    assert lines[at + 2] == (
        f"  proof: entry 1 in checkpoint 3 of {ORIGIN}, verified offline; "
        "the log's checkpoint 3 extends it"
    )

    log.stop()  # offline: the proof still verifies; consistency cannot be proven
    offline = project.toolpin("lock", "--check", "--log", log.url, "--vkey", log.key)
    assert offline.code == 0, offline.err
    assert (
        f"  proof: entry 1 in checkpoint 3 of {ORIGIN}, verified offline; "
        "consistency with the log not proven: the log cannot be reached (the checkpoint)"
    ) in offline.out.splitlines()

    as_json = project.toolpin("lock", "--check", "--json", "--log", log.url, "--vkey", log.key)
    doc = {s["name"]: s for s in json.loads(as_json.out)["servers"]}
    assert doc["notes"]["proof"]["entry_index"] == 1
    assert doc["notes"]["proof"]["signature_checked"] is True
    assert doc["notes"]["proof"]["consistent_with"] is None
    assert doc["mine"]["proof"] is None

    # Without a log configured the proof is still checked, all but its signature.
    plain = project.toolpin("lock", "--check")
    assert plain.code == 0, plain.err
    assert "its signature is checked with the log's key" in plain.out


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (
            lambda p: p.update(inclusion=[base64.b64encode(b"\0" * 32).decode()] * 2),
            "does not include entry 1 in checkpoint 3",
        ),
        (lambda p: p.update(entryIndex=2), "does not include entry 2 in checkpoint 3"),
        (lambda p: p.update(inclusion=p["inclusion"][:1]), "does not include entry 1"),
        (
            lambda p: p.update(checkpoint=p["checkpoint"].replace("\n3\n", "\n4\n", 1)),
            "checkpoint is not signed by the log's key",
        ),
        (
            lambda p: p.update(
                entry=base64.b64encode(base64.b64decode(p["entry"]) + b" ").decode()
            ),
            "records an entry that is not its leaf hash",
        ),
        (lambda p: p.update(entry="not base64!"), "its public-log proof is malformed"),
        (lambda p: p.pop("leafHash"), "its public-log proof is malformed"),
    ],
    ids=["inclusion", "index", "short-proof", "checkpoint", "entry", "garbled", "no-leaf"],
)
def test_a_tampered_proof_makes_the_lock_unusable(
    project: Project, servers: Servers, log: Published, change: Any, why: str
) -> None:
    _locked_with_proof(project, servers, log)
    _rewrite(project, change)
    log.stop()
    checked = project.toolpin("lock", "--check", "--log", log.url, "--vkey", log.key)
    assert checked.code == 2
    assert checked.out == ""
    first = checked.err.splitlines()[0]
    assert first.startswith("toolpin: ") and "server 'notes'" in first and why in first, first


def test_an_entry_swapped_for_another_logged_entry_is_unusable(
    project: Project, servers: Servers, log: Published
) -> None:
    """A valid proof of another entry (its own leaf hash and inclusion): the signature
    and the inclusion verify, but the entry does not record the locked definitions."""
    _locked_with_proof(project, servers, log)
    proof = _proof(project)
    # Entry 0 of the same log, with its own proof to the same checkpoint.
    from toolpin.evidence import LogRef
    from toolpin.evidence.proofs import prove

    key = Path(log.key).read_text(encoding="utf-8").strip()
    theirs = prove(LogRef(log.url, key), {"a": 0}, home=project.home)["a"].to_json()
    assert theirs["checkpoint"] == proof["checkpoint"]
    _rewrite(project, lambda p: p.update(theirs))
    checked = project.toolpin("lock", "--check", "--log", log.url, "--vkey", log.key)
    assert checked.code == 2
    assert "entry 0 does not record these definitions" in checked.err


def test_a_lock_without_proofs_is_unchanged(
    project: Project, servers: Servers, log: Published
) -> None:
    project.write_config({"notes": entry(servers.command("notes"))})
    assert project.toolpin("lock").code == 0
    before = project.lock_path.read_bytes()
    assert b"publicLog" not in before
    log.publish(log.writer(), {"a": other("one")})  # a log that does not record it
    assert project.toolpin("lock", "--log", log.url, "--vkey", log.key).code == 0
    assert project.lock_path.read_bytes() == before  # nothing to prove: the same bytes
    checked = project.toolpin("lock", "--check", "--log", log.url, "--vkey", log.key)
    assert checked.code == 0, checked.err
    assert "proof:" not in checked.out
    as_json = project.toolpin("lock", "--check", "--json", "--log", log.url, "--vkey", log.key)
    assert "proof" not in json.loads(as_json.out)["servers"][0]  # the keys old locks had


def test_consistency_to_a_grown_log(project: Project, servers: Servers, log: Published) -> None:
    writer = _locked_with_proof(project, servers, log)
    log.publish(writer, {"c": other("three"), "d": other("four"), "e": other("five")})
    checked = project.toolpin("lock", "--check", "--log", log.url, "--vkey", log.key)
    assert checked.code == 0, checked.err
    assert (
        f"  proof: entry 1 in checkpoint 3 of {ORIGIN}, verified offline; "
        "the log's checkpoint 6 extends it"
    ) in checked.out.splitlines()


@pytest.mark.parametrize("fresh_home", [False, True], ids=["kept", "teammate"])
def test_a_forked_log_is_named(
    project: Project, servers: Servers, log: Published, fresh_home: bool
) -> None:
    """The log (same key) now serves a tree that does not extend the recorded checkpoint.
    ``teammate``: nothing kept on this machine; the lock's checkpoint alone proves it."""
    _locked_with_proof(project, servers, log)
    notes = read_lock(project.lock_path).servers["notes"].snapshot
    log.publish(
        log.writer(), {"x": other("shown"), "notes": notes, "y": other("alone"), "z": other("four")}
    )
    if fresh_home:
        shutil.rmtree(project.home / "logs")
    checked = project.toolpin("lock", "--check", "--log", log.url, "--vkey", log.key)
    assert checked.code == 2
    assert checked.out == ""
    first = checked.err.splitlines()[0]
    assert "the public log contradicts the proofs of 'notes'" in first
    assert "forked" in first
    assert load(project.home, ORIGIN).distrusted is not None
    again = project.toolpin("lock", "--check", "--log", log.url, "--vkey", log.key)
    assert again.code == 2  # distrusted until a person resets it
    assert "the public log cannot vouch for the proofs of 'notes'" in again.err


def test_a_rolled_back_log_is_named(project: Project, servers: Servers, log: Published) -> None:
    _locked_with_proof(project, servers, log)
    shutil.rmtree(project.home / "logs")  # a teammate: only the lock knows checkpoint 3
    log.publish(log.writer(), {"a": other("one")})
    checked = project.toolpin("lock", "--check", "--log", log.url, "--vkey", log.key)
    assert checked.code == 2
    assert "rolled back: it serves checkpoint 1, older than checkpoint 3" in checked.err
    assert load(project.home, ORIGIN).distrusted is not None


def test_a_proof_checked_with_another_logs_key_is_unusable(
    project: Project, servers: Servers, log: Published, tmp_path: Path
) -> None:
    _locked_with_proof(project, servers, log)
    other_key = tmp_path / "other.vkey"
    other_key.write_text(Signer.generate("log.example/other").verifier.text + "\n", "utf-8")
    checked = project.toolpin("lock", "--check", "--log", log.url, "--vkey", str(other_key))
    assert checked.code == 2
    assert checked.err.splitlines()[0] == (
        f"toolpin: {project.lock_path.name}: server 'notes': its public-log proof is from the "
        f"log {ORIGIN}, not from log.example/other, the log of the key given"
    )


def test_without_a_log_a_tampered_proof_is_still_unusable(
    project: Project, servers: Servers, log: Published
) -> None:
    _locked_with_proof(project, servers, log)
    log.stop()
    _rewrite(project, lambda p: p.update(inclusion=list(reversed(p["inclusion"]))))
    checked = project.toolpin("lock", "--check")
    assert checked.code == 2
    assert "does not include entry 1 in checkpoint 3" in checked.err.splitlines()[0]
