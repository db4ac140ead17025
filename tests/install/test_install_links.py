"""The install generator: every output decodes back to exactly ``toolpin run --name N --
argv``; hostile input is refused with a clear reason; secrets stay names."""

from __future__ import annotations

import base64
import json
import tomllib
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.install.decoders import decode
from toolpin.clients.install_links import (
    CLIENTS,
    InstallRequest,
    default_name,
    install_links,
    readme_link,
)
from toolpin.core.render import visible
from toolpin.errors import InputError

HOSTILE_PIECES = [
    "a", "Z", "9", " ", "'", '"', "\\", "`", ";", "&", "|", "<", ">", "(", ")", "{", "}",
    "#", "*", "?", "~", "!", "%", "+", "=", ",", ".", "/", ":", "@", "-", "--", "é", "ß",
    "日本", "🦆", "\u00a0", "\u2028", "\u202e", "\u200b", "\U000e0041", "\n", "\t", "\r",
    "\x00", "\x1b[31m", "$", "${HOME}", "$(id)", "\x7f", "\ufeff", "\ud800",
]  # fmt: skip

argv_element = st.lists(st.sampled_from(HOSTILE_PIECES), max_size=6).map("".join) | st.text(
    max_size=12
)
names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True)
env_names = st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True), max_size=3)


def _refusable(value: str) -> bool:
    return "$" in value or visible(value) != value


@settings(max_examples=300, deadline=None)
@given(
    argv=st.lists(argv_element, min_size=1, max_size=6),
    name=names,
    env=env_names,
    uvx=st.booleans(),
)
def test_every_output_round_trips_or_the_input_is_refused(
    argv: list[str], name: str, env: list[str], uvx: bool
) -> None:
    launcher = ("uvx", "toolpin@0.1.0") if uvx else ("toolpin",)
    env_t = tuple(dict.fromkeys(env))
    request = InstallRequest(tuple(argv), name, env_t, launcher)
    if not argv[0] or any(_refusable(a) for a in argv):
        with pytest.raises(InputError):
            install_links(request)
        return
    links = install_links(request)
    expected = [*launcher, "run", "--name", name, "--", *argv]
    assert list(links.outputs) == list(CLIENTS)
    for client in CLIENTS:
        assert decode(client, links.outputs[client], name) == expected, client


def test_a_dotted_name_is_one_quoted_codex_table() -> None:
    links = install_links(InstallRequest(("npx", "-y", "pkg"), "my.server"))
    assert links.outputs["codex"].startswith('[mcp_servers."my.server"]\n')
    assert list(tomllib.loads(links.outputs["codex"])["mcp_servers"]) == ["my.server"]


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (("node", "a\nb"), "newline"),
        (("node", "x$HOME"), r"'\$'"),
        (("node", "\u202eevil"), "direction-changing"),
        (("node", "zero\u200bwidth"), "invisible"),
        (("", "x"), "empty"),
        ((), "no server command"),
    ],
)
def test_hostile_argv_is_refused_with_its_reason(argv: tuple[str, ...], reason: str) -> None:
    with pytest.raises(InputError, match=reason):
        install_links(InstallRequest(argv, "srv"))


@pytest.mark.parametrize("name", ["", "a b", "-x", "a/b", "a" * 65, "é", "x\ny", "a$b"])
def test_names_outside_the_alphabet_are_refused(name: str) -> None:
    with pytest.raises(InputError, match="name"):
        install_links(InstallRequest(("node", "s.js"), name))


@pytest.mark.parametrize("var", ["API_KEY=secret", "1ABC", "A-B", ""])
def test_env_takes_names_never_values(var: str) -> None:
    with pytest.raises(InputError):
        install_links(InstallRequest(("node", "s.js"), "srv", (var,)))


def test_secrets_use_each_clients_own_mechanism() -> None:
    links = install_links(InstallRequest(("npx", "-y", "pkg"), "srv", ("API_KEY",)))
    out = links.outputs
    vscode = json.loads(unquote(out["vscode"].split("?", 1)[1]))
    assert vscode["env"] == {"API_KEY": "${input:API_KEY}"}
    assert vscode["inputs"] == [
        {"type": "promptString", "id": "API_KEY", "description": "API_KEY", "password": True}
    ]
    cursor = dict(parse_qsl(urlsplit(out["cursor"]).query))
    config = json.loads(base64.b64decode(cursor["config"]))
    assert config["env"] == {"API_KEY": "${env:API_KEY}"}
    assert json.loads(out["windsurf"])["mcpServers"]["srv"]["env"] == {"API_KEY": "${env:API_KEY}"}
    assert json.loads(out["gemini"])["mcpServers"]["srv"]["env"] == {"API_KEY": "${API_KEY}"}
    assert tomllib.loads(out["codex"])["mcp_servers"]["srv"]["env_vars"] == ["API_KEY"]
    assert ("env", "API_KEY=API_KEY") in parse_qsl(urlsplit(out["goose"]).query)
    assert "env" not in json.loads(out["claude-desktop"])["mcpServers"]["srv"]
    assert "API_KEY" in links.notes["claude-desktop"]
    assert set(links.notes) == {"claude-code", "claude-desktop", "lmstudio", "lmstudio-web"}


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["npx", "-y", "@scope/server-filesystem@1.0.2", "/tmp"], "server-filesystem"),
        (["uvx", "mcp-server-time==0.6.2"], "mcp-server-time"),
        (["node", "/srv/weather/index.js"], "index"),
        (["/usr/local/bin/my-server", "--port", "3"], "my-server"),
        (["python3", "-m", "server"], "server"),
        (["docker", "run", "-i", "img"], "docker"),
        (["npx", "-y"], "npx"),
        (["日本"], "server"),
    ],
)  # fmt: skip
def test_default_name(argv: list[str], name: str) -> None:
    assert default_name(argv) == name


def test_readme_link_names_the_server_by_its_log_id_only() -> None:
    link = readme_link("https://log.example.org/", "0123456789abcdef")
    assert link == "[Install with toolpin](https://log.example.org/servers/0123456789abcdef.html)"
    with pytest.raises(InputError):
        readme_link("https://log.example.org", "../../etc")
    with pytest.raises(InputError):
        readme_link("javascript:alert(1)", "0123456789abcdef")
