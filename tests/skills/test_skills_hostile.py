"""Hostile skill folders: links out of the folder, FIFOs, huge, binary and unreadable
files, bad names, bad frontmatter. Each is one line and exit 2, and nothing is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.skills.skills_support import DEPLOY, Machine, one_line_error, write_skill
from toolpin.skills.tree import MAX_FILE_BYTES


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


@pytest.fixture
def skill(machine: Machine) -> Path:
    return write_skill(machine.project / ".claude" / "skills" / "deploy")


def refused(machine: Machine) -> str:
    line = one_line_error(machine.toolpin("skills", "pin"))
    assert machine.pins() == []
    assert not (machine.toolpin_home / "audit.log").exists()
    return line


def test_a_link_out_of_the_folder(machine: Machine, skill: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("x", encoding="utf-8")
    (skill / "notes.md").symlink_to(tmp_path / "secret")
    line = refused(machine)
    assert line == (
        "toolpin: cannot pin the skill project/deploy/notes.md: "
        "a link that points outside the skill folder (refused)"
    )
    (skill / "notes.md").unlink()
    (skill / "sub").mkdir()
    (skill / "sub" / "up.md").symlink_to("../../../../secret")
    assert "outside the skill folder" in refused(machine)


def test_a_link_inside_is_recorded_as_a_link(machine: Machine, skill: Path) -> None:
    (skill / "readme.md").symlink_to("SKILL.md")
    assert machine.toolpin("skills", "pin").returncode == 0
    (skill / "other.md").write_text("other\n", encoding="utf-8")
    (skill / "readme.md").unlink()
    (skill / "readme.md").symlink_to("other.md")
    review = machine.toolpin("skills", "review")
    assert "~ readme.md: link, SKILL.md to other.md" in review.stdout
    assert "[medium] Link changed: readme.md" in review.stdout
    assert "[high] New file: other.md" in review.stdout


def test_a_symlinked_skill_folder_is_read_where_it_points(machine: Machine, tmp_path: Path) -> None:
    real = write_skill(tmp_path / "dev" / "deploy")
    skills = machine.project / ".claude" / "skills"
    skills.mkdir(parents=True)
    (skills / "deploy").symlink_to(real)
    assert machine.toolpin("skills", "pin").returncode == 0
    (real / "SKILL.md").write_text(DEPLOY + "More.\n", encoding="utf-8")
    assert machine.toolpin("skills", "check").returncode == 1


def test_a_fifo(machine: Machine, skill: Path) -> None:
    os.mkfifo(skill / "pipe")
    assert refused(machine).endswith("project/deploy/pipe: not a regular file (a FIFO)")


def test_a_huge_file(machine: Machine, skill: Path) -> None:
    with open(skill / "big.bin", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    assert refused(machine).endswith("project/deploy/big.bin: larger than 8 MiB")


def test_a_binary_file_is_pinned_by_digest(machine: Machine, skill: Path) -> None:
    (skill / "tool.bin").write_bytes(b"\x7fELF\x00\x00")
    done = machine.toolpin("skills", "pin")
    assert done.returncode == 0 and "1 binary (digest only)" in done.stdout
    (skill / "tool.bin").write_bytes(b"\x7fELF\x00\x01")
    review = machine.toolpin("skills", "review")
    assert "[medium] Binary file changed (digest only): tool.bin" in review.stdout
    assert "~ tool.bin: binary file, digest only:" in review.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_file(machine: Machine, skill: Path) -> None:
    (skill / "private.md").write_text("x", encoding="utf-8")
    (skill / "private.md").chmod(0)
    try:
        assert refused(machine).endswith("project/deploy/private.md: Permission denied")
    finally:
        (skill / "private.md").chmod(0o600)


def test_a_name_that_is_not_utf8(machine: Machine, skill: Path) -> None:
    with open(os.path.join(os.fsencode(skill), b"bad\xff.md"), "wb") as handle:
        handle.write(b"x")
    assert refused(machine).endswith("a file name is not valid UTF-8")


def test_hidden_characters_in_a_file_name_are_shown(machine: Machine, skill: Path) -> None:
    (skill / "a\u202eb\x1b[2J").mkdir()
    os.mkfifo(skill / "a\u202eb\x1b[2J" / "p")
    line = refused(machine)
    assert "\u202e" not in line and "\x1b" not in line
    assert "a\\u{202e}b\\u{1b}[2J/p" in line


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\nname: [unclosed\n---\nbody\n", "the frontmatter is not valid YAML"),
        ("---\nname: x\n", "the frontmatter has no closing --- line"),
        ("---\na: &x [1]\nb: *x\n---\n", "a YAML anchor or alias (refused)"),
        ("---\nx: !!python/object:os.system {}\n---\n", "the frontmatter is not valid YAML"),
        ("---\nx: !!binary aGVsbG8=\n---\n", "the frontmatter holds a bytes value"),
        ("---\nx: .nan\n---\n", "a number that is not finite"),
        ("---\n1: one\n---\n", "a key that is not text"),
        ("---\nx: " + "[" * 40 + "]" * 40 + "\n---\n", "nested deeper than 16 levels"),
        ("---\nx: " + "a" * 70_000 + "\n---\n", "longer than 65536 bytes"),
    ],
)
def test_bad_frontmatter(machine: Machine, skill: Path, text: str, reason: str) -> None:
    (skill / "SKILL.md").write_text(text, encoding="utf-8")
    line = refused(machine)
    assert line.startswith("toolpin: cannot pin the skill project/deploy/SKILL.md: ")
    assert reason in line


def test_dates_in_frontmatter_are_text(machine: Machine, skill: Path) -> None:
    from toolpin.skills.frontmatter import skill_document

    doc = skill_document("---\nupdated: 2026-12-01\ntags: [a, b]\n---\nbody\n")
    assert doc == {"frontmatter": {"updated": "2026-12-01", "tags": ["a", "b"]}, "body": "body\n"}


def test_a_folder_without_skill_md_text(machine: Machine, skill: Path) -> None:
    (skill / "SKILL.md").write_bytes(b"\xff\xfe")
    assert refused(machine).endswith("SKILL.md is not a UTF-8 text file")


def test_a_read_only_store_writes_nothing(machine: Machine, skill: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes everywhere")
    machine.toolpin_home.mkdir()
    machine.toolpin_home.chmod(0o500)
    try:
        line = one_line_error(machine.toolpin("skills", "pin"))
        assert "cannot create" in line or "cannot write" in line or "Permission denied" in line
    finally:
        machine.toolpin_home.chmod(0o700)
    assert machine.pins() == []
