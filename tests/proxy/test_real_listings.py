"""The corpus of real ``tools/list`` answers (``tests/data/real-listings``) through the
proxy and the offline commands, in every encoder.

For each encoder (:data:`tests.proxy.codecs.ENCODERS`) scripted servers
(``tests/servers/scripted.py``, their ``tools/list`` answers written in that encoder's
bytes) serve the corpus, each server a group of listings that share no tool name (three
groups, not 138 servers): the first ``toolpin run`` pins, the second finds it unchanged,
and the client receives what the server sent (member order included) and each listing
value for value. ``toolpin hash`` of the same bytes gives the proxy's pinned hashes;
every listing file in the encoder's bytes hashes as captured, and a group's files, as
the pages of one listing, are pinned by ``toolpin pin`` and found unchanged by ``toolpin
check`` (in this process, through the CLI's own entry point).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.proxy import codecs as codec_module
from tests.proxy.harness import Proxy, Scripted

CORPUS = Path(__file__).resolve().parents[1] / "data" / "real-listings"
LISTINGS = sorted(CORPUS.glob("*.json"))


def _load() -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in LISTINGS}


def _identical(a: Any, b: Any) -> bool:
    """Equal as values and in member order."""
    return json.dumps(a) == json.dumps(b)


def _inprocess(argv: Sequence[str], cwd: Path, home: Path | None = None) -> tuple[int, str, str]:
    """``toolpin ARGV`` through the CLI's entry point in this process (with ``home`` as
    its ``TOOLPIN_HOME``)."""
    from toolpin.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    old = os.getcwd()
    old_home = os.environ.get("TOOLPIN_HOME")
    if home is not None:
        os.environ["TOOLPIN_HOME"] = str(home)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(argv))
            except SystemExit as exc:
                code = exc.code
    finally:
        os.chdir(old)
        if old_home is None:
            os.environ.pop("TOOLPIN_HOME", None)
        else:
            os.environ["TOOLPIN_HOME"] = old_home
    assert isinstance(code, int) or code is None, code
    return code or 0, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def corpus() -> dict[str, dict[str, Any]]:
    listings = _load()
    for name, listing in listings.items():
        tools = [t["name"] for t in listing["tools"]]
        assert len(tools) == len(set(tools)), f"{name} repeats a tool name"
    return listings


def _batches(corpus: dict[str, dict[str, Any]]) -> list[list[str]]:
    """The corpus in groups, first fit in file order, within which no two listings share
    a tool name (the github server of 2025 and GitLab's share several), so that a group
    is one server's listing."""
    groups: list[tuple[list[str], set[str]]] = []
    for name, listing in corpus.items():
        tools = {t["name"] for t in listing["tools"]}
        for members, seen in groups:
            if not tools & seen:
                members.append(name)
                seen |= tools
                break
        else:
            groups.append(([name], tools))
    return [members for members, _ in groups]


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


def _refused_by_classifier(encoded: dict[str, bytes]) -> list[str]:
    """The listings whose encoded answer the classifier does not take as strict (names
    the culprits when the proxy refuses the whole batch)."""
    from toolpin.proxy.classify import Unclassified, classify

    bad = []
    for name, data in encoded.items():
        line = b'{"jsonrpc":"2.0","id":1,"result":' + data.rstrip(b"\r") + b"}\n"
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


@pytest.mark.parametrize("encoder", sorted(codec_module.ENCODERS))
def test_corpus_through_the_proxy_and_the_offline_commands(
    encoder: str,
    corpus: dict[str, dict[str, Any]],
    captured_hashes: dict[str, Any],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # Go's encoder needs Go (the fixture skips or fails without it); the others do not.
    codecs: ModuleType = request.getfixturevalue("codecs") if encoder == "go" else codec_module
    batches = _batches(corpus)
    assert sum(map(len, batches)) == len(corpus)
    groups = [
        _Group(codecs, encoder, {n: corpus[n] for n in names}, tmp_path / str(index))
        for index, names in enumerate(batches)
    ]
    # The groups' servers are independent: their sessions run side by side.
    with concurrent.futures.ThreadPoolExecutor(len(groups)) as pool:
        sessions = list(pool.map(lambda g: g.sessions(), groups))
    for group, (first, second) in zip(groups, sessions, strict=True):
        group.verify(first, second, captured_hashes)


class _Group:
    """One group of listings, as one server's listing in ``encoder``'s bytes."""

    def __init__(
        self, codecs: ModuleType, encoder: str, corpus: dict[str, dict[str, Any]], tmp_path: Path
    ) -> None:
        self.codecs, self.encoder, self.corpus, self.tmp_path = codecs, encoder, corpus, tmp_path
        self.home = tmp_path / "toolpin-home"
        self.encode = codecs.ENCODERS[encoder]
        self.batch = {"tools": [t for listing in corpus.values() for t in listing["tools"]]}
        self.line = self.encode({"jsonrpc": "2.0", "id": codecs.ID_SENTINEL, "result": self.batch})
        self.encoded = {name: self.encode(listing) for name, listing in corpus.items()}
        for name, data in self.encoded.items():
            assert codecs.same(codecs.python_read(data), corpus[name]), (encoder, name)
        self.server = Scripted(
            tmp_path / "srv",
            tools=self.batch["tools"],
            raw={"tools/list": [self.line.decode("utf-8")]},
        )

    def sessions(self) -> tuple[tuple[Any, int, str], tuple[Any, int, str]]:
        """``toolpin run`` twice (nothing in this process's global state is touched)."""
        return _session(self.home, self.server.argv), _session(self.home, self.server.argv)

    def verify(
        self,
        first_session: tuple[Any, int, str],
        second_session: tuple[Any, int, str],
        captured_hashes: dict[str, Any],
    ) -> None:
        """The sessions' answers, then ``hash``, ``pin`` and ``check`` in this process."""
        codecs, encoder, corpus, home = self.codecs, self.encoder, self.corpus, self.home
        tmp_path, encoded, names = self.tmp_path, self.encoded, list(self.corpus)
        first, code, stderr = first_session
        if "result" not in first:
            culprits = _refused_by_classifier(encoded)
            pytest.fail(
                f"{encoder}: the proxy refused the corpus ({first.get('error')}); "
                f"listings the classifier does not take as strict: {culprits}"
            )
        assert code == 0 and "pinned" in stderr, stderr
        second, code, stderr = second_session
        assert code == 0 and "pinned" not in stderr, stderr
        assert _audit_events(home) == ["pin"]
        sent = codecs.python_read(self.line)["result"]
        for reply in (first, second):
            # What the server sent, member order included; listing by listing, the corpus.
            assert _identical(reply["result"], sent), encoder
            received = reply["result"]["tools"]
            start = 0
            for name in names:
                count = len(corpus[name]["tools"])
                got = {"tools": received[start : start + count]}
                assert codecs.same(got, corpus[name]), (encoder, name)
                start += count
            assert start == len(received)

        # The proxy's pins are what `toolpin hash` says of the same bytes.
        rows = json.loads(_inprocess(["list", "--json"], tmp_path, home)[1])
        assert len(rows) == 1
        shown = json.loads(_inprocess(["show", rows[0]["id"], "--json"], tmp_path, home)[1])
        pinned = {item["key"]: item["hash"] for item in shown["tools"]["items"]}
        batch_file = tmp_path / "batch.json"
        batch_file.write_bytes(self.encode(self.batch))
        code, stdout, stderr = _inprocess(["hash", "--json", str(batch_file)], tmp_path)
        assert code == 0, stderr
        hashed = json.loads(stdout)["tools"]
        assert shown["tools"]["set_hash"] == hashed["setHash"]
        assert pinned == {item["name"]: item["hash"] for item in hashed["items"]}

        # Each listing in this encoder's bytes hashes as captured; all of them, as the pages
        # of one listing, are pinned and then checked unchanged.
        work = tmp_path / "files"
        work.mkdir()
        pages: list[str] = []
        for name, data in encoded.items():
            path = work / name
            path.write_bytes(data)
            pages += ["--listing", str(path)]
            code, stdout, stderr = _inprocess(["hash", "--json", str(path)], work)
            assert code == 0, (name, stderr)
            assert json.loads(stdout)["tools"] == captured_hashes[name], name
            for item in captured_hashes[name]["items"]:
                assert pinned[item["name"]] == item["hash"], (name, item["name"])
        lock = work / "corpus.lock"
        code, stdout, stderr = _inprocess(["pin", *pages, "--lock", str(lock), "--json"], work)
        assert code == 0, stderr
        assert json.loads(stdout)["set_hash"] == hashed["setHash"]
        code, stdout, stderr = _inprocess(
            ["check", *pages, "--lock", str(lock), "--json", "--no-cache"], work
        )
        assert code == 0, (stdout, stderr)
        result = json.loads(stdout)
        assert result["ok"] is True
        assert sorted(result["unchanged"]) == sorted(pinned)
        assert result["added"] == result["removed"] == result["changed"] == []
