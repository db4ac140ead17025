"""The word diff of two redacted command lines and what kind of change it is."""

from __future__ import annotations

import difflib

import pytest

from toolpin.core.argvdiff import (
    NOT_RECORDED,
    argv_diff,
    argv_text,
    diff_lines,
    package_spec,
    quote,
    word_diff,
)
from toolpin.core.redact import redact_argv


def kinds(old: list[str], new: list[str]) -> list[str]:
    return [c.kind for c in argv_diff(old, new).changes]


def test_a_moved_venv_is_an_executable_change() -> None:
    diff = argv_diff(["/a/.venv/bin/python", "-m", "srv"], ["/b/.venv/bin/python", "-m", "srv"])
    assert [c.kind for c in diff.changes] == ["executable"]
    assert diff.changes[0].text() == "executable path: /a/.venv/bin/python -> /b/.venv/bin/python"
    lines = diff_lines(diff)
    assert lines[0] == "Command changed (executable path):"
    assert lines[3] == "  diff:   [-/a/.venv/bin/python-] {+/b/.venv/bin/python+} -m srv"


@pytest.mark.parametrize(
    ("old", "new", "package", "text"),
    [
        ("pkg@1.2.3", "pkg@1.2.4", "pkg", "package version: pkg 1.2.3 -> 1.2.4"),
        ("@scope/srv@1.0.0", "@scope/srv@latest", "@scope/srv",
         "package version: @scope/srv 1.0.0 -> latest"),
        ("mcp-server-fetch==2025.4.7", "mcp-server-fetch==2025.5.1", "mcp-server-fetch",
         "package version: mcp-server-fetch 2025.4.7 -> 2025.5.1"),
    ],
)  # fmt: skip
def test_a_package_at_another_version(old: str, new: str, package: str, text: str) -> None:
    diff = argv_diff(["npx", "-y", old, "/data"], ["npx", "-y", new, "/data"])
    [change] = diff.changes
    assert (change.kind, change.package, change.text()) == ("package", package, text)


def test_another_package_is_an_argument_change_not_a_version() -> None:
    assert kinds(["npx", "a@1"], ["npx", "b@1"]) == ["arguments"]
    assert package_spec("/home/ana/x") is None
    assert package_spec("git+https://github.com/a/b@main") is None


def test_added_and_removed_arguments() -> None:
    added = argv_diff(["node", "s.js"], ["node", "s.js", "--read-only"])
    assert [c.text() for c in added.changes] == ["arguments: added --read-only"]
    removed = argv_diff(["node", "s.js", "--verbose", "/x"], ["node", "s.js", "/x"])
    assert [c.text() for c in removed.changes] == ["arguments: removed --verbose"]


def test_a_changed_secret_is_shown_as_changed_never_in_clear() -> None:
    old = redact_argv(["node", "s.js", "--token=first-value"])
    new = redact_argv(["node", "s.js", "--token=second-value"])
    diff = argv_diff(old, new)
    assert [c.kind for c in diff.changes] == ["secret"]
    text = "\n".join(diff_lines(diff))
    assert "secret changed: the value of --token (neither value is shown)" in text
    assert "first-value" not in text and "second-value" not in text


def test_several_kinds_in_one_change() -> None:
    diff = argv_diff(
        ["/a/python", "-m", "srv==1.0", "--port", "1"],
        ["/b/python", "-m", "srv==1.1", "--port", "2"],
    )
    assert diff.kinds == ["executable", "package", "arguments"]
    assert diff_lines(diff)[0] == "Command changed (executable path, package version, arguments):"


def test_the_word_diff_is_difflibs() -> None:
    cases = [
        (["a", "b", "c"], ["a", "x", "c"]),
        (["a", "a", "a"], ["a", "y", "a", "a"]),
        (["p", "q"], []),
        ([], ["p"]),
        (["x", "y", "z", "y"], ["y", "z", "x", "y"]),
    ]
    for old, new in cases:
        ops = word_diff(old, new)
        assert [w for op, w in ops if op != "+"] == old
        assert [w for op, w in ops if op != "-"] == new
        matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
        kept = sum(size for _, _, size in matcher.get_matching_blocks())
        assert sum(1 for op, _ in ops if op == "=") == kept


def test_an_unrecorded_earlier_command() -> None:
    diff = argv_diff(None, ["npx", "-y", "pkg@2"])
    assert diff.changes == ()
    assert diff_lines(diff) == [f"Command changed: {NOT_RECORDED}", "  now:    npx -y pkg@2"]
    assert diff.to_json() == {"before": None, "after": ["npx", "-y", "pkg@2"], "changes": []}


def test_control_characters_are_made_visible_and_spaces_quoted() -> None:
    assert quote("a\x1b[31mred") == "'a\\u{1b}[31mred'"
    assert quote("two words") == "'two words'"
    assert quote("") == "''"
    assert quote("it's") == "'it'\\''s'"
    text = "\n".join(diff_lines(argv_diff(["node", "a\u202eb"], ["node", "a\nb"])))
    assert "\u202e" not in text and "\nb" not in text
    assert "a\\u{202e}b" in text and "a\\u{a}b" in text
    assert argv_text([]) == "(empty command)"


def test_json_keys_are_stable() -> None:
    diff = argv_diff(["npx", "pkg@1"], ["npx", "pkg@2"])
    assert diff.to_json() == {
        "before": ["npx", "pkg@1"],
        "after": ["npx", "pkg@2"],
        "changes": [{"kind": "package", "before": ["pkg@1"], "after": ["pkg@2"], "package": "pkg"}],
    }


def test_the_executable_after_env_and_its_assignments() -> None:
    old = ["env", "TZ=‹redacted:00000000›", "-u", "X", "/a/bin/uvx", "srv==1"]
    new = ["env", "TZ=‹redacted:00000000›", "-u", "X", "/b/bin/uvx", "srv==2"]
    diff = argv_diff(old, new)
    assert diff.kinds == ["executable", "package"]
    assert diff.changes[0].text() == "executable path: /a/bin/uvx -> /b/bin/uvx"
    moved_and_added = argv_diff(["env", "A=1", "/a/py"], ["env", "A=1", "/b/py", "--x"])
    assert [c.text() for c in moved_and_added.changes] == [
        "executable path: /a/py -> /b/py",
        "arguments: added --x",
    ]


@pytest.mark.parametrize(
    ("old", "new", "text"),
    [
        (["node", "--api-key", "k1"], ["node", "--api-key", "k2"], "the value after --api-key"),
        (["env", "TOKEN=a", "node"], ["env", "TOKEN=b", "node"], "the value of TOKEN"),
        (["n", "Authorization: Bearer a"], ["n", "Authorization: Bearer b"],
         "the value of Authorization"),
        (["n", "https://u:a@h/"], ["n", "https://u:b@h/"], "a value in https://‹redacted:"),
    ],
)  # fmt: skip
def test_a_changed_secret_says_where_it_is(old: list[str], new: list[str], text: str) -> None:
    [change] = argv_diff(redact_argv(old), redact_argv(new)).changes
    assert change.kind == "secret"
    assert change.text().startswith(f"secret changed: {text}")
