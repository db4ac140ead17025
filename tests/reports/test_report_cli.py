"""``toolpin log report``: since a kept checkpoint (proven), since a time span, the month,
``--verify``, watch exit codes, Atom, and no third-party text."""

from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.reports.conftest import HOSTILE, A, B, C
from tests.reports.logbuilder import LogBuilder, tools
from toolpin.cli import main
from toolpin.publog.merkle import verify_consistency, verify_inclusion

NOW = "2026-12-01T06:00:00Z"


def _run(log: LogBuilder, *args: str) -> tuple[int, str, str]:
    """Run ``toolpin log report`` through the real entry point: exit code, stdout, stderr."""
    argv = ["log", "report", "--log", str(log.path), "--vkey", log.vkey, "--now", NOW, *args]
    runner = CliRunner()
    with runner.isolation() as streams:
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        else:  # pragma: no cover - main always exits
            code = 0
        out, err = streams[0].getvalue(), streams[1].getvalue()
    return code, out.decode("utf-8"), err.decode("utf-8")


def _json(log: LogBuilder, *args: str) -> dict[str, Any]:
    code, out, _ = _run(log, *args, "--json")
    assert code == 0, out
    assert out.isascii()
    doc: dict[str, Any] = json.loads(out)
    return doc


def _unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def test_since_a_kept_checkpoint_is_proven_and_explained(history: LogBuilder) -> None:
    kept = str(history.path.parent / "october.checkpoint")
    doc = _json(history, "--since", kept)
    assert doc["since"] == {"size": 3, "root": doc["since"]["root"], "kept": True, "cutoff": None}
    cp = doc["checkpoint"]
    assert cp["size"] == 6 and doc["entries"] == 3
    assert verify_consistency(
        3,
        6,
        _unb64(doc["since"]["root"]),
        _unb64(cp["root"]),
        [_unb64(h) for h in doc["consistencyProof"]],
    )
    rows = {r["server"]: r for r in doc["changes"]}
    assert set(rows) == {A, B, C}
    for row in doc["changes"]:
        assert verify_inclusion(
            _unb64(row["leafHash"]),
            row["index"],
            cp["size"],
            [_unb64(h) for h in row["inclusionProof"]],
            _unb64(cp["root"]),
        )
    a, b, c = rows[A], rows[B], rows[C]
    assert a["tools"] == {"added": 0, "removed": 0, "changed": 1, "schemaOnly": 1}
    assert a["window"] == {
        "from": "2026-11-02T04:00:00Z",
        "to": "2026-11-03T04:00:00Z",
        "source": "look",
        "gap": False,
    }
    assert b["window"]["gap"] is True and b["tools"]["schemaOnly"] == 0
    assert {"instruction", "secrets"} <= set(b["labels"])
    assert c["tools"]["added"] == 1 and c["name"] is None
    assert c["labels"] == ["new-tool"]


def test_no_third_party_text_unless_show_text(history: LogBuilder) -> None:
    kept = str(history.path.parent / "october.checkpoint")
    code, plain, _ = _run(history, "--since", kept, "--json")
    assert code == 0
    for text in ("Read a file", "id_rsa", "onerror", "\\u202e", '"search"', "pong"):
        assert text not in plain
    code, shown, _ = _run(history, "--since", kept, "--json", "--show-text")
    doc = json.loads(shown)
    names = {r["server"]: r["name"] for r in doc["changes"]}
    assert names[C] is not None and "\u202e" not in names[C] and "\\u{202e}" in names[C]
    tool_names = {r["server"]: r["toolNames"] for r in doc["changes"]}
    assert tool_names[C]["added"] == ["pong"]
    code, text, _ = _run(history, "--since", kept)
    assert code == 0 and HOSTILE not in text and "name withheld" in text


def test_watch_exits_1_when_a_watched_server_changed(history: LogBuilder) -> None:
    kept = str(history.path.parent / "october.checkpoint")
    assert _run(history, "--since", kept, "--watch", A)[0] == 1
    code, out, _ = _run(history, "--since", kept, "--watch", "io.example/files")
    assert code == 1 and f"watched servers changed: {B}" in out
    assert _run(history, "--since", kept, "--watch", "0123456789abcdef")[0] == 0


def test_since_a_time_span_covers_the_log_suffix(history: LogBuilder) -> None:
    doc = _json(history, "--since", "28d")  # back to 2026-11-03T06:00Z
    assert doc["since"]["kept"] is False
    assert doc["since"]["cutoff"] == "2026-11-03T06:00:00Z"
    assert [r["index"] for r in doc["changes"]] == [4, 5]
    assert _json(history, "--since", "24h")["changes"] == []


def test_atom_output_has_stable_ids_and_entry_times(history: LogBuilder) -> None:
    kept = str(history.path.parent / "october.checkpoint")
    code, out, _ = _run(history, "--since", kept, "--atom")
    assert code == 0
    ns = {"a": "http://www.w3.org/2005/Atom"}
    feed = ET.fromstring(out)
    entries = feed.findall("a:entry", ns)
    assert len(entries) == 3
    assert feed.findtext("a:updated", namespaces=ns) == "2026-11-06T04:00:03Z"
    assert feed.find("a:author/a:name", ns) is not None
    ids = [e.findtext("a:id", namespaces=ns) or "" for e in entries]
    assert all(i.startswith("urn:toolpin:log.example/toolpin-reports:") for i in ids)
    assert "onerror" not in out and "Read a file" not in out
    # the same entries give the same ids in a later feed
    _, again, _ = _run(history, "--since", kept, "--atom")
    assert again == out


def test_a_log_that_does_not_verify_or_a_forked_kept_checkpoint_exits_1(
    history: LogBuilder, tmp_path: Path
) -> None:
    other = LogBuilder(tmp_path / "other", key=history.key)
    other.batch(("dddddddddddddddd", "x", tools(t="T."), "2026-10-01T00:00:00Z"))
    fork = tmp_path / "fork.checkpoint"
    fork.write_text(other.checkpoint_text(), encoding="utf-8")
    code, _, err = _run(history, "--since", str(fork))
    assert code == 1 and "does not verify" in err
    tile = next((history.path / "tile" / "entries").rglob("*"))
    while tile.is_dir():
        tile = next(tile.iterdir())
    data = bytearray(tile.read_bytes())
    data[10] ^= 1
    tile.write_bytes(bytes(data))
    code, _, err = _run(history, "--month", "2026-11")
    assert code == 1 and err.startswith("toolpin: the log does not verify")


def test_monthly_report_counts_gaps_and_totals_only(history: LogBuilder) -> None:
    doc = _json(history, "--month", "2026-11")
    assert doc["partial"] is False  # made on 1 December
    assert doc["servers"] == {"tracked": 3, "recordedNew": 0, "changed": 3}
    assert doc["changes"]["events"] == 3 and doc["changes"]["afterGap"] == 2
    assert doc["changes"]["schemaOnly"] == 1
    assert doc["start"]["size"] == 3 and doc["end"]["size"] == 6
    assert doc["gaps"] == [
        {"from": "2026-10-20T04:00:09Z", "to": "2026-11-06T04:00:03Z", "changes": 2}
    ]
    assert doc["labels"]["secrets"] == 1
    for row in doc["byToolCount"]:
        assert "labels" not in row  # labels are totals, never against a named server
    assert [r["server"] for r in doc["byToolCount"]] == [A, B, C]  # 1 tool each, then id
    assert {r["server"]: r["name"] for r in doc["byToolCount"]}[C] is None
    size = doc["checkpoint"]["size"]
    start, end = doc["start"], doc["end"]
    assert verify_consistency(
        start["size"],
        end["size"],
        _unb64(start["root"]),
        _unb64(end["root"]),
        [_unb64(h) for h in doc["consistency"]["startToEnd"]],
    )
    assert verify_consistency(
        end["size"],
        size,
        _unb64(end["root"]),
        _unb64(doc["checkpoint"]["root"]),
        [_unb64(h) for h in doc["consistency"]["endToCheckpoint"]],
    )
    assert _json(history, "--month", "2026-12")["partial"] is True
    october = _json(history, "--month", "2026-10")
    assert october["servers"]["recordedNew"] == 3 and october["partial"] is False
    assert october["end"]["size"] == 3


def test_monthly_report_is_deterministic_and_verifies(history: LogBuilder, tmp_path: Path) -> None:
    out = tmp_path / "2026-11.json"
    assert _run(history, "--month", "2026-11", "--json", "--out", str(out))[0] == 0
    first = out.read_bytes()
    assert _run(history, "--month", "2026-11", "--json", "--out", str(out))[0] == 0
    assert out.read_bytes() == first
    code, text, _ = _run(history, "--verify", str(out))
    assert code == 0 and text.startswith("ok: the report for 2026-11 matches")
    # The log grows; the report still verifies at its own checkpoint.
    history.batch((A, "io.example/search", tools(search="New."), "2026-12-01T04:00:00Z"))
    assert _run(history, "--verify", str(out))[0] == 0
    doc = json.loads(first)
    doc["servers"]["changed"] = 2
    out.write_text(json.dumps(doc), encoding="utf-8")
    code, text, _ = _run(history, "--verify", str(out))
    assert code == 1 and "/servers/changed" in text


def test_usage_errors_exit_2(history: LogBuilder, tmp_path: Path) -> None:
    assert _run(history)[0] == 2
    assert _run(history, "--month", "2026-13")[0] == 2
    assert _run(history, "--since", str(tmp_path / "missing"))[0] == 2
    assert _run(history, "--month", "2026-11", "--atom")[0] == 2
    assert _run(history, "--month", "2026-11", "--show-text")[0] == 2
    bad = tmp_path / "bad.json"
    bad.write_text("[1]", encoding="utf-8")
    assert _run(history, "--verify", str(bad))[0] == 2


def test_atom_with_show_text_stays_well_formed_xml(tmp_path: Path) -> None:
    log = LogBuilder(tmp_path / "log")
    name = "odd\uffff\ufffe<&>\u202ename"
    log.batch(("eeeeeeeeeeeeeeee", name, tools(t="T."), "2026-11-01T00:00:00Z"))
    log.batch(("eeeeeeeeeeeeeeee", name, tools(t="U."), "2026-11-02T00:00:00Z"))
    code, out, _ = _run(log, "--since", "31d", "--atom", "--show-text")
    assert code == 0
    titles = [
        e.findtext("{http://www.w3.org/2005/Atom}title") or ""
        for e in ET.fromstring(out).iter("{http://www.w3.org/2005/Atom}entry")
    ]
    assert titles[1].startswith("odd\\u{ffff}\\u{fffe}<&>\\u{202e}name: changed")
