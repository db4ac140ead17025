"""The user's package set-up is honoured: npmrc, uv and pip configuration, CA files.

Every test passes its own environment (``HOME``, ``XDG_*`` in the test folder), so the
machine's own configuration never leaks in. Registries are loopback fakes that serve only
what a mirror serves: npm's package documents and the simple index.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from registry_support import SIMPLE_JSON, FakeRegistry, make_ca, serve_tls, simple_page

from toolpin.errors import PackageError
from toolpin.packages import PackageRef, detect_package, resolve
from toolpin.packages.config import npm_settings, pypi_settings

FILES = {"notes_server-0.9.0-py3-none-any.whl": "4" * 64, "notes_server-0.9.0.tar.gz": "5" * 64}
NPM_DOC = {"name": "@acme/notes", "version": "1.3.0", "dist": {"integrity": "sha512-" + "N" * 86}}


def ref_of(*argv: str) -> PackageRef:
    ref = detect_package(argv)
    assert ref is not None
    return ref


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CONFIG_DIRS": str(tmp_path / "xdg"),
        "PIP_CONFIG_FILE": str(tmp_path / "no-pip.conf"),
        "NPM_CONFIG_GLOBALCONFIG": str(tmp_path / "no-global-npmrc"),
        "PATH": "/usr/bin:/bin",
    }


@pytest.fixture
def index() -> Iterator[FakeRegistry]:
    fake = FakeRegistry(
        {
            "/simple/notes-server/": (200, simple_page("notes-server", FILES), SIMPLE_JSON),
            "/@acme%2Fnotes/latest": (200, json.dumps(NPM_DOC).encode()),
        }
    )
    yield fake
    fake.close()


# ------------------------------------------------------------------------------ PyPI


def test_uvx_reads_uv_environment_then_uv_toml(
    index: FakeRegistry, env: dict[str, str], tmp_path: Path
) -> None:
    ref = ref_of("uvx", "notes-server")
    assert pypi_settings(ref, env=env).url == "https://pypi.org/simple"

    user = Path(env["XDG_CONFIG_HOME"]) / "uv" / "uv.toml"
    user.parent.mkdir()
    user.write_text(f'[[index]]\nurl = "{index.url}/simple"\ndefault = true\n')
    assert pypi_settings(ref, env=env).source == str(user)

    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "p"\n[tool.uv]\nindex-url = "{index.url}/project"\n'
    )
    assert pypi_settings(ref, where=project / "sub", env=env).url == f"{index.url}/project"

    got = resolve(ref, env={**env, "UV_INDEX_URL": f"{index.url}/simple"})
    assert got.version == "0.9.0" and got.files == tuple(sorted(FILES.items()))
    both = {**env, "UV_INDEX_URL": "https://wrong.invalid/simple", "UV_DEFAULT_INDEX": index.url}
    assert pypi_settings(ref, env=both).url == index.url
    # A flag in the command beats the environment.
    flagged = ref_of("uvx", "--default-index", f"{index.url}/flag", "notes-server")
    assert pypi_settings(flagged, env=both).url == f"{index.url}/flag"
    named = ref_of("uvx", "--index", f"corp={index.url}/named", "notes-server")
    assert pypi_settings(named, env=both).url == f"{index.url}/named"


def test_pipx_reads_pip_environment_then_pip_conf(
    index: FakeRegistry, env: dict[str, str], tmp_path: Path
) -> None:
    ref = ref_of("pipx", "run", "notes-server")
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {index.url}/simple\ntimeout = 3\n")
    with_conf = {**env, "PIP_CONFIG_FILE": str(conf)}
    assert resolve(ref, env=with_conf).version == "0.9.0"
    assert index.requests == ["/simple/notes-server/"]
    assert pypi_settings(ref, env={**with_conf, "PIP_INDEX_URL": "https://m.test/s"}).url == (
        "https://m.test/s"
    )
    # uv's settings are not pip's: pipx ignores UV_INDEX_URL, uvx ignores PIP_INDEX_URL.
    assert pypi_settings(ref, env={**env, "UV_INDEX_URL": "https://uv.test/s"}).source == "default"
    uvx = ref_of("uvx", "notes-server")
    assert pypi_settings(uvx, env={**env, "PIP_INDEX_URL": "https://p.test/s"}).source == "default"


def test_an_index_that_is_not_http_is_refused_clearly(env: dict[str, str]) -> None:
    ref = ref_of("uvx", "notes-server")
    with pytest.raises(PackageError, match=r"URL \(from UV_INDEX_URL\) is not an http\(s\) URL"):
        resolve(ref, env={**env, "UV_INDEX_URL": "file:///opt/pypi/simple"})


def test_a_broken_uv_toml_is_an_error(env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "uv.toml"
    bad.write_text("index-url = [unclosed\n")
    with pytest.raises(PackageError, match="is not valid TOML"):
        pypi_settings(ref_of("uvx", "notes-server"), env={**env, "UV_CONFIG_FILE": str(bad)})


# ------------------------------------------------------------------------------- npm


def test_npmrc_project_user_and_global(
    index: FakeRegistry, env: dict[str, str], tmp_path: Path
) -> None:
    ref = ref_of("npx", "-y", "@acme/notes")
    glob = tmp_path / "global-npmrc"
    glob.write_text("registry=https://global.test/\n")
    env = {**env, "NPM_CONFIG_GLOBALCONFIG": str(glob)}
    assert npm_settings(ref, env=env).url == "https://global.test"

    user = Path(env["HOME"]) / ".npmrc"
    user.write_text("; the user's file\nregistry = https://user.test/\n")
    assert npm_settings(ref, env=env).url == "https://user.test"

    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text("{}")
    (project / ".npmrc").write_text(
        "@acme:registry=${ACME_REGISTRY}\n"
        f"//127.0.0.1:{index.url.rsplit(':', 1)[1]}/:_authToken=${{ACME_TOKEN}}\n"
    )
    env = {**env, "ACME_REGISTRY": index.url, "ACME_TOKEN": "s3cret"}
    settings = npm_settings(ref, where=project, env=env)
    assert (settings.url, settings.source) == (index.url, str(project / ".npmrc"))
    got = resolve(ref, where=project, env=env)
    assert got.version == "1.3.0"
    assert index.headers[-1]["authorization"] == "Bearer s3cret"
    # An unscoped package ignores the scope's registry; the environment beats the files.
    other = ref_of("npx", "left-pad-mcp")
    assert npm_settings(other, where=project, env=env).url == "https://user.test"
    assert npm_settings(other, env={**env, "npm_config_registry": "https://e.test"}).url == (
        "https://e.test"
    )


# ----------------------------------------------------------------------- CA and TLS


@pytest.fixture
def tls_index(tmp_path: Path, index: FakeRegistry) -> tuple[FakeRegistry, Path]:
    ca, cert, key = make_ca(tmp_path)
    serve_tls(index, cert, key)
    return index, ca


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"])
def test_a_registry_behind_an_intercepting_ca_is_trusted_through_the_usual_variables(
    tls_index: tuple[FakeRegistry, Path], env: dict[str, str], variable: str
) -> None:
    index, ca = tls_index
    ref = ref_of("uvx", "notes-server")
    with pytest.raises(PackageError, match="cannot reach the package index") as caught:
        resolve(ref, env={**env, "UV_INDEX_URL": f"{index.url}/simple"}, timeout=5)
    assert caught.value.advice is not None and "SSL_CERT_FILE" in caught.value.advice
    trusted = {**env, "UV_INDEX_URL": f"{index.url}/simple", variable: str(ca)}
    assert resolve(ref, env=trusted, timeout=5).version == "0.9.0"


def test_npm_cafile_is_trusted(
    tls_index: tuple[FakeRegistry, Path], env: dict[str, str], tmp_path: Path
) -> None:
    index, ca = tls_index
    (Path(env["HOME"]) / ".npmrc").write_text(f"registry={index.url}/\ncafile={ca}\n")
    assert resolve(ref_of("npx", "@acme/notes"), env=env, timeout=5).version == "1.3.0"


def test_a_ca_variable_naming_a_missing_file_is_an_error(
    index: FakeRegistry, env: dict[str, str], tmp_path: Path
) -> None:
    broken = {**env, "UV_INDEX_URL": f"{index.url}/simple", "SSL_CERT_FILE": str(tmp_path / "x")}
    with pytest.raises(PackageError, match="SSL_CERT_FILE names a CA file that cannot be read"):
        resolve(ref_of("uvx", "notes-server"), env=broken)


def test_proxy_variables_are_honoured(
    index: FakeRegistry, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fake answers as a forward proxy: it is asked for the absolute URL.
    target = "http://index.invalid/simple/notes-server/"
    index.routes[target] = index.routes["/simple/notes-server/"]
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", index.url)
    got = resolve(
        ref_of("uvx", "notes-server"), env={**env, "UV_INDEX_URL": "http://index.invalid/simple"}
    )
    assert got.version == "0.9.0"
    assert index.requests == [target]
