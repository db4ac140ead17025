"""Every ``--json`` output is valid UTF-8 JSON whose strings cannot drive a terminal:
controls, bidi, zero-width, tag and variation-selector characters and lone surrogates are
``\\uXXXX`` escapes (``toolpin.core.render.safe_json``), and the values survive."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from offline_support import run_process

from toolpin.core.canonical import normalize
from toolpin.core.drift import compare
from toolpin.core.render import has_unsafe, safe_json
from toolpin.core.snapshot import snapshot_from_export

HOSTILE_NAMES = [
    "rtl\u202eexe.txt",
    "csi\x9b31m",
    "esc\x1b[2J",
    "tag\U000e0041\U000e007f",
    "zw\u200bjoin\u2060",
    "vs\ufe0f\U000e0100",
    "bom\ufeff",
    "line\u2028sep",
    "é-ok-日本",
]
SURROGATE = "lone\ud800"


def _listing(names: list[str]) -> dict[str, Any]:
    return {
        "result": {
            "serverInfo": {"name": "srv\u202e", "version": "1\x9b"},
            "tools": [
                {"name": n, "description": f"about {n}", "inputSchema": {"type": "object"}}
                for n in names
            ],
        }
    }


def _write(path: Path, doc: Any) -> Path:
    path.write_bytes(json.dumps(doc, ensure_ascii=True).encode())
    return path


def _assert_safe(stdout_bytes: str) -> Any:
    assert not has_unsafe(stdout_bytes), [c for c in stdout_bytes if has_unsafe(c)]
    stdout_bytes.encode("utf-8")  # strict: no lone surrogate reached the output
    return json.loads(stdout_bytes)


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set(value) | {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return set()


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_safe_json_escapes_and_round_trips(ensure_ascii: bool) -> None:
    value = {name: [name, {"k": name}] for name in [*HOSTILE_NAMES, SURROGATE]}
    text = safe_json(value, ensure_ascii=ensure_ascii)
    assert not has_unsafe(text)
    text.encode("utf-8")
    assert json.loads(text) == value
    assert "日本" in text or ensure_ascii


def test_every_json_command_on_a_hostile_fixture(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pinned = _write(tmp_path / "pinned.json", _listing(HOSTILE_NAMES[:4]))
    drifted = _write(tmp_path / "drifted.json", _listing(HOSTILE_NAMES))
    surrogate = _write(tmp_path / "surrogate.json", _listing([*HOSTILE_NAMES, SURROGATE]))
    outputs: dict[str, Any] = {}

    def run(name: str, argv: list[str], code: int = 0) -> None:
        result = run_process(argv, tmp_path, home=home)
        assert result.exit == code, (name, result)
        outputs[name] = _assert_safe(result.stdout)

    run("pin", ["pin", "--json", "--listing", str(pinned), "--lock", "t.lock"])
    run("check", ["check", "--json", "--listing", str(drifted), "--lock", "t.lock"], 1)
    run("hash", ["hash", "--json", str(surrogate)])

    from toolpin.pins.store import PinStore

    store = PinStore(home)
    old = snapshot_from_export([normalize(_listing(HOSTILE_NAMES[:4]))], paged=True).snapshot
    new = snapshot_from_export([normalize(_listing(HOSTILE_NAMES))], paged=True).snapshot
    store.pin_first("0123456789abcdef", "label\u202e\x9b", old)
    store.record_drift("0123456789abcdef", new, compare(old, new))
    run("list", ["list", "--json"])
    run("show", ["show", "--json", "0123456789abcdef"])
    (tmp_path / "servers.json").write_text('{"mcpServers": {}}')
    keygen = run_process(
        ["log", "keygen", "--origin", "example.test/log", "--out", "key"], tmp_path, home=home
    )
    assert keygen.exit == 0, keygen
    vkey = keygen.stdout.strip().splitlines()[-1]
    crawl = ["log", "crawl", "--log", "log", "--key", "key", "--servers", "servers.json"]
    run("crawl", [*crawl, "--source", "config", "--json"])
    run("log verify", ["log", "verify", "--json", "--log", "log", "--vkey", vkey])

    # The hostile values are all there, escaped in the text, intact once parsed.
    assert set(HOSTILE_NAMES) <= _strings(outputs["check"])
    assert {*HOSTILE_NAMES, SURROGATE} <= _strings(outputs["hash"])
    assert "label\u202e\x9b" in _strings(outputs["list"])
    assert set(HOSTILE_NAMES[:4]) <= _strings(outputs["show"])
