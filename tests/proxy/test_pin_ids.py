"""``show``, ``review``, ``approve`` and ``forget`` take a unique id prefix (4+ hex) or the
server's ``--name``; an ambiguous prefix exits 2 naming the candidate ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.proxy.harness import Proxy, Scripted, run_cli, tool
from toolpin.errors import InputError
from toolpin.pins.store import PinStore

TOOLS = [tool("read", "Read a file.")]


def pinned(home: Path, tmp_path: Path, *names: str) -> dict[str, str]:
    ids = {}
    for name in names:
        server = Scripted(tmp_path / name, tools=TOOLS)
        proxy = Proxy(home, server.argv, "--name", name)
        proxy.initialize()
        assert proxy.close() == 0
    for row in json.loads(run_cli(home, "list", "--json").stdout):
        ids[row["label"]] = row["id"]
    return ids


def shortest_prefix(sid: str, others: list[str]) -> str:
    for n in range(4, 17):
        if not any(o.startswith(sid[:n]) for o in others):
            return sid[:n]
    raise AssertionError("ids are unique")


def test_prefixes_and_names_find_the_pin(tmp_path: Path, toolpin_home: Path) -> None:
    ids = pinned(toolpin_home, tmp_path, "alpha", "beta")
    alpha, beta = ids["alpha"], ids["beta"]
    prefix = shortest_prefix(alpha, [beta])
    shown = json.loads(run_cli(toolpin_home, "show", prefix, "--json").stdout)
    assert shown["id"] == alpha
    by_name = json.loads(run_cli(toolpin_home, "show", "--name", "beta", "--json").stdout)
    assert by_name["id"] == beta
    upper = run_cli(toolpin_home, "show", prefix.upper(), "--json")
    assert json.loads(upper.stdout)["id"] == alpha
    review = run_cli(toolpin_home, "review", "--name", "alpha")
    assert review.returncode == 0 and "nothing pending for alpha" in review.stdout
    approve = run_cli(toolpin_home, "approve", prefix)
    assert approve.returncode == 1 and "nothing is waiting for review for alpha" in approve.stderr
    forgot = run_cli(toolpin_home, "forget", "--name", "beta")
    assert forgot.returncode == 0
    assert [r["id"] for r in json.loads(run_cli(toolpin_home, "list", "--json").stdout)] == [alpha]


def test_an_ambiguous_prefix_exits_2_listing_the_ids(tmp_path: Path, toolpin_home: Path) -> None:
    ids = pinned(toolpin_home, tmp_path, "alpha")
    alpha = ids["alpha"]
    twin = alpha[:5] + ("0" if alpha[5] != "0" else "1") + alpha[6:]
    pins = toolpin_home / "pins"
    shutil.copy(pins / f"{alpha}.json", pins / f"{twin}.json")
    for command in ("show", "review", "approve", "forget"):
        done = run_cli(toolpin_home, command, alpha[:4])
        assert done.returncode == 2, (command, done.stderr)
        [line] = done.stderr.splitlines()
        assert f"the id prefix {alpha[:4]} matches 2 pinned servers:" in line
        assert alpha in line and twin in line and "alpha" not in line.replace(alpha, "")
    assert run_cli(toolpin_home, "show", alpha[:6], "--json").returncode == 0  # unique again
    assert (pins / f"{alpha}.json").exists() and (pins / f"{twin}.json").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("abc",), "is not a server id or a prefix of one"),
        (("abcz",), "is not a server id or a prefix of one"),
        (("0123456789abcdef0",), "is not a server id or a prefix of one"),
        (("ffff",), "no pinned server id starts with ffff"),
        (("--name", "nobody"), "no pinned server is named 'nobody'"),
        ((), "give one server"),
        (("ffff", "--name", "x"), "give one server"),
    ],
)
def test_bad_ids_and_names_exit_2_with_one_line(
    toolpin_home: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    from toolpin.cli import main

    for command in ("show", "review", "approve", "forget"):
        with pytest.raises(SystemExit) as done:
            main([command, *args])
        assert done.value.code == 2
        out, err = capsys.readouterr()
        assert out == ""
        [line] = err.splitlines()
        assert says in line, line


def test_a_name_is_matched_exactly(toolpin_home: Path) -> None:
    store = PinStore(toolpin_home)
    store.ensure()
    with pytest.raises(InputError, match="no pinned server is named 'Alpha'"):
        store.resolve(name="Alpha")
