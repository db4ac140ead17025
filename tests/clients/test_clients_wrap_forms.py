"""Reading wrapped commands in both forms: with ``--`` and without (the Inspector-safe one)."""

from __future__ import annotations

import pytest

from toolpin.clients.wrap import proxy_args, recognise_wrap


@pytest.mark.parametrize(
    ("argv", "inner"),
    [
        (["toolpin", "run", "--name", "a", "--", "npx", "-y", "srv"], 5),
        (["toolpin", "run", "--name", "a", "npx", "-y", "srv"], 4),
        (["toolpin", "run", "--name=a", "--lock", "t.lock", "--only-locked", "uvx", "x"], 6),
        (["/opt/bin/toolpin", "run", "--quiet", "--timeout", "5", "node", "s.js", "--name"], 5),
        (["python3", "-m", "toolpin", "run", "--name", "a", "node", "s.js"], 6),
    ],
)
def test_the_server_command_is_found_in_either_form(argv: list[str], inner: int) -> None:
    form = recognise_wrap(argv)
    assert form is not None and form.by == "toolpin"
    assert form.inner_start == inner


def test_an_unknown_option_is_not_read_as_a_command() -> None:
    form = recognise_wrap(["toolpin", "run", "--frobnicate", "npx", "srv"])
    assert form is not None and form.inner_start is None


def test_the_separator_is_kept_only_where_it_is_needed() -> None:
    assert proxy_args("a", first="npx") == ["run", "--name", "a"]
    assert proxy_args("a", first="-weird") == ["run", "--name", "a", "--"]
    assert proxy_args("a", "t.lock", only_locked=True, first="uvx") == [
        "run", "--name", "a", "--lock", "t.lock", "--only-locked",
    ]  # fmt: skip


def test_what_wrap_writes_is_what_the_proxy_runs() -> None:
    from toolpin.__main__ import _parse_run

    inner = ["npx", "-y", "srv", "--name", "x", "--", "y"]
    parsed = _parse_run([*proxy_args("a", "t.lock", first=inner[0])[1:], *inner])
    assert parsed is not None
    assert parsed["argv"] == inner and parsed["name"] == "a" and parsed["lock"] == "t.lock"
