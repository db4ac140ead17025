"""Which package a command runs, whether it is pinned, and pinning it in place."""

from __future__ import annotations

import pytest

from toolpin.errors import PackageError
from toolpin.packages import PackageRef, detect_package, pin_argv


@pytest.mark.parametrize(
    ("argv", "eco", "name", "requested", "exact", "runner", "index"),
    [
        (["npx", "-y", "left-pad-mcp"], "npm", "left-pad-mcp", "", None, "npx", 2),
        (
            ["npx", "-y", "left-pad-mcp@1.3.0", "--port", "1"],
            "npm",
            "left-pad-mcp",
            "1.3.0",
            "1.3.0",
            "npx",
            2,
        ),
        (["npx", "left-pad-mcp@v1.3.0"], "npm", "left-pad-mcp", "v1.3.0", "1.3.0", "npx", 1),
        (
            ["npx", "-y", "@acme/mcp-server@latest"],
            "npm",
            "@acme/mcp-server",
            "latest",
            None,
            "npx",
            2,
        ),
        (["npx", "@acme/mcp-server@^0.4.0"], "npm", "@acme/mcp-server", "^0.4.0", None, "npx", 1),
        (
            ["C:\\Program Files\\nodejs\\npx.cmd", "-y", "a@1.0.0"],
            "npm",
            "a",
            "1.0.0",
            "1.0.0",
            "npx",
            2,
        ),
        (["/usr/bin/NPX.EXE", "a"], "npm", "a", "", None, "npx", 1),
        (["npx", "--registry", "http://r", "-y", "a"], "npm", "a", "", None, "npx", 4),
        (["npx", "-p", "a@2.0.0", "a-bin", "x"], "npm", "a", "2.0.0", "2.0.0", "npx", 2),
        (["npx", "--package=a@2.0.0", "a-bin"], "npm", "a", "2.0.0", "2.0.0", "npx", 1),
        (["npx", "--", "a@1.0.0-rc.1"], "npm", "a", "1.0.0-rc.1", "1.0.0-rc.1", "npx", 2),
        (["bunx", "a@1.0.0"], "npm", "a", "1.0.0", "1.0.0", "bunx", 1),
        (["bun", "x", "a"], "npm", "a", "", None, "bun x", 2),
        (["npm", "exec", "--yes", "a@1.0.0"], "npm", "a", "1.0.0", "1.0.0", "npm exec", 3),
        (["npm", "x", "a"], "npm", "a", "", None, "npm exec", 2),
        (["pnpm", "dlx", "a"], "npm", "a", "", None, "pnpm dlx", 2),
        (["yarn", "dlx", "@s/a@1.2.3"], "npm", "@s/a", "1.2.3", "1.2.3", "yarn dlx", 2),
        (["uvx", "mcp-server-fetch"], "pypi", "mcp-server-fetch", "", None, "uvx", 1),
        (
            ["uvx", "Mcp_Server.Fetch@2025.4.7"],
            "pypi",
            "mcp-server-fetch",
            "2025.4.7",
            "2025.4.7",
            "uvx",
            1,
        ),
        (
            ["uvx", "mcp-server-fetch==2025.4.7"],
            "pypi",
            "mcp-server-fetch",
            "2025.4.7",
            "2025.4.7",
            "uvx",
            1,
        ),
        (["uvx", "mcp-server-fetch@latest"], "pypi", "mcp-server-fetch", "latest", None, "uvx", 1),
        (
            ["uvx", "--python", "3.12", "--from", "pkg[a,b]==1.0", "cmd"],
            "pypi",
            "pkg",
            "1.0",
            "1.0",
            "uvx",
            4,
        ),
        (["uvx", "--from", "pkg>=1.0,<2", "cmd"], "pypi", "pkg", ">=1.0,<2", None, "uvx", 2),
        (["uv", "tool", "run", "pkg"], "pypi", "pkg", "", None, "uv tool run", 3),
        (["pipx", "run", "pkg==1.0"], "pypi", "pkg", "1.0", "1.0", "pipx run", 2),
        (["pipx", "run", "--spec", "pkg==1.0", "cmd"], "pypi", "pkg", "1.0", "1.0", "pipx run", 3),
        (
            ["docker", "run", "-i", "--rm", "-e", "TOKEN", "ghcr.io/acme/srv:1.2"],
            "oci",
            "ghcr.io/acme/srv",
            "1.2",
            None,
            "docker run",
            6,
        ),
        (
            ["podman", "run", "-i", "--rm", "mcp/fetch@sha256:" + "a" * 64],
            "oci",
            "mcp/fetch",
            "sha256:" + "a" * 64,
            "sha256:" + "a" * 64,
            "podman run",
            4,
        ),
        (
            ["docker", "container", "run", "--name=x", "mcp/time"],
            "oci",
            "mcp/time",
            "",
            None,
            "docker run",
            4,
        ),
    ],
)
def test_detects(
    argv: list[str], eco: str, name: str, requested: str, exact: str | None, runner: str, index: int
) -> None:
    ref = detect_package(argv)
    assert ref is not None
    assert (ref.ecosystem, ref.name, ref.requested, ref.exact, ref.runner, ref.arg_index) == (
        eco,
        name,
        requested,
        exact,
        runner,
        index,
    )
    assert ref.pinned is (exact is not None)


def test_registry_flag_is_recorded() -> None:
    ref = detect_package(["npx", "--registry=http://r.example", "a"])
    assert ref is not None and ref.registry == "http://r.example"


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["node", "server.js"],
        ["python", "-m", "server"],
        ["npx", "./local-dir"],
        ["npx", "/abs/server"],
        ["uvx", "--from", "./pkg", "cmd"],
        ["npx", "-y"],
        ["npm", "install", "a"],
        ["uv", "run", "server.py"],
        ["docker", "ps"],
    ],
)
def test_no_package(argv: list[str]) -> None:
    assert detect_package(argv) is None


@pytest.mark.parametrize(
    "argv",
    [
        ["npx", "github:evil/x"],
        ["npx", "file:../x"],
        ["npx", "git+https://github.com/evil/x.git"],
        ["npx", "https://evil.example/x.tgz"],
        ["npx", "a@1.0.0 && calc"],
        ["npx", "a@1.0.0;calc"],
        ["npx", "a@npm:b@1.0.0"],
        ["npx", "a@1.0.0\ncalc"],
        ["npx", "a$(calc)"],
        ["uvx", "git+https://github.com/evil/x"],
        ["uvx", "--from", "pkg @ https://evil.example/x.whl", "cmd"],
        ["uvx", "pkg==1.0;calc"],
        ["uvx", "pkg@1.0 calc"],
        ["docker", "run", "evil image"],
        ["docker", "run", "IMG$(x)"],
    ],
)
def test_hostile_specs_are_refused(argv: list[str]) -> None:
    with pytest.raises(PackageError, match="not a registry package"):
        detect_package(argv)


def test_range_and_tag() -> None:
    rng = detect_package(["npx", "a@^1.2.0"])
    tag = detect_package(["npx", "a@latest"])
    py = detect_package(["uvx", "--from", "p~=1.0", "p"])
    assert rng is not None and rng.is_range and not rng.pinned
    assert tag is not None and not tag.is_range and not tag.pinned
    assert py is not None and py.is_range


@pytest.mark.parametrize(
    ("argv", "version", "expected"),
    [
        (["npx", "-y", "a"], "1.2.3", ["npx", "-y", "a@1.2.3"]),
        (["npx", "-y", "a@latest", "--x"], "1.2.3", ["npx", "-y", "a@1.2.3", "--x"]),
        (["npx", "--package=@s/a", "a"], "1.0.0", ["npx", "--package=@s/a@1.0.0", "a"]),
        (["npx", "-p", "a@^1", "a"], "1.0.0", ["npx", "-p", "a@1.0.0", "a"]),
        (["uvx", "p"], "2.0", ["uvx", "p@2.0"]),
        (["uvx", "--from", "p[x]", "c"], "2.0", ["uvx", "--from", "p[x]==2.0", "c"]),
        (["uvx", "--from=p", "c"], "2.0", ["uvx", "--from=p==2.0", "c"]),
        (["pipx", "run", "--spec", "p", "c"], "2.0", ["pipx", "run", "--spec", "p==2.0", "c"]),
        (["pipx", "run", "p"], "2.0", None),
        (["uvx", "p[x]"], "2.0", None),
        (
            ["docker", "run", "-i", "img:1"],
            "sha256:" + "b" * 64,
            ["docker", "run", "-i", "img@sha256:" + "b" * 64],
        ),
    ],
)
def test_pin_argv(argv: list[str], version: str, expected: list[str] | None) -> None:
    ref = detect_package(argv)
    assert ref is not None
    assert pin_argv(argv, ref, version) == expected


@pytest.mark.parametrize(
    "version",
    [
        "github:evil/x",
        "file:../x",
        "https://x",
        "latest",
        "^1.0.0",
        "v1.0.0",
        "1.0.0 && calc",
        "1.0.0\n",
        "1.0.0\nrm -rf /",
        "",
        "1.0",
        "sha256:" + "a" * 64,
    ],
)
def test_pin_argv_refuses_hostile_versions(version: str) -> None:
    argv = ["npx", "-y", "a"]
    ref = detect_package(argv)
    assert ref is not None
    with pytest.raises(PackageError, match="not a plain version"):
        pin_argv(argv, ref, version)


def test_pin_argv_refuses_another_command() -> None:
    ref = detect_package(["npx", "-y", "a"])
    assert ref is not None
    with pytest.raises(PackageError, match="no longer runs"):
        pin_argv(["npx", "-y", "b"], ref, "1.0.0")


def test_oci_needs_a_digest() -> None:
    ref = PackageRef("oci", "img", "", None, "docker run", 2)
    with pytest.raises(PackageError, match="image digest"):
        pin_argv(["docker", "run", "img"], ref, "1.0.0")
