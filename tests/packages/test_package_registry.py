"""Resolving packages against a fake npm registry and a fake PyPI on loopback."""

from __future__ import annotations

import pytest
from registry_support import FakeRegistry, simple_html

from toolpin.errors import LockfileError, PackageError
from toolpin.packages import (
    PackageRef,
    ResolvedPackage,
    detect_package,
    latest_version,
    resolve,
)


def ref_of(*argv: str) -> PackageRef:
    ref = detect_package(argv)
    assert ref is not None
    return ref


def test_npm_newest(npm_registry: FakeRegistry) -> None:
    got = resolve(ref_of("npx", "-y", "left-pad-mcp"))
    assert got.version == "1.3.0"
    assert got.integrity is not None and got.integrity.startswith("sha512-AAAA")
    assert got.requested == ""
    assert npm_registry.requests == ["/left-pad-mcp/latest"]


def test_npm_exact_and_tag(npm_registry: FakeRegistry) -> None:
    assert resolve(ref_of("npx", "left-pad-mcp@1.2.0")).integrity.startswith("sha512-BBBB")  # type: ignore[union-attr]
    assert resolve(ref_of("npx", "left-pad-mcp@next")).version == "2.0.0-beta.1"


def test_npm_scoped_name_is_url_encoded(npm_registry: FakeRegistry) -> None:
    got = resolve(ref_of("npx", "-y", "@acme/mcp-server"))
    assert got.name == "@acme/mcp-server" and got.version == "0.4.1"
    assert npm_registry.requests == ["/@acme%2Fmcp-server/latest"]


def test_npm_version_override(npm_registry: FakeRegistry) -> None:
    got = resolve(ref_of("npx", "-y", "left-pad-mcp"), version="1.2.0")
    assert got.version == "1.2.0"
    assert latest_version(ref_of("npx", "left-pad-mcp@1.2.0")) == "1.3.0"


def test_npm_range_is_refused_without_network(npm_registry: FakeRegistry) -> None:
    with pytest.raises(PackageError, match="is a version range; pin an exact version"):
        resolve(ref_of("npx", "left-pad-mcp@^1.2.0"))
    assert npm_registry.requests == []


def test_npm_not_found(npm_registry: FakeRegistry) -> None:
    with pytest.raises(PackageError, match="not found in the registry"):
        resolve(ref_of("npx", "no-such-package"))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("evil-version", "not a plain version number"),
        ("evil-tag", "not a plain version number"),
        ("other-name", "another package"),
    ],
)
def test_npm_hostile_answers(npm_registry: FakeRegistry, name: str, message: str) -> None:
    with pytest.raises(PackageError, match=message):
        resolve(ref_of("npx", name))


def test_npm_answer_for_another_version(npm_registry: FakeRegistry) -> None:
    with pytest.raises(PackageError, match=r"when asked for 1\.0\.0"):
        resolve(ref_of("npx", "wrong-version@1.0.0"))


def test_npm_bad_answers(npm_registry: FakeRegistry) -> None:
    npm_registry.routes["/broken/latest"] = (500, b"oops")
    npm_registry.routes["/notjson/latest"] = (200, b"<html>")
    npm_registry.routes["/dupe/latest"] = (
        200,
        b'{"name":"dupe","version":"1.0.0","version":"9.9.9"}',
    )
    npm_registry.routes["/huge/latest"] = (200, b" " * (9 * 1024 * 1024))
    with pytest.raises(PackageError, match="HTTP 500"):
        resolve(ref_of("npx", "broken"))
    with pytest.raises(PackageError, match="not JSON"):
        resolve(ref_of("npx", "notjson"))
    with pytest.raises(PackageError, match="not JSON"):
        resolve(ref_of("npx", "dupe"))
    with pytest.raises(PackageError, match="larger than 8 MiB"):
        resolve(ref_of("npx", "huge"))


def test_npm_timeout(npm_registry: FakeRegistry) -> None:
    npm_registry.routes["/slow/latest"] = (200, b"{}")
    npm_registry.delay["/slow/latest"] = 1.0
    with pytest.raises(PackageError, match=r"did not answer within 0.2s"):
        resolve(ref_of("npx", "slow"), timeout=0.2)


def test_npm_registry_order(npm_registry: FakeRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLPIN_NPM_REGISTRY")
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    # The command's own --registry wins over npm's configuration.
    got = resolve(ref_of("npx", f"--registry={npm_registry.url}/", "left-pad-mcp"))
    assert got.version == "1.3.0"
    monkeypatch.setenv("npm_config_registry", npm_registry.url)
    assert resolve(ref_of("npx", "left-pad-mcp")).version == "1.3.0"


def test_unreachable_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLPIN_NPM_REGISTRY", "http://127.0.0.1:9")
    with pytest.raises(PackageError, match="cannot reach the npm registry"):
        resolve(ref_of("npx", "a"), timeout=2)


def test_pypi_newest_and_exact_from_the_simple_index(pypi: FakeRegistry) -> None:
    got = resolve(ref_of("uvx", "mcp-server-fetch"))
    # The newest release that is neither a pre-release nor yanked; another project's file
    # on the page is ignored.
    assert got.version == "2025.4.7"
    assert got.files == (
        ("mcp_server_fetch-2025.4.7-py3-none-any.whl", "1" * 64),
        ("mcp_server_fetch-2025.4.7.tar.gz", "2" * 64),
    )
    old = resolve(ref_of("uvx", "--from", "MCP_Server_Fetch==2025.1.0", "mcp-server-fetch"))
    assert old.version == "2025.1.0" and old.files == (
        ("mcp_server_fetch-2025.1.0-py3-none-any.whl", "3" * 64),
    )
    # An exact pin of a yanked release still resolves (the runner installs it).
    assert resolve(ref_of("uvx", "mcp-server-fetch==2025.6.0")).files[0][1] == "8" * 64
    assert set(pypi.requests) == {"/simple/mcp-server-fetch/"}
    assert all(h["accept"].startswith("application/vnd.pypi.simple.v1+json") for h in pypi.headers)
    assert latest_version(ref_of("pipx", "run", "mcp-server-fetch==2025.1.0")) == "2025.4.7"


def test_pypi_refusals(pypi: FakeRegistry) -> None:
    with pytest.raises(PackageError, match="version range"):
        resolve(ref_of("uvx", "--from", "mcp-server-fetch>=2025", "x"))
    with pytest.raises(PackageError, match="no sha256 digest"):
        resolve(ref_of("uvx", "bad-digest"))
    with pytest.raises(PackageError, match="not a plain version number"):
        resolve(ref_of("uvx", "bad-version"))
    with pytest.raises(PackageError, match="not found"):
        resolve(ref_of("uvx", "absent"))
    with pytest.raises(PackageError, match="not found in the package index"):
        resolve(ref_of("uvx", "mcp-server-fetch==1.0"))
    with pytest.raises(PackageError, match=r"malformed page .*not simple API version 1"):
        resolve(ref_of("uvx", "no-api-version"))


def test_pypi_html_index(pypi: FakeRegistry) -> None:
    files = {
        "mcp_server_fetch-2025.4.7-py3-none-any.whl": "a" * 64,
        "mcp-server-fetch-2025.4.7.tar.gz": "b" * 64,  # an older sdist name form
        "mcp_server_fetch-2025.9.0.tar.gz": "c" * 64,
    }
    page = simple_html(files, yanked=frozenset({"mcp_server_fetch-2025.9.0.tar.gz"}))
    pypi.routes["/simple/mcp-server-fetch/"] = (200, page, "text/html")
    got = resolve(ref_of("uvx", "mcp-server-fetch"))
    assert got.version == "2025.4.7"
    assert got.files == (
        ("mcp-server-fetch-2025.4.7.tar.gz", "b" * 64),
        ("mcp_server_fetch-2025.4.7-py3-none-any.whl", "a" * 64),
    )


def test_oci_records_only_a_written_digest() -> None:
    digest = "sha256:" + "c" * 64
    got = resolve(ref_of("docker", "run", "-i", f"mcp/fetch@{digest}"))
    assert got.version == digest and got.ecosystem == "oci"
    with pytest.raises(PackageError, match="not pinned by digest"):
        resolve(ref_of("docker", "run", "-i", "mcp/fetch:latest"))


def test_json_round_trip(npm_registry: FakeRegistry, pypi: FakeRegistry) -> None:
    for ref in (ref_of("npx", "left-pad-mcp"), ref_of("uvx", "mcp-server-fetch")):
        got = resolve(ref)
        again = ResolvedPackage.from_json(got.to_json())
        assert again == got and again.same_contents(got)
    assert "files" not in resolve(ref_of("npx", "left-pad-mcp")).to_json()


@pytest.mark.parametrize(
    "record",
    [
        [],
        {"ecosystem": "cargo", "name": "a", "version": "1.0.0"},
        {"ecosystem": "npm", "name": "a", "version": "1.0.0 && calc"},
        {"ecosystem": "npm", "name": "a"},
        {"ecosystem": "pypi", "name": "a", "version": "1.0", "files": [{"filename": "x"}]},
        {"ecosystem": "oci", "name": "a", "version": "latest"},
    ],
)
def test_from_json_refuses_bad_records(record: object) -> None:
    with pytest.raises(LockfileError):
        ResolvedPackage.from_json(record)
