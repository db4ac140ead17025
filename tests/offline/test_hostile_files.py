"""Every command that takes a file, fed hostile files: exit 2 with one ``toolpin:`` line
(plus an optional advice line), never "internal error", never a hang, nothing written.

The bounded reader (``toolpin.util.fs.read_input``) refuses directories and devices,
reads FIFOs and pipes with a cap and a timeout (``TOOLPIN_PIPE_TIMEOUT``, shortened here),
and every parser refuses the rest with a one-line reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from offline_support import SRC, Run, run_inprocess

LISTING = b'{"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}'
CONFIG = b'{"mcpServers": {}}'


def _json_doc(kind: str) -> bytes:
    """A hostile document shaped like the file it stands for (listing, lock or config)."""
    digits = "1" * 5000
    return {
        "bigint": f'{{"mcpServers": {{"a": {{"command": {digits}}}}}, "tools": [{digits}]}}',
        "deep": "[" * 100_000 + "]" * 100_000,
        "surrogate": (
            '{"mcpServers": {"a\\ud800": {"command": "x"}}, "tools": [{"name": "\\ud800"}]}'
        ),
        "nan": '{"mcpServers": {"a": {"command": "x", "n": NaN}}, "tools": [NaN]}',
        "dupes": '{"tools": [], "tools": [], "mcpServers": {}, "mcpServers": {}}',
    }[kind].encode()


HOSTILE = ["empty", "dev-zero", "directory", "fifo", "bigint", "deep", "bad-utf8",
           "surrogate", "nan", "dupes"]  # fmt: skip


def _make(kind: str, where: Path) -> str:
    path = where / f"hostile-{kind}"
    if kind == "dev-zero":
        return "/dev/zero"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "bad-utf8":
        path.write_bytes(b'{"tools": [{"name": "\xff\xfe"}], "mcpServers": {"\xc3": {}}}')
    else:
        path.write_bytes(_json_doc(kind))
    return str(path)


def _tree(root: Path) -> dict[str, str]:
    """Every regular file under ``root`` with the digest of its bytes."""
    out = {}
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "toolpin-home"]  # toolpin's own lock files
        for name in names:
            path = Path(dirpath) / name
            if path.is_file():
                out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# (name, argv builder given the hostile path and the work dir)
Argv = Callable[[str, Path], list[str]]
COMMANDS: list[tuple[str, Argv]] = [
    ("pin --listing", lambda f, d: ["pin", "--listing", f, "--lock", str(d / "new.lock")]),
    ("pin --lock", lambda f, d: ["pin", "--listing", str(d / "listing.json"), "--lock", f]),
    ("check --listing", lambda f, d: ["check", "--listing", f, "--lock", str(d / "good.lock")]),
    ("check --lock", lambda f, d: ["check", "--listing", str(d / "listing.json"), "--lock", f]),
    ("hash", lambda f, d: ["hash", f]),
    ("lock --config", lambda f, d: ["lock", "--config", f, "--out", str(d / "team.lock")]),
    (
        "lock --check --out",
        lambda f, d: ["lock", "--config", str(d / "cfg.json"), "--out", f, "--check"],
    ),
    ("wrap --config", lambda f, d: ["wrap", "--config", f, "--yes"]),
    ("unwrap --config", lambda f, d: ["unwrap", "--config", f, "--yes"]),
    (
        "policy --config",
        lambda f, d: [
            "policy",
            "claude-code",
            "--config",
            f,
            "--lock",
            "/abs/toolpin.lock",
            "--out",
            str(d / "policy"),
        ],
    ),
    ("log verify --vkey", lambda f, d: ["log", "verify", "--log", str(d / "log"), "--vkey", f]),
    (
        "log verify-proof --proof",
        lambda f, d: [
            "log",
            "verify-proof",
            "--vkey",
            f"{d / 'vkey'}",
            "--proof",
            f,
            "--entry-file",
            str(d / "cfg.json"),
        ],
    ),
    (
        "log crawl --servers",
        lambda f, d: [
            "log",
            "crawl",
            "--log",
            str(d / "clog"),
            "--key",
            str(d / "key"),
            "--servers",
            f,
            "--source",
            "config",
            "--json",
        ],
    ),
]

# Where a hostile file is a legitimate input, or the command's contract says otherwise.
CONTENT = {"empty", "bigint", "deep", "bad-utf8", "surrogate", "nan", "dupes"}
ACCEPTED = {
    # `hash` computes the spec's hash of any JSON text, lone surrogates included (vectors).
    ("hash", "surrogate"),
    # A config whose only server has a numeric command: nothing to wrap or lock.
    ("wrap --config", "bigint"),
    ("unwrap --config", "bigint"),
    ("lock --config", "bigint"),
    # verify-proof: a proof that does not parse is a bad proof (exit 1, "FAILED: ...").
    *(("log verify-proof --proof", kind) for kind in CONTENT),
    # crawl: an unusable source is recorded in the run summary (sources.config.error).
    *(("log crawl --servers", kind) for kind in CONTENT),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("hostile")
    (work / "listing.json").write_bytes(LISTING)
    (work / "cfg.json").write_bytes(CONFIG)
    home = work / "home"
    env = {**os.environ, "PYTHONPATH": str(SRC), "TOOLPIN_HOME": str(home)}
    argv = [sys.executable, "-m", "toolpin"]
    subprocess.run(
        [*argv, "pin", "--listing", "listing.json", "--lock", "good.lock"],
        cwd=work, env=env, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    done = subprocess.run(
        [*argv, "log", "keygen", "--out", "key", "--origin", "example.test/log"],
        cwd=work, env=env, capture_output=True, timeout=60, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (work / "vkey").write_text(done.stdout.strip().splitlines()[-1] + "\n")
    return work


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize(("name", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_hostile_file(
    name: str,
    argv: Argv,
    kind: str,
    workdir: Path,
    tmp_path: Path,
    toolpin_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLPIN_PIPE_TIMEOUT", "0.2")
    monkeypatch.delenv("TOOLPIN_LOG_KEY", raising=False)
    hostile = _make(kind, tmp_path)
    before, home_before = _tree(workdir), _tree(tmp_path)
    result: Run = run_inprocess(argv(hostile, workdir), tmp_path)
    assert "internal error" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr
    if (name, kind) in ACCEPTED:
        assert result.exit in (0, 1, 2), result
        if name == "log crawl --servers":
            assert json.loads(result.stdout)["sources"]["config"]["error"]
            return
    elif name in ("wrap --config", "unwrap --config") and kind not in (
        "dev-zero",
        "directory",
        "fifo",
    ):
        # wrap reports each file it could not use in its plan (stdout) and exits 2.
        assert result.exit == 2, result
    else:
        result.assert_clean_failure(2)
    assert _tree(workdir) == before, "a file was written"
    assert _tree(tmp_path) == home_before, "a file was written"


def test_a_pipe_is_read_with_the_same_cap(tmp_path: Path) -> None:
    """``--listing <(cmd)``: a pipe that delivers in pieces is read to the end."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "TOOLPIN_HOME": str(tmp_path / "home")}
    script = (
        "import sys, time; d = sys.argv[1].encode(); "
        "sys.stdout.buffer.write(d[:10]); sys.stdout.flush(); time.sleep(0.3); "
        "sys.stdout.buffer.write(d[10:])"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", script, LISTING.decode()], stdout=subprocess.PIPE
    )
    assert writer.stdout is not None
    fd = writer.stdout.fileno()
    done = subprocess.run(
        [sys.executable, "-m", "toolpin", "hash", "--json", f"/dev/fd/{fd}"],
        env=env, pass_fds=(fd,), capture_output=True, timeout=60,
    )  # fmt: skip
    writer.wait(timeout=10)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tools"]["items"][0]["name"] == "a"


def test_stdin_dash_is_read(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC), "TOOLPIN_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "toolpin", "hash", "-"],
        env=env, input=LISTING, capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_the_cap_is_cap_plus_one(tmp_path: Path) -> None:
    from toolpin.errors import InputError
    from toolpin.util.fs import read_input

    path = tmp_path / "f"
    path.write_bytes(b"x" * 101)
    assert read_input(path, cap=101) == b"x" * 101
    with pytest.raises(InputError, match="larger than 100 bytes"):
        read_input(path, cap=100)


def test_wrap_keeps_a_5000_digit_integer_byte_for_byte(tmp_path: Path, toolpin_home: Path) -> None:
    from toolpin.clients import jsonc

    digits = "9" * 5000
    text = (
        '{\n  "mcpServers": {\n    "notes": {\n      "command": "node",\n'
        f'      "args": ["server.js"],\n      "timeout": {digits},\n'
        f'      "limits": [{digits}.5e99999, -{digits}]\n    }}\n  }}\n}}\n'
    )
    root = jsonc.parse(text)
    node = jsonc.find(root, ("mcpServers", "notes", "timeout"))
    assert node is not None and node.value == jsonc.RawNumber(digits)
    config = tmp_path / "mcp.json"
    config.write_text(text, encoding="utf-8")
    result = run_inprocess(["wrap", "--config", str(config), "--yes"], tmp_path)
    assert result.exit == 0, result
    after = config.read_text(encoding="utf-8")
    assert after != text  # wrapped
    assert f'"timeout": {digits},' in after
    assert f"[{digits}.5e99999, -{digits}]" in after
