"""The browser generator (site/static/install.js, run under node) and the Python one agree
byte for byte, accept and refuse the same input, and split a pasted command as shlex does."""

from __future__ import annotations

import random
import shlex
from typing import Any

from tests.install.conftest import run_js
from tests.install.test_install_links import HOSTILE_PIECES
from toolpin.clients.install_links import InstallRequest, default_name, install_links
from toolpin.core.render import visible
from toolpin.errors import InputError

PLAIN = ["npx", "-y", "@scope/pkg@1.2.3", "uvx", "mcp-server-time==0.6", "/tmp/dir", "--port"]


SAFE_PIECES = [p for p in HOSTILE_PIECES if "$" not in p and visible(p) == p]


def _word(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return rng.choice(PLAIN)
    pieces = [
        rng.choice(SAFE_PIECES if rng.random() < 0.97 else HOSTILE_PIECES)
        for _ in range(rng.randint(0, 5))
    ]
    return "".join(pieces)


def _cases(count: int) -> list[dict[str, Any]]:
    rng = random.Random(20261201)
    cases = []
    for _ in range(count):
        argv = [_word(rng) for _ in range(rng.randint(0, 6))]
        name = rng.choice(
            ["srv", "my.server", "a_b-c", "x" * 64, "bad name", "", default_name(argv)]
        )
        env = rng.choice([[], ["API_KEY"], ["A", "B_2"], ["A=1"], ["A", "A"]])
        launcher = rng.choice([["toolpin"], ["uvx", "toolpin@0.1.0"], [""]])
        cases.append({"argv": argv, "name": name, "env": env, "launcher": launcher})
    # Hand-picked edges: every quote, unicode outside the BMP, a long argument.
    cases.append(
        {"argv": ["node", 'it\'s "q" \\ é 🦆'], "name": "q", "env": [], "launcher": ["toolpin"]}
    )
    cases.append({"argv": ["node", "x" * 4096], "name": "long", "env": [], "launcher": ["toolpin"]})
    cases.append({"argv": ["node", "x" * 4097], "name": "long", "env": [], "launcher": ["toolpin"]})
    return cases  # fmt: skip


def _python(case: dict[str, Any]) -> dict[str, Any]:
    request = InstallRequest(
        tuple(case["argv"]), case["name"], tuple(case["env"]), tuple(case["launcher"])
    )
    try:
        return {"ok": install_links(request).to_json()}
    except InputError:
        return {"error": True}


def test_js_and_python_generators_agree() -> None:
    cases = _cases(400)
    js = run_js([{"op": "generate", "input": c} for c in cases])
    accepted = 0
    for case, got in zip(cases, js, strict=True):
        expected = _python(case)
        if "error" in expected:
            assert "error" in got, (case, got)
            continue
        accepted += 1
        assert got == expected, case
    assert accepted > 80  # the comparison covers real outputs, not only refusals


def test_js_default_name_agrees() -> None:
    rng = random.Random(7)
    argvs = [[_word(rng) for _ in range(rng.randint(0, 4))] for _ in range(300)]
    argvs += [["npx", "-y", "@a/b@1"], ["uvx", "x==1"], ["node", "C:\\srv\\run.js"], ["@x"]]
    js = run_js([{"op": "name", "input": a} for a in argvs])
    for argv, got in zip(argvs, js, strict=True):
        assert got == {"ok": default_name(argv)}, argv


def test_js_split_inverts_shlex_join_and_matches_shlex_split() -> None:
    rng = random.Random(11)
    argvs = [[_word(rng) for _ in range(rng.randint(1, 5))] for _ in range(200)]
    argvs = [[a for a in argv if "\ud800" not in a] for argv in argvs]
    joined = [shlex.join(a) for a in argvs]
    js = run_js([{"op": "split", "input": j} for j in joined])
    for argv, got in zip(argvs, js, strict=True):
        assert got == {"ok": argv}
    js_join = run_js([{"op": "join", "input": a} for a in argvs])
    assert [r["ok"] for r in js_join] == joined
    alphabet = ["a", " ", "'", '"', "\\", "b c", "\t", "\n", "é", '\\"', "''", '""']
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(400)]
    js = run_js([{"op": "split", "input": t} for t in texts])
    for text, got in zip(texts, js, strict=True):
        try:
            expected: dict[str, Any] = {"ok": shlex.split(text)}
        except ValueError:
            assert "error" in got, text
            continue
        assert got == expected, text
