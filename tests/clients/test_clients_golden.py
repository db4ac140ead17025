"""Golden files for every config format: wrap, wrap again, unwrap gives back the original."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from pathlib import Path

import pytest

from toolpin.clients import jsonc
from toolpin.clients.documents import open_document
from toolpin.clients.locations import ConfigLocation, Dialect
from toolpin.clients.naming import config_key
from toolpin.clients.wrap import (
    Launcher,
    WrapJournal,
    apply,
    plan_unwrap,
    plan_wrap,
    recognise_wrap,
)

GOLDEN = Path(__file__).parent.parent / "golden" / "clients"
LAUNCHER = Launcher(("/opt/toolpin/bin/toolpin",))

CASES: list[tuple[str, Dialect, dict[str, str]]] = [
    (
        "claude_desktop_config.json",
        "mcpServers",
        {"filesystem": "protect", "fetch": "protect", "local": "protect", "remote": "skip"},
    ),
    ("claude.json", "claude-code", {"everything": "protect", "db": "protect"}),
    ("vscode_mcp.json", "vscode", {"github": "protect", "remote": "skip", "time": "protect"}),
    ("cursor_mcp_crlf.json", "mcpServers", {"memory": "protect", "python": "protect"}),
    (
        "codex_config.toml",
        "codex",
        {
            "docs": "protect",
            "time zone": "protect",
            "bare": "protect",
            "remote": "skip",
            "inline": "protect",
        },
    ),
    ("opencode.json", "opencode", {"everything": "protect", "web": "skip"}),
    ("zed_settings.json", "zed", {"git": "protect", "legacy": "skip"}),
]


def _argvs(text: str, dialect: Dialect) -> dict[str, tuple[str, ...]]:
    return {e.name: e.argv for e in open_document(text, dialect).entries() if e.kind == "stdio"}


@pytest.mark.parametrize(("name", "dialect", "actions"), CASES, ids=[c[0] for c in CASES])
def test_wrap_wrap_unwrap(
    tmp_path: Path, name: str, dialect: Dialect, actions: dict[str, str]
) -> None:
    original = (GOLDEN / "input" / name).read_bytes()
    config = tmp_path / name
    config.write_bytes(original)
    home = tmp_path / "toolpin-home"
    location = ConfigLocation("test", config, dialect)

    plan = plan_wrap([location], launcher=LAUNCHER)
    assert {e.name: e.action for e in plan.files[0].entries} == actions
    written = apply(plan, home=home)
    assert [w.path for w in written] == [config.resolve()]
    assert written[0].backup.read_bytes() == original

    wrapped = config.read_bytes()
    expected = GOLDEN / "wrapped" / name
    if os.environ.get("TOOLPIN_UPDATE_GOLDEN"):
        expected.parent.mkdir(exist_ok=True)
        expected.write_bytes(wrapped)
    assert wrapped == expected.read_bytes()
    # the file is still valid for its client, and every server runs behind the proxy
    if dialect == "codex":
        tomllib.loads(wrapped.decode())
    elif dialect in ("mcpServers", "claude-code", "opencode") and name != "vscode_mcp.json":
        json.loads(wrapped)
    jsonc_or_toml = wrapped.decode()
    before = _argvs(original.decode(), dialect)
    after = _argvs(jsonc_or_toml, dialect)
    for server, action in actions.items():
        if action != "protect":
            continue
        form = recognise_wrap(after[server])
        assert form is not None and form.by == "toolpin" and form.inner_start is not None
        assert after[server][form.inner_start :] == before[server]
        assert after[server][:3] == ("/opt/toolpin/bin/toolpin", "run", "--name")
        assert after[server][4:] == before[server] and form.inner_start == 4
        # the name is the config key qualified with the client (and project, if any)
        assert after[server][3].startswith(f"{server}@test")
        assert config_key(after[server][3]) == server
    # line endings survive
    if b"\r\n" in original:
        assert wrapped.count(b"\n") == wrapped.count(b"\r\n")

    again = plan_wrap([location], launcher=LAUNCHER)
    assert again.change_count == 0 and not again.files[0].changed
    assert all(
        e.note in ("already protected",)
        for e in again.files[0].entries
        if actions.get(e.name) == "protect"
    )

    undo = plan_unwrap([location], journal=WrapJournal(home).load())
    assert sorted(e.name for e in undo.files[0].changes) == sorted(
        n for n, a in actions.items() if a == "protect"
    )
    apply(undo, home=home)
    assert config.read_bytes() == original
    assert WrapJournal(home).load() == set()
    assert len(list((home / "backups").iterdir())) == 2


def test_every_case_has_a_golden_file() -> None:
    names = {c[0] for c in CASES}
    assert names == {p.name for p in (GOLDEN / "input").iterdir()}
    assert names == {p.name for p in (GOLDEN / "wrapped").iterdir()}


def test_vscode_comments_survive_in_place() -> None:
    wrapped = (GOLDEN / "wrapped" / "vscode_mcp.json").read_text()
    for comment in (
        "// VS Code user MCP servers",
        "/* servers below */",
        "// runs in a container",
        "// newest",
    ):
        assert comment in wrapped
    assert jsonc.parse(wrapped).value["inputs"][0]["id"] == "token"  # type: ignore[index]


def test_unwrap_strips_foreign_wraps(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "a": {
                        "command": "npx",
                        "args": ["-y", "mcp-pin@0.2.3", "--name", "a", "--", "npx", "-y", "srv"],
                    },
                    "b": {
                        "command": "python3",
                        "args": ["-m", "toolpin", "run", "--", "node", "s.js"],
                    },
                    "c": {
                        "command": "uvx",
                        "args": ["toolpin@0.1.0", "run", "--name", "c", "--", "x"],
                    },
                    "d": {"command": "toolpin", "args": ["run", "--name", "d"]},
                    "e": {"command": "node", "args": ["server.js"]},
                }
            },
            indent=2,
        )
    )
    location = ConfigLocation("test", config, "auto")
    plan = plan_unwrap([location], journal=set())
    assert {e.name: e.action for e in plan.files[0].entries} == {
        "a": "unprotect",
        "b": "unprotect",
        "c": "unprotect",
        "d": "skip",
    }
    apply(plan, home=tmp_path / "home")
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["a"] == {"command": "npx", "args": ["-y", "srv"]}
    assert servers["b"] == {"command": "node", "args": ["s.js"]}
    assert servers["c"] == {"command": "x", "args": []}
    assert servers["d"] == {"command": "toolpin", "args": ["run", "--name", "d"]}

    # wrap refuses to stack on top of mcp-pin
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "a": {
                        "command": "npx",
                        "args": ["-y", "mcp-pin@0.2.3", "--", "npx", "-y", "srv"],
                    }
                }
            }
        )
    )
    again = plan_wrap([location], launcher=LAUNCHER)
    assert again.files[0].entries[0].action == "skip"
    assert "mcp-pin" in (again.files[0].entries[0].note or "")


def test_lock_is_added_to_project_wraps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # --lock is given relative to where wrap runs
    config = tmp_path / ".mcp.json"
    original = (
        '{\n  "mcpServers": {\n    "a": {"command": "npx", "args": ["-y", "srv@1.0.0"]}\n  }\n}\n'
    )
    config.write_text(original)
    user = ConfigLocation("test", config, "mcpServers")
    project = ConfigLocation("project", config, "mcpServers", project=True)
    home = tmp_path / "home"
    apply(plan_wrap([user], launcher=LAUNCHER, lock="toolpin.lock"), home=home)
    assert "--lock" not in config.read_text()
    upgrade = plan_wrap([project], launcher=LAUNCHER, lock="toolpin.lock")
    assert [e.action for e in upgrade.files[0].entries] == ["add-lock"]
    apply(upgrade, home=home)
    argv = _argvs(config.read_text(), "mcpServers")["a"]
    assert argv == (
        "/opt/toolpin/bin/toolpin",
        "run",
        "--name",
        "a@test",
        "--lock",
        "toolpin.lock",
        "npx",
        "-y",
        "srv@1.0.0",
    )
    assert plan_wrap([project], launcher=LAUNCHER, lock="toolpin.lock").change_count == 0
    apply(plan_unwrap([project], journal=set()), home=home)
    assert config.read_text() == original


def test_bad_files_are_reported_and_left_alone(tmp_path: Path) -> None:
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"mcpServers": {"a": {"command": "x",,}}}')
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("[mcp_servers.a\ncommand = 1\n")
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "\xe9"}')
    missing = tmp_path / "missing.json"
    plan = plan_wrap(
        [
            ConfigLocation("t", p, d)
            for p, d in (
                (bad_json, "auto"),
                (bad_toml, "codex"),
                (latin, "auto"),
                (missing, "auto"),
            )
        ],
        launcher=LAUNCHER,
    )
    errors = [f.error for f in plan.files]
    assert len(errors) == 3
    assert errors[0] is not None and errors[0].startswith("not valid JSON (line 1, column")
    assert errors[1] is not None and errors[1].startswith("not valid TOML")
    assert errors[2] == "not UTF-8 text"
    assert apply(plan, home=tmp_path / "home") == []


def test_file_changed_after_planning(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {"a": {"command": "node"}}}')
    plan = plan_wrap([ConfigLocation("t", config, "auto")], launcher=LAUNCHER)
    config.write_text('{"mcpServers": {"a": {"command": "deno"}}}')
    with pytest.raises(Exception, match="changed since the plan was made"):
        apply(plan, home=tmp_path / "home")
    assert config.read_text() == '{"mcpServers": {"a": {"command": "deno"}}}'


def test_symlinked_config_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {"a": {"command": "node", "args": ["s.js"]}}}')
    link = tmp_path / "mcp.json"
    link.symlink_to(real)
    apply(plan_wrap([ConfigLocation("t", link, "auto")], launcher=LAUNCHER), home=tmp_path / "h")
    assert link.is_symlink()
    assert "/opt/toolpin/bin/toolpin" in real.read_text()
    shutil.rmtree(tmp_path / "h")


def test_a_package_the_lock_holds_is_not_flagged_as_unpinned(tmp_path: Path) -> None:
    config = tmp_path / ".mcp.json"
    config.write_text(
        '{"mcpServers": {"held": {"command": "npx", "args": ["-y", "srv"]},'
        ' "loose": {"command": "npx", "args": ["-y", "other"]}}}'
    )
    project = ConfigLocation("project", config, "mcpServers", project=True)
    plain = plan_wrap([project], launcher=LAUNCHER, lock="toolpin.lock")
    assert {e.name: e.warning is not None for e in plain.files[0].entries} == {
        "held": True,
        "loose": True,
    }
    held = plan_wrap([project], launcher=LAUNCHER, lock="toolpin.lock", held=frozenset({"held"}))
    warnings = {e.name: e.warning for e in held.files[0].entries}
    assert warnings["held"] is None  # run --lock runs the version the lock records
    assert warnings["loose"] is not None and "not pinned" in warnings["loose"]
    # Without --lock (a user config), the lock's knowledge does not apply.
    user = ConfigLocation("user", config, "mcpServers")
    free = plan_wrap([user], launcher=LAUNCHER, held=frozenset({"held"}))
    assert all(e.warning is not None for e in free.files[0].entries)
