"""``toolpin run --lock`` verifies the lock's public-log proofs before it starts a server,
as ``lock --check`` does: offline with the log's key, and with the log reachable, its
current checkpoint must extend the recorded one. A proof that does not verify, or that the
log contradicts, makes the lock unusable: the server is refused (-31043, exit 2), exactly
as for a lock whose hashes do not match. Real logs served on loopback; a real proxy."""

from __future__ import annotations

import json
from typing import Any

import pytest
from teamlock_support import Project, Servers, entry
from test_teamlock_log_proofs import Published, _locked_with_proof, _rewrite, other
from tests.site.site_helpers import ORIGIN

from toolpin.evidence.state import load
from toolpin.lockfile.native import read_lock

UNVERIFIED = -31043


@pytest.fixture
def log(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TOOLPIN_LOG_ALLOW_PRIVATE", "1")
    published = Published(tmp_path / "pub")
    yield published
    published.stop()


def _argv(project: Project) -> list[str]:
    doc = json.loads(project.config.read_text(encoding="utf-8"))
    notes = doc["mcpServers"]["notes"]
    return [notes["command"], *notes["args"]]


def _run(project: Project, *options: str) -> tuple[dict[str, Any], int, str]:
    client = project.start_proxy(
        "--name", "notes", "--lock", "toolpin.lock", *options, "--", *_argv(project)
    )
    answer = client.initialize()
    code = client.close()
    return answer, code, client.stderr.decode()


def test_a_good_proof_is_verified_offline_and_the_server_runs(
    project: Project, servers: Servers, log: Published
) -> None:
    _locked_with_proof(project, servers, log)
    log.stop()
    answer, code, err = _run(project, "--log", log.url, "--vkey", log.key)
    assert "result" in answer, err
    assert code == 0
    assert f"toolpin: proof: entry 1 in checkpoint 3 of {ORIGIN}, verified offline; " in err
    assert "consistency with the log not proven: the log cannot be reached" in err


def test_with_the_log_reachable_consistency_is_proven(
    project: Project, servers: Servers, log: Published
) -> None:
    writer = _locked_with_proof(project, servers, log)
    log.publish(writer, {"c": other("three"), "d": other("four"), "e": other("five")})
    answer, code, err = _run(project, "--log", log.url, "--vkey", log.key)
    assert "result" in answer and code == 0, err
    assert (
        f"toolpin: proof: entry 1 in checkpoint 3 of {ORIGIN}, verified offline; "
        "the log's checkpoint 6 extends it"
    ) in err.splitlines()


@pytest.mark.parametrize("configured", [True, False], ids=["with-log", "no-log"])
def test_a_tampered_proof_refuses_the_server(
    project: Project, servers: Servers, log: Published, configured: bool
) -> None:
    _locked_with_proof(project, servers, log)
    log.stop()
    _rewrite(project, lambda p: p.update(inclusion=list(reversed(p["inclusion"]))))
    options = ["--log", log.url, "--vkey", log.key] if configured else []
    answer, code, err = _run(project, *options)
    assert answer["error"]["code"] == UNVERIFIED
    assert code == 2
    assert "does not include entry 1 in checkpoint 3" in err
    assert "does not include" not in json.dumps(answer)  # one fixed message to the client


def test_a_proof_of_another_entry_refuses_the_server(
    project: Project, servers: Servers, log: Published
) -> None:
    _locked_with_proof(project, servers, log)
    _rewrite(project, lambda p: p.update(entryIndex=0))
    answer, code, err = _run(project, "--log", log.url, "--vkey", log.key)
    assert answer["error"]["code"] == UNVERIFIED and code == 2
    assert "server 'notes'" in err


def test_a_forked_log_refuses_the_server_and_is_distrusted(
    project: Project, servers: Servers, log: Published
) -> None:
    _locked_with_proof(project, servers, log)
    notes = read_lock(project.lock_path).servers["notes"].snapshot
    log.publish(log.writer(), {"x": other("shown"), "notes": notes, "y": other("alone")})
    answer, code, err = _run(project, "--log", log.url, "--vkey", log.key)
    assert answer["error"]["code"] == UNVERIFIED and code == 2
    assert "the public log contradicts the proofs of 'notes'" in err
    assert load(project.home, ORIGIN).distrusted is not None


def test_an_entry_without_a_proof_runs_without_a_proof_line(
    project: Project, servers: Servers, log: Published
) -> None:
    project.write_config({"notes": entry(servers.command("notes"))})
    assert project.toolpin("lock").code == 0
    log.publish(log.writer(), {"a": other("one")})  # a log that does not record it
    answer, code, err = _run(project, "--log", log.url, "--vkey", log.key)
    assert "result" in answer and code == 0, err
    assert "proof:" not in err


def test_a_server_refused_by_its_proof_never_receives_a_client_byte(
    project: Project, servers: Servers, log: Published, tmp_path: Any
) -> None:
    """The proof check runs while the server boots, and the relay starts only after it
    passes: a server whose lock the log contradicts is killed before it reads anything.
    The same server with the log agreeing receives the client's ``initialize`` (so the
    record below would show a byte that got through)."""
    _locked_with_proof(project, servers, log)
    seen = tmp_path / "received.jsonl"
    servers.edit("notes", record=str(seen))  # the command line, so the lock, stays the same
    answer, code, err = _run(project, "--log", log.url, "--vkey", log.key)
    assert "result" in answer and code == 0, err
    assert b'"initialize"' in seen.read_bytes()
    seen.unlink()
    notes = read_lock(project.lock_path).servers["notes"].snapshot
    log.publish(log.writer(), {"x": other("shown"), "notes": notes, "y": other("alone")})
    answer, code, err = _run(project, "--log", log.url, "--vkey", log.key)
    assert not seen.exists() or seen.read_bytes() == b""
    assert answer["error"]["code"] == UNVERIFIED and code == 2, err
