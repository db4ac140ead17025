"""Redacting a command line: what looks like a secret is replaced by a marker that keeps a
short hash; ordinary paths, flags, package names and versions stay as they are."""

from __future__ import annotations

import re
import secrets
import string

import pytest

from toolpin.core.redact import is_marker, looks_random, marker, redact_argv, redact_env

M = re.compile(r"‹redacted:[0-9a-f]{8}›")

# ------------------------------------------------------------------------------- redacted

SECRET_CASES = [
    # (argv, the secrets that must not appear, the redacted argv with markers as <>)
    (["env", "GITHUB_TOKEN=ghp_abc", "node", "s.js"], ["ghp_abc"], "env GITHUB_TOKEN=<> node s.js"),
    (["env", "TZ=Europe/Paris", "node"], ["Europe/Paris"], "env TZ=<> node"),
    (["/usr/bin/env", "-i", "lower_case=v4l", "node", "x=1"], ["v4l"],
     "/usr/bin/env -i lower_case=<> node x=1"),
    (["node", "s.js", "--token", "hunter2"], ["hunter2"], "node s.js --token <>"),
    (["node", "s.js", "--api-key", "abc"], ["abc"], "node s.js --api-key <>"),
    (["node", "s.js", "--apiKey", "abc"], ["abc"], "node s.js --apiKey <>"),
    (["node", "s.js", "--password", "pw"], ["pw"], "node s.js --password <>"),
    (["node", "s.js", "--secret", "s3"], ["s3"], "node s.js --secret <>"),
    (["node", "s.js", "--client-secret=s3"], ["s3"], "node s.js --client-secret=<>"),
    (["node", "s.js", "--api_key=Kv4l"], ["Kv4l"], "node s.js --api_key=<>"),
    (["node", "s.js", "token=t0"], ["t0"], "node s.js token=<>"),
    (["node", "s.js", "--header", "Authorization: Bearer xyz"], ["xyz", "Bearer"],
     "node s.js --header Authorization: <>"),
    (["node", "s.js", "X-Api-Key: k1"], ["k1"], "node s.js X-Api-Key: <>"),
    (["node", "s.js", "https://bob:hunter2@db.example.com/x"], ["bob", "hunter2"],
     "node s.js https://<>@db.example.com/x"),
    (["node", "s.js", "https://api.example.com/v1?api_key=K9&q=ok"], ["K9"],
     "node s.js https://api.example.com/v1?api_key=<>&q=ok"),
    (["node", "s.js", "--url=https://u:p@h.example/"], ["u:p"], "node s.js --url=https://<>@h.example/"),
    (["docker", "run", "-e", "API_KEY=v1", "img"], ["v1"], "docker run -e API_KEY=<> img"),
    (["node", "s.js", "sk-proj-abcdef123456"], ["sk-proj-abcdef123456"], "node s.js <>"),
    (["node", "s.js", "AKIAIOSFODNN7EXAMPLE"], ["AKIAIOSFODNN7EXAMPLE"], "node s.js <>"),
    (["node", "s.js", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"], ["eyJhbGci"],
     "node s.js <>"),
    (["node", "s.js", "d41d8cd98f00b204e9800998ecf8427e"], ["d41d8cd98f00b204"], "node s.js <>"),
    (["node", "s.js", "--key", "-"], [], "node s.js --key <>"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "hidden", "expected"), SECRET_CASES)
def test_secrets_are_replaced_by_markers(argv: list[str], hidden: list[str], expected: str) -> None:
    out = redact_argv(argv)
    assert M.sub("<>", " ".join(out)) == expected
    for secret in hidden:
        assert all(secret not in word for word in out)


def test_long_random_words_are_redacted_whatever_their_alphabet() -> None:
    alphabets = [string.ascii_letters + string.digits, string.ascii_lowercase + string.digits]
    words = [secrets.token_urlsafe(32), secrets.token_hex(20)]
    words += ["".join(secrets.choice(a) for _ in range(40)) for a in alphabets]
    for word in words:
        assert looks_random(word), word
        assert redact_argv(["node", word]) == ["node", marker(word)]


# --------------------------------------------------------------------------- left alone

ORDINARY = [
    ["npx", "-y", "@modelcontextprotocol/server-filesystem@2025.1.14", "/home/ana/projects/app"],
    ["/home/ana/.venv/bin/python", "-m", "mcp_server_git", "--repository", "/srv/repo24/alpha"],
    ["uvx", "mcp-server-fetch==2025.4.7", "--port", "8080", "--log-level=debug", "-p", "3000"],
    ["npx", "-p", "@scope/pkg@1.2.3", "pkg-cli", "--no-auth", "/data"],
    ["node", "--token-file", "/run/secrets/token", "--auth-type", "basic", "s.js"],
    ["docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN",
     "ghcr.io/github/github-mcp-server:v0.4.0-20250101"],
    ["python", "/opt/mcp/servers/weather_server_v2/main_entry_point.py", "--config", "prod.yaml"],
    ["C:\\Program Files\\nodejs\\node.exe", "C:\\Users\\me\\AppData\\Roaming\\npm\\index.js"],
    ["node", "server-filesystem-2024.12.01.tar.gz", "python3.12-venv-x86_64-linux-gnu"],
    ["node", "https://example.com/mcp?limit=10", "--host=0.0.0.0", "x=1", "--", "-"],
    ["node", "node_modules_v18_linux_x64_glibc", "x86_64-unknown-linux-gnu-2024v1"],
    ["deno", "run", "--allow-net=api.example.com", "jsr:@std/http@1.0.0/file-server"],
    [],
]  # fmt: skip


@pytest.mark.parametrize("argv", ORDINARY)
def test_ordinary_arguments_are_not_redacted(argv: list[str]) -> None:
    assert redact_argv(argv) == argv


# ------------------------------------------------------------------------------ markers


def test_a_marker_tells_a_changed_secret_apart_and_shows_neither() -> None:
    one = redact_argv(["node", "--token", "first-secret"])
    two = redact_argv(["node", "--token", "second-secret"])
    again = redact_argv(["node", "--token", "first-secret"])
    assert one == again  # the same secret, the same marker
    assert one[2] != two[2]  # a changed secret is visible as a change
    assert is_marker(one[2]) and is_marker(two[2])
    assert "first" not in one[2] and "second" not in two[2]


def test_the_environment_is_never_kept_in_clear() -> None:
    env = {"TZ": "UTC", "PATH": "/usr/bin", "API_KEY": "k"}
    out = redact_env(env)
    assert list(out) == list(env)
    assert all(M.fullmatch(v) for v in out.values())
    assert out["TZ"] != out["PATH"]


def test_redaction_is_idempotent() -> None:
    for argv, _, _ in SECRET_CASES:
        once = redact_argv(argv)
        assert redact_argv(once) == once
