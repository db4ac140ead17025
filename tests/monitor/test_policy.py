"""Witness policies (``publog/policy.py``): the file format, the quorum, and every verifier
that takes one refusing a checkpoint without its quorum's cosignatures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evidence_helpers import Served, site_of
from monitor_helpers import change_files, cli, cosign_file, cosigned, policy_text, two_servers

from toolpin.evidence.errors import LogProblem
from toolpin.evidence.lookup import LogRef, look_up
from toolpin.evidence.proofs import prove
from toolpin.pins import publiclog
from toolpin.publog.cosignature import WitnessSigner
from toolpin.publog.note import Signer
from toolpin.publog.policy import PolicyError, load_policy, parse_policy

LOG = Signer.generate("log.example/a")
A, B, C = (WitnessSigner.generate(f"w{i}.example") for i in "abc")


def _note(signer: Signer = LOG) -> str:
    from toolpin.publog.checkpoint import Checkpoint, sign_checkpoint
    from toolpin.publog.merkle import EMPTY_ROOT

    return sign_checkpoint(Checkpoint(signer.name, 0, EMPTY_ROOT), signer)


NESTED = f"""# two of: (any of a, b), c
log {LOG.verifier.text} https://log.example/a/
witness a {A.key.text}
witness b {B.key.text} https://wb.example/
witness c {C.key.text}
group ab any a b
group top 2 ab c   # trailing comment
quorum top
"""


@pytest.mark.parametrize(
    ("signers", "ok"),
    [((), False), ((A,), False), ((A, B), False), ((A, C), True), ((B, C), True), ((C,), False)],
)
def test_nested_groups(signers: tuple[WitnessSigner, ...], ok: bool) -> None:
    policy = parse_policy(NESTED)
    note = cosigned(_note(), *signers)
    if ok:
        policy.check(note, LOG.verifier)
    else:
        with pytest.raises(PolicyError, match="the group top needs 2 of 2"):
            policy.check(note, LOG.verifier)


def test_refusals_name_what_is_missing() -> None:
    policy = parse_policy(NESTED)
    with pytest.raises(PolicyError) as caught:
        policy.check(cosigned(_note(), A), LOG.verifier)
    assert caught.value.message == (
        "checkpoint refused by the policy: the group top needs 2 of 2 (ab, c); "
        "1 cosigned (ab), 1 missing"
    )
    other = Signer.generate("log.example/b")
    with pytest.raises(PolicyError, match=r"does not know the log log\.example/b"):
        policy.check(cosigned(_note(other), A, C), other.verifier)


def test_a_bad_cosignature_of_a_known_witness_refuses_the_note() -> None:
    policy = parse_policy(NESTED)
    good = cosigned(_note(), A, C)
    forged_body = b"log.example/a\n1\n" + b"A" * 43 + b"=\n"
    forged = _note() + C.cosign(forged_body, 1)  # C's line over another body
    with pytest.raises(PolicyError, match=r"invalid cosignature from witness wc\.example"):
        policy.check(cosigned(forged, A), LOG.verifier)
    policy.check(good, LOG.verifier)
    stranger = WitnessSigner.generate("wz.example")  # unknown lines are ignored
    policy.check(cosigned(good, stranger), LOG.verifier)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "has no quorum line"),
        (f"witness a {A.key.text}\nquorum b\n", "b is not a witness or group"),
        (f"witness a {A.key.text}\nwitness a {B.key.text}\nquorum a\n", "a is defined twice"),
        (f"witness a {A.key.text}\nwitness b {A.key.text}\nquorum a\n", "listed twice"),
        (f"witness a {A.key.text}\ngroup g 2 a\nquorum g\n", "a group of 1 cannot need 2"),
        (f"witness a {A.key.text}\ngroup g 0 a\nquorum g\n", "a number from 1"),
        (f"witness a {A.key.text}\ngroup g any a a\nquorum g\n", "member twice"),
        (f"group g any h\nwitness h {A.key.text}\nquorum g\n", "not a witness or group defined"),
        (f"witness a {LOG.verifier.text}\nquorum a\n", "not a cosignature/v1"),
        (f"log {A.key.text}\nquorum none\n", "line 1"),
        (f"witness a {A.key.text}\nquorum a\nquorum a\n", "a second quorum line"),
        ("witnesses a b\nquorum none\n", "unknown keyword witnesses"),
        ("quorum none\n\x1b[2J\n", "control characters"),
    ],
)
def test_malformed_policies_are_refused(text: str, why: str) -> None:
    with pytest.raises(PolicyError, match=why):
        parse_policy(text)


def test_quorum_none_needs_only_the_log(tmp_path: Path) -> None:
    path = tmp_path / "p"
    path.write_text("quorum none\n")
    load_policy(path).check(_note(), LOG.verifier)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(PolicyError, match="not UTF-8"):
        load_policy(path)
    with pytest.raises(PolicyError, match="does not exist"):
        load_policy(tmp_path / "missing")


# --------------------------------------------------------------------------- every verifier


@pytest.fixture
def witnessed(tmp_path: Path) -> tuple[object, Path, Path]:
    """A log, its policy (a and b, both needed) and its vkey file."""
    w = two_servers(tmp_path / "log")
    policy = tmp_path / "policy.txt"
    policy.write_text(policy_text(w.vkey, {"a": A, "b": B}, "all"))
    vkey = tmp_path / "log.vkey"
    vkey.write_text(w.vkey + "\n")
    return w, policy, vkey


def test_log_verify_and_verify_proof_refuse_without_the_quorum(
    tmp_path: Path, witnessed: tuple[object, Path, Path]
) -> None:
    w, policy, vkey = witnessed
    log = str(w.path)  # type: ignore[attr-defined]
    home = tmp_path / "home"
    assert cli(home, "verify", "--log", log, "--vkey", str(vkey)).returncode == 0
    bare = cli(home, "verify", "--log", log, "--vkey", str(vkey), "--policy", str(policy))
    assert bare.returncode == 1 and "the group main needs 2 of 2" in bare.stdout
    proof = tmp_path / "proof"
    proof.write_text(cli(home, "prove", "--log", log, "--entry", "1").stdout)
    check = ("verify-proof", "--vkey", str(vkey), "--proof", str(proof), "--log", log)
    refused = cli(home, *check, "--policy", str(policy))
    assert refused.returncode == 1 and refused.stdout.startswith("FAILED: checkpoint refused")
    cosign_file(Path(log) / "checkpoint", A, B)
    assert (
        cli(home, "verify", "--log", log, "--vkey", str(vkey), "--policy", str(policy)).returncode
        == 0
    )
    proof.write_text(cli(home, "prove", "--log", log, "--entry", "1").stdout)
    assert cli(home, *check, "--policy", str(policy)).returncode == 0
    # the default policy of config.json applies with no flag
    home.mkdir(exist_ok=True)
    (home / "config.json").write_text(json.dumps({"log": {"policy": str(policy)}}))
    assert cli(home, "verify", "--log", log, "--vkey", str(vkey)).returncode == 0
    change_files(w)  # type: ignore[arg-type]  # a new checkpoint, signed by the log only
    assert cli(home, "verify", "--log", log, "--vkey", str(vkey)).returncode == 1


def test_consistency_proof_and_report_refuse_without_the_quorum(
    tmp_path: Path, witnessed: tuple[object, Path, Path]
) -> None:
    w, policy, vkey = witnessed
    log = str(w.path)  # type: ignore[attr-defined]
    home = tmp_path / "home"
    kept = tmp_path / "kept.checkpoint"
    kept.write_text((Path(log) / "checkpoint").read_text())
    change_files(w)  # type: ignore[arg-type]
    proof = tmp_path / "consistency"
    proof.write_text(cli(home, "prove", "--log", log, "--since", str(kept)).stdout)
    check = ("verify-proof", "--vkey", str(vkey), "--proof", str(proof))
    assert cli(home, *check).returncode == 0
    assert cli(home, *check, "--policy", str(policy)).returncode == 1
    report = ("report", "--log", log, "--vkey", str(vkey), "--since", str(kept))
    assert cli(home, *report).returncode == 0
    refused = cli(home, *report, "--policy", str(policy))
    assert refused.returncode == 1, refused.stderr
    assert "the group main needs 2 of 2" in refused.stderr and "Traceback" not in refused.stderr
    cosign_file(Path(log) / "checkpoint", A, B)
    proof.write_text(cli(home, "prove", "--log", log, "--since", str(kept)).stdout)
    assert cli(home, *check, "--policy", str(policy)).returncode == 0
    assert cli(home, *report, "--policy", str(policy)).returncode == 0


def test_lookups_of_the_proxy_and_the_lock_refuse_without_the_quorum(
    tmp_path: Path,
    served: Served,
    witnessed: tuple[object, Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolpin.publog.entries import decode_entry
    from toolpin.publog.tiles import TileLog

    w, policy, vkey = witnessed
    served.show(site_of(w, tmp_path / "site"))  # type: ignore[arg-type]
    first = decode_entry(TileLog.open(w.path).read_entry(0))  # type: ignore[attr-defined]
    digest = first["digests"]["surface"]
    home = tmp_path / "home"
    monkeypatch.setenv("TOOLPIN_LOG_ALLOW_PRIVATE", "1")
    monkeypatch.setenv(publiclog.ENV_POLICY, str(policy))
    settings = publiclog.settings(home, url=served.url, vkey=str(vkey), require_public=True)
    assert settings is not None and settings.policy == str(policy)
    refused = publiclog.check(settings, digest, home=home)  # as `run --log` and `lock` ask
    assert refused.problem_kind == "bad-signature"
    assert "not witnessed as the policy requires" in (refused.problem or "")
    assert refused.refusal() is not None  # require-public refuses it
    with pytest.raises(LogProblem, match="needs 2 of 2"):
        prove(settings.ref(), {"x": 0}, home=home)  # the lock's recorded proofs
    lookup = cli(home, "lookup", "--log", served.url, "--vkey", str(vkey), digest)
    assert lookup.returncode == 2 and "not witnessed" in lookup.stderr
    cosign_file(served.folder / "checkpoint", A, B)
    answered = publiclog.check(settings, digest, home=home)
    assert answered.recorded, answered.problem
    assert prove(settings.ref(), {"x": 0}, home=home)["x"].entry_index == 0
    assert cli(home, "lookup", "--log", served.url, "--vkey", str(vkey), digest).returncode == 0
    monkeypatch.delenv(publiclog.ENV_POLICY)
    plain = publiclog.settings(home, url=served.url, vkey=str(vkey))
    assert plain is not None and plain.policy is None
    assert look_up(LogRef(served.url, w.vkey), digest, home=home).entry_index == 0  # type: ignore[attr-defined, union-attr]


def test_a_lock_proof_is_checked_offline_against_the_policy(
    tmp_path: Path, served: Served, witnessed: tuple[object, Path, Path]
) -> None:
    from toolpin.evidence.proofs import verify_offline
    from toolpin.publog.entries import decode_entry
    from toolpin.publog.tiles import TileLog

    w, policy_file, _ = witnessed
    policy = load_policy(policy_file)
    served.show(site_of(w, tmp_path / "site"))  # type: ignore[arg-type]
    digest = decode_entry(TileLog.open(w.path).read_entry(0))["digests"]["surface"]  # type: ignore[attr-defined]
    vkey = w.vkey  # type: ignore[attr-defined]
    bare = prove(LogRef(served.url, vkey), {"x": 0}, home=tmp_path / "h1", allow_private=True)["x"]
    assert verify_offline(bare, digest, vkey=vkey).entry_index == 0  # no policy: as before
    with pytest.raises(LogProblem, match="not witnessed as the policy requires"):
        verify_offline(bare, digest, vkey=vkey, policy=policy)
    cosign_file(served.folder / "checkpoint", A, B)
    ref = LogRef(served.url, vkey, policy=str(policy_file))
    kept = prove(ref, {"x": 0}, home=tmp_path / "h2", allow_private=True)["x"]
    assert verify_offline(kept, digest, vkey=vkey, policy=policy).entry_index == 0
    assert kept.checkpoint.count("\n\u2014 ") == 3  # the recorded note keeps the cosignatures
