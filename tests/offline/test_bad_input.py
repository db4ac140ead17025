"""Every error path of ``pin``, ``check`` and ``hash``: exit 2, exactly one
``toolpin: ...`` line (plus optional advice) on stderr, nothing on stdout, no traceback,
and never text from the server in the message."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from offline_support import MTPC, PIN_ARGS, Run, run_inprocess, run_process

EXAMPLE = MTPC / "examples" / "tools-list.json"
SECRET = "IGNORE-PREVIOUS-INSTRUCTIONS"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLPIN_HOME", str(tmp_path / "home"))
    shutil.copyfile(EXAMPLE, tmp_path / "good.json")
    (tmp_path / "dir").mkdir()
    assert (
        run_inprocess(
            ["pin", "--listing", "good.json", "--lock", "good.lock", *PIN_ARGS], tmp_path
        ).exit
        == 0
    )
    return tmp_path


def failure(run: Run, fragment: str) -> None:
    line = run.assert_clean_failure()
    assert fragment in line, line
    assert run.stdout == ""
    assert SECRET not in run.stderr


LISTINGS: dict[str, tuple[bytes, str]] = {
    "invalid-json": (b'{"tools": [', "is not valid JSON"),
    "empty-file": (b"", "is not valid JSON"),
    "invalid-utf8": (b'{"tools": [{"name": "\xff"}]}', "not valid UTF-8"),
    "utf16": ('{"tools": []}'.encode("utf-16"), "not valid UTF-8"),
    "bom-twice": (b"\xef\xbb\xbf\xef\xbb\xbf[]", "is not valid JSON"),
    "lone-surrogate": (b'[{"name": "a\\udc00"}]', "unpaired surrogate"),
    "duplicate-member": (
        f'[{{"name": "a", "description": "{SECRET}", "description": "x"}}]'.encode(),
        "repeated",
    ),
    "nan": (b'[{"name": "a", "inputSchema": {"default": NaN}}]', "NaN is not JSON"),
    "huge-number": (b'[{"name": "a", "inputSchema": {"default": -1e999}}]', "too large"),
    "deep": (b'[{"name": "a", "inputSchema": ' + b"[" * 3000 + b"]" * 3000 + b"}]", "nested"),
    "not-a-listing": (b'"tools"', "listing must be a JSON object or a list of tools"),
    "no-tools": (b'{"result": {"prompts": []}}', "no tools array"),
    "tools-not-array": (b'{"tools": 1}', "tools must be a JSON array"),
    "tool-not-object": (b'{"tools": [1]}', "each tool must be a JSON object"),
    "no-name": (f'[{{"description": "{SECRET}"}}]'.encode(), "non-empty string name"),
    "duplicate-names": (
        f'[{{"name": "{SECRET}"}}, {{"name": "{SECRET}"}}]'.encode(),
        "more than once",
    ),
    "bad-description": (b'[{"name": "a", "description": 5}]', "description must be a string"),
    "bad-schema": (b'[{"name": "a", "inputSchema": "x"}]', "inputSchema must be a JSON object"),
    "bad-identity": (b'{"serverInfo": [], "tools": []}', "serverInfo must be a JSON object"),
    "protocol-only": (b'{"protocolVersion": "1", "tools": []}', "without serverInfo"),
    "bad-prompts": (b'{"tools": [], "prompts": [{"title": "x"}]}', "needs a string name"),
    "bad-instructions": (
        b'{"tools": [], "initialize": {"serverInfo": {"name": "a", "version": "1"}, '
        b'"instructions": 5}}',
        "instructions must be a string",
    ),
}


@pytest.mark.parametrize("name", list(LISTINGS))
@pytest.mark.parametrize("command", ["pin", "check"])
def test_bad_listing(work: Path, name: str, command: str) -> None:
    data, fragment = LISTINGS[name]
    (work / "bad.json").write_bytes(data)
    lock = "new.lock" if command == "pin" else "good.lock"
    before = (work / "good.lock").read_bytes()
    run = run_inprocess([command, "--listing", "bad.json", "--lock", lock], work)
    failure(run, fragment)
    assert not (work / "new.lock").exists()
    assert (work / "good.lock").read_bytes() == before


@pytest.mark.parametrize(
    ("listing", "fragment"),
    [("missing.json", "cannot read missing.json: no such file"), ("dir", "it is a directory")],
)
@pytest.mark.parametrize("command", ["pin", "check"])
def test_unreadable_listing(work: Path, listing: str, fragment: str, command: str) -> None:
    failure(run_inprocess([command, "--listing", listing, "--lock", "good.lock"], work), fragment)


def test_listing_errors_come_before_lock_errors(work: Path) -> None:
    (work / "bad.json").write_bytes(b"{")
    failure(
        run_inprocess(["check", "--listing", "bad.json", "--lock", "missing.lock"], work),
        "bad.json",
    )


@pytest.mark.parametrize(
    ("flag", "value"), [("--source", "a\nb"), ("--pinned-at", "x\ty"), ("--source", "\x1b[2J")]
)
def test_bad_labels(work: Path, flag: str, value: str) -> None:
    run = run_inprocess(["pin", "--listing", "good.json", "--lock", "new.lock", flag, value], work)
    failure(run, f"{flag} must be a single-line label")
    assert not (work / "new.lock").exists()


def test_lock_must_not_be_the_listing(work: Path) -> None:
    before = (work / "good.json").read_bytes()
    run = run_inprocess(["pin", "--listing", "good.json", "--lock", "./good.json"], work)
    failure(run, "--lock must not be the listing file")
    assert (work / "good.json").read_bytes() == before


def test_lock_is_a_directory(work: Path) -> None:
    failure(run_inprocess(["pin", "--listing", "good.json", "--lock", "dir"], work), "directory")
    failure(run_inprocess(["check", "--listing", "good.json", "--lock", "dir"], work), "directory")


def _toolpin_lock(work: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((work / "good.lock").read_text())
    return doc


def _lock_cases(work: Path) -> dict[str, tuple[Any, str]]:
    doc = _toolpin_lock(work)
    entry = doc["servers"]["default"]

    def edited(**changes: Any) -> dict[str, Any]:
        new = json.loads(json.dumps(doc))
        new["servers"]["default"].update(changes)
        return new

    items = entry["tools"]["items"]
    return {
        "missing": (None, "cannot read missing.lock: no such file"),
        "not-json": (b"{", "is not valid JSON"),
        "not-utf8": (b'{"toolpinLock": 1, "x": "\xff"}', "not valid UTF-8"),
        "array": ([], "is not a tool pin lockfile"),
        "other-json": ({"hello": 1}, "is not a tool pin lockfile"),
        "version-2": ({**doc, "toolpinLock": 2}, "toolpin lockfile version 2"),
        "version-string": ({**doc, "toolpinLock": "1"}, "lockfile version '1'"),
        "version-true": ({**doc, "toolpinLock": True}, "lockfile version True"),
        "no-servers": ({"toolpinLock": 1}, "has no servers object"),
        "no-entries": ({"toolpinLock": 1, "servers": {}}, "holds no servers"),
        "entry-not-object": ({"toolpinLock": 1, "servers": {"default": 1}}, "not an object"),
        "tools-not-object": (edited(tools=[]), "tools must be an object with an items array"),
        "item-incomplete": (edited(tools={**entry["tools"], "items": [{}]}), "is incomplete"),
        "item-key-mismatch": (
            edited(tools={**entry["tools"], "items": [{**items[0], "name": SECRET}]}),
            "does not match its definition's name",
        ),
        "item-hash": (
            edited(tools={**entry["tools"], "items": [{**items[0], "hash": "0" * 64}, items[1]]}),
            "does not match its hash",
        ),
        "duplicate-items": (
            edited(tools={**entry["tools"], "items": [items[0], items[0]]}),
            "more than once",
        ),
        "set-hash": (
            edited(tools={**entry["tools"], "setHash": "0" * 64}),
            "does not match its setHash",
        ),
        "surface-hash": (edited(surfaceHash="0" * 64), "does not match its surfaceHash"),
        "instructions": (
            edited(instructions={"hash": "0" * 64, "text": SECRET}),
            "instructions do not match their hash",
        ),
        "instructions-type": (edited(instructions={"hash": None, "text": 5}), "instructions.text"),
        "server-identity": (edited(server={"name": "", "version": "1"}), "server name must be"),
        "source-type": (edited(source=5), "source must be a string"),
        "definition-has-nan": (
            b'{"toolpinLock": 1, "servers": {"default": {"tools": {"items": [{"name": "a", '
            b'"hash": "x", "definition": {"name": "a", "n": NaN}}]}}}}',
            "NaN is not JSON",
        ),
        # mcp-tool-pin-check locks
        "legacy-version": (
            {"lockfile_version": 2, "tools": []},
            "is not a version-1 tool pin lockfile",
        ),
        "legacy-entry": ({"lockfile_version": 1, "tools": [1]}, "has a non-object tool entry"),
        "legacy-incomplete": (
            {"lockfile_version": 1, "tools": [{"name": "a"}]},
            "incomplete tool entry",
        ),
        "legacy-hash": (
            {
                "lockfile_version": 1,
                "tools": [{"name": "a", "sha256": "0", "definition": {"name": "a"}}],
            },
            "hash mismatch for tool entry 1",
        ),
        "legacy-server": (
            {"lockfile_version": 1, "tools": [], "server": None},
            "server identity must be",
        ),
    }


def test_bad_locks(work: Path) -> None:
    cases = _lock_cases(work)
    for name, (content, fragment) in cases.items():
        lock = work / "missing.lock"
        if content is not None:
            data = content if isinstance(content, bytes) else json.dumps(content).encode()
            lock.write_bytes(data)
        for extra in ([], ["--json"]):
            run = run_inprocess(
                ["check", "--listing", "good.json", "--lock", lock.name, *extra], work
            )
            try:
                failure(run, fragment)
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}") from None
        if content is not None:
            assert lock.read_bytes() == data, name
        lock.unlink(missing_ok=True)


def test_pin_over_a_broken_toolpin_lock_refuses(work: Path) -> None:
    doc = _toolpin_lock(work)
    doc["servers"]["default"]["surfaceHash"] = "0" * 64
    (work / "broken.lock").write_text(json.dumps(doc))
    run = run_inprocess(["pin", "--listing", "good.json", "--lock", "broken.lock"], work)
    failure(run, "does not match its surfaceHash")


def test_sarif_output_that_cannot_be_written(work: Path) -> None:
    run = run_inprocess(
        ["check", "--listing", "good.json", "--lock", "good.lock", "--sarif", "dir"], work
    )
    failure(run, "cannot write dir")


# --------------------------------------------------------------------------------- hash


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot read missing.json"),
        (b"{", "has no canonical form: not valid JSON"),
        (b'{"a": 1, "a": 2}', "has no canonical form: a member name is repeated"),
        (b"[NaN]", "has no canonical form: NaN"),
        (b"\xff", "has no canonical form: not valid UTF-8"),
        (b"[1e999]", "has no canonical form"),
        (b"[" * 200 + b"]" * 200, "nested more than"),
        (b'"just a string"', "neither a listing nor a definition"),
        (b"42", "neither a listing nor a definition"),
        (b'[{"name": 7}]', "no string name"),
        (b'{"tools": [{"title": "x"}]}', "no string name"),
        (b'{"prompts": [{"title": "x"}]}', "no string name"),
        (b'{"resources": [{"name": "x"}]}', "no string uri"),
    ],
)
def test_hash_errors(work: Path, content: bytes | None, fragment: str) -> None:
    if content is not None:
        (work / "missing.json").write_bytes(content)
    failure(run_inprocess(["hash", "missing.json"], work), fragment)
    failure(run_inprocess(["hash", "--json", "missing.json"], work), fragment)


def test_hash_page_that_is_not_a_listing(work: Path) -> None:
    (work / "one.json").write_text('{"name": "a"}')
    failure(run_inprocess(["hash", "good.json", "one.json"], work), "is not a page of a listing")


# -------------------------------------------------------------------------------- usage


@pytest.mark.parametrize(
    "argv",
    [  # a bare `toolpin` prints its help and exits 0 (tests/test_cli_help.py)
        ["pin"],
        ["pin", "--listing", "good.json"],
        ["check", "--lock", "good.lock"],
        ["check", "--listing", "good.json", "--lock", "good.lock", "--source", "x"],
        ["check", "--listing", "good.json", "--lock", "good.lock", "--frobnicate"],
        ["hash"],
        ["no-such-command"],
    ],
)
def test_usage_errors(work: Path, argv: list[str]) -> None:
    run = run_inprocess(argv, work)
    assert run.exit == 2, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr
    assert run.stderr.strip()


def test_errors_in_a_real_process(work: Path) -> None:
    """The in-process runner and a real process agree (exit code, one line, no traceback)."""
    (work / "bad.json").write_bytes(LISTINGS["deep"][0])
    for argv in (
        ["pin", "--listing", "bad.json", "--lock", "x.lock"],
        ["check", "--listing", "good.json", "--lock", "missing.lock"],
        ["hash", "bad.json"],
    ):
        proc = run_process(argv, work, home=work / "home")
        inproc = run_inprocess(argv, work)
        proc.assert_clean_failure()
        assert (proc.exit, proc.stderr) == (inproc.exit, inproc.stderr)
    usage = run_process(["check", "--listing", "good.json"], work, home=work / "home")
    assert usage.exit == 2 and "Traceback" not in usage.stderr and "--lock" in usage.stderr
