"""``toolpin demo`` as a person runs it: exit 0 on the block, NO_COLOR, real pins untouched."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.proxy.harness import proxy_env, toolpin_argv


def run_demo(home: Path, tmp: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        toolpin_argv("demo"),
        capture_output=True,
        text=True,
        env=proxy_env(home, TMPDIR=str(tmp), **extra),
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_demo_blocks_the_changed_server(tmp_path: Path) -> None:
    home = tmp_path / "real-home"
    (home / "pins").mkdir(parents=True)
    sentinel = home / "pins" / "0123456789abcdef.json"
    sentinel.write_text("my real pin")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = run_demo(home, scratch, NO_COLOR="1", TOOLPIN_COLOR="1")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "pinned 1 tool for demo-server" in out
    assert "TOOL DEFINITIONS CHANGED SINCE YOU APPROVED THIS SERVER" in out
    assert '+       "context": {' in out
    assert "notes from the" in out
    assert "JSON-RPC error -31042" in out
    assert "\x1b[" not in out  # NO_COLOR wins over everything
    # The user's store is untouched and the temporary one is gone.
    assert sorted(p.name for p in home.rglob("*")) == ["0123456789abcdef.json", "pins"]
    assert sentinel.read_text() == "my real pin"
    assert list(scratch.iterdir()) == []


def test_demo_colours_when_asked(tmp_path: Path) -> None:
    done = run_demo(tmp_path / "home", tmp_path, TOOLPIN_COLOR="1")
    assert done.returncode == 0
    assert "\x1b[" in done.stdout


def test_demo_says_its_store_is_temporary_and_keep_keeps_it(tmp_path: Path) -> None:
    home = tmp_path / "real-home"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = run_demo(home, scratch, NO_COLOR="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "belong to the demo's temporary pin store, deleted now" in done.stdout
    assert "toolpin demo --keep" in done.stdout
    assert list(scratch.iterdir()) == []

    kept = subprocess.run(
        toolpin_argv("demo", "--keep"),
        capture_output=True,
        text=True,
        env=proxy_env(home, TMPDIR=str(scratch), NO_COLOR="1"),
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert kept.returncode == 0, kept.stdout + kept.stderr
    [work] = list(scratch.iterdir())
    review = next(ln.strip() for ln in kept.stdout.splitlines() if "TOOLPIN_HOME=" in ln)
    assert review.startswith(f"TOOLPIN_HOME={work / 'home'} toolpin review ")
    server_id = review.rsplit(" ", 1)[1]
    # The commands it prints work on the kept store: the change waits for review there.
    shown = subprocess.run(
        toolpin_argv("review", server_id),
        capture_output=True,
        text=True,
        env=proxy_env(work / "home"),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "word_count" in shown.stdout
    assert not home.exists() or not any(home.rglob("*.json"))
