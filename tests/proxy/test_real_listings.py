"""The corpus of real ``tools/list`` answers (``tests/data/real-listings``) through the
proxy and the offline commands, in every encoder.

For each encoder one scripted server (``tests/servers/scripted.py``, its ``tools/list``
answers written in that encoder's bytes) serves every listing of the corpus at once (no
two listings share a tool name; the test checks it): the first ``toolpin run`` pins, the
second finds it unchanged, and the client receives what the server sent (member order
included), each listing value for value (number types included). ``toolpin hash`` of
the same bytes gives the proxy's pinned hashes, and every listing file, in the encoder's
bytes, is pinned, checked and hashed by ``toolpin pin``/``check``/``hash`` (in this
process, the CLI's own entry point) with the hashes of the listing as captured.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
import simplejson

from tests.proxy.harness import SCRIPTED, Proxy, Scripted, run_cli

CORPUS = Path(__file__).resolve().parents[1] / "data" / "real-listings"
LISTINGS = sorted(CORPUS.glob("*.json"))


def _node_stringify(values: Sequence[Any]) -> list[str]:
    """``JSON.stringify`` of each value, in one Node process."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH; Node 20 is needed for these tests")
    script = (
        "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{"
        "for(const v of JSON.parse(s))process.stdout.write(JSON.stringify(v)+'\\n')})"
    )
    done = subprocess.run(
        [node, "-e", script],
        input=json.dumps(list(values)).encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    return done.stdout.decode("utf-8").splitlines()


def _each(encode: Callable[[Any], str]) -> Callable[[Sequence[Any]], list[str]]:
    return lambda values: [encode(v) for v in values]


ENCODERS: dict[str, Callable[[Sequence[Any]], list[str]]] = {
    "python-json-ascii": _each(json.dumps),
    "python-json-utf8": _each(lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))),
    "orjson": _each(lambda v: orjson.dumps(v).decode("utf-8")),
    "simplejson": _each(simplejson.dumps),
    "node-json-stringify": _node_stringify,
}

# Serves the tools/list answers as the encoder wrote them; everything else as scripted.py.
ENCODED_SERVER = """\
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("scripted", {scripted!r})
scripted = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scripted)
ENCODED = scripted.CONFIG["encoded_tools_list"]
plain = scripted.send
def send(message):
    result = message.get("result")
    if isinstance(result, dict) and "tools" in result:
        head = '{{"jsonrpc":"2.0","id":' + json.dumps(message["id"]) + ',"result":'
        scripted.send_raw((head + ENCODED + "}}").encode("utf-8", "surrogatepass") + b"\\n")
    else:
        plain(message)
scripted.send = send
scripted.main()
"""


def _load() -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in LISTINGS}


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, number types included (1 is not 1.0)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _identical(a: Any, b: Any) -> bool:
    """Equal as values and in member order."""
    return json.dumps(a) == json.dumps(b)


def _inprocess(argv: Sequence[str], cwd: Path) -> tuple[int, str, str]:
    """``toolpin ARGV`` through the CLI's entry point in this process."""
    from toolpin.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(argv))
            except SystemExit as exc:
                code = exc.code
    finally:
        os.chdir(old)
    assert isinstance(code, int) or code is None, code
    return code or 0, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def corpus() -> dict[str, dict[str, Any]]:
    listings = _load()
    names = [t["name"] for listing in listings.values() for t in listing["tools"]]
    assert len(names) == len(set(names)), "two listings share a tool name"
    return listings


@pytest.fixture(scope="module")
def captured_hashes(corpus: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``toolpin hash --json`` of every corpus file as stored (the reference)."""
    out = {}
    for name in corpus:
        code, stdout, stderr = _inprocess(["hash", "--json", str(CORPUS / name)], CORPUS)
        assert code == 0, (name, stderr)
        out[name] = json.loads(stdout)["tools"]
    return out


def test_corpus_is_large_and_sourced(corpus: dict[str, dict[str, Any]]) -> None:
    assert len(corpus) >= 30
    sources = {
        line.split()[0]: line
        for line in (CORPUS / "SOURCES").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    }
    assert set(sources) == set(corpus)
    for name, listing in corpus.items():
        assert listing["tools"], name
        assert "captured=" in sources[name]
        assert "@" in sources[name] or "==" in sources[name], sources[name]


def _refused_by_classifier(encoded: dict[str, str]) -> list[str]:
    """The listings whose encoded answer the classifier does not take as strict (names
    the culprits when the proxy refuses the whole batch)."""
    from toolpin.proxy.classify import Unclassified, classify

    bad = []
    for name, text in encoded.items():
        line = ('{"jsonrpc":"2.0","id":1,"result":' + text + "}\n").encode("utf-8", "surrogatepass")
        try:
            if not classify(line, strict=True).strict:
                bad.append(name)
        except Unclassified as exc:
            bad.append(f"{name} ({exc.reason})")
    return bad


def _session(home: Path, argv: list[str]) -> tuple[Any, int, str]:
    """One client session: the handshake and a ``tools/list``; the answer, the exit
    code and the proxy's stderr."""
    proxy = Proxy(home, argv)
    try:
        proxy.initialize()
        reply = proxy.call("tools/list")
        code = proxy.close()
    finally:
        proxy.kill()
    return reply, code, proxy.stderr


def _audit_events(home: Path) -> list[str]:
    path = home / "audit.log"
    if not path.exists():
        return []
    return [json.loads(x)["event"] for x in path.read_text().splitlines()]


@pytest.mark.parametrize("encoder", sorted(ENCODERS))
def test_corpus_through_the_proxy_and_the_offline_commands(
    encoder: str,
    corpus: dict[str, dict[str, Any]],
    captured_hashes: dict[str, Any],
    toolpin_home: Path,
    tmp_path: Path,
) -> None:
    names = list(corpus)
    batch = {"tools": [t for name in names for t in corpus[name]["tools"]]}
    texts = ENCODERS[encoder]([batch, *(corpus[name] for name in names)])
    batch_text, encoded = texts[0], dict(zip(names, texts[1:], strict=True))
    for name, text in encoded.items():
        assert _same(json.loads(text), corpus[name]), (encoder, name)

    server = Scripted(tmp_path / "srv", tools=batch["tools"], encoded_tools_list=batch_text)
    wrapper = tmp_path / "encoded_server.py"
    wrapper.write_text(ENCODED_SERVER.format(scripted=str(SCRIPTED)), encoding="utf-8")
    argv = [sys.executable, str(wrapper), str(server.path)]

    first, code, stderr = _session(toolpin_home, argv)
    if "result" not in first:
        culprits = _refused_by_classifier(encoded)
        pytest.fail(
            f"{encoder}: the proxy refused the corpus ({first.get('error')}); "
            f"listings the classifier does not take as strict: {culprits}"
        )
    assert code == 0 and "pinned" in stderr, stderr
    second, code, stderr = _session(toolpin_home, argv)
    assert code == 0 and "pinned" not in stderr, stderr
    assert _audit_events(toolpin_home) == ["pin"]
    sent = json.loads(batch_text)
    for reply in (first, second):
        # What the server sent, member order included; listing by listing, the corpus.
        received = reply["result"]["tools"]
        assert _identical(reply["result"], sent)
        start = 0
        for name in names:
            count = len(corpus[name]["tools"])
            got = {"tools": received[start : start + count]}
            assert _same(got, corpus[name]), (encoder, name)
            start += count
        assert start == len(received)

    # The proxy's pins are what `toolpin hash` says of the same bytes.
    rows = json.loads(run_cli(toolpin_home, "list", "--json").stdout)
    assert len(rows) == 1
    shown = json.loads(run_cli(toolpin_home, "show", rows[0]["id"], "--json").stdout)
    pinned = {item["key"]: item["hash"] for item in shown["tools"]["items"]}
    batch_file = tmp_path / "batch.json"
    batch_file.write_bytes(batch_text.encode("utf-8", "surrogatepass"))
    code, stdout, stderr = _inprocess(["hash", "--json", str(batch_file)], tmp_path)
    assert code == 0, stderr
    hashed = json.loads(stdout)["tools"]
    assert shown["tools"]["set_hash"] == hashed["setHash"]
    assert pinned == {item["name"]: item["hash"] for item in hashed["items"]}

    # Each listing in this encoder's bytes: pin, check unchanged, hash as captured.
    work = tmp_path / "files"
    work.mkdir()
    for name, text in encoded.items():
        path = work / name
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        code, stdout, stderr = _inprocess(["hash", "--json", str(path)], work)
        assert code == 0, (name, stderr)
        assert json.loads(stdout)["tools"] == captured_hashes[name], name
        lock = work / f"{name}.lock"
        code, stdout, stderr = _inprocess(
            ["pin", "--listing", str(path), "--lock", str(lock), "--json"], work
        )
        assert code == 0, (name, stderr)
        assert json.loads(stdout)["set_hash"] == captured_hashes[name]["setHash"], name
        code, stdout, stderr = _inprocess(
            ["check", "--listing", str(path), "--lock", str(lock), "--json", "--no-cache"], work
        )
        assert code == 0, (name, stdout, stderr)
        result = json.loads(stdout)
        assert result["ok"] is True, name
        assert sorted(result["unchanged"]) == sorted(t["name"] for t in corpus[name]["tools"])
        for item in captured_hashes[name]["items"]:
            assert pinned[item["name"]] == item["hash"], (name, item["name"])
