"""The user's package set-up: which registry or index a runner will fetch from, and how.

Package pinning must ask the registry the runner itself will use, or it pins the wrong
bytes (or nothing, behind a mirror). This module reads the same configuration the
runners read, in their order of precedence (first found wins):

npm (``npx``, ``npm exec``, ...) — the ``registry`` (or ``@scope:registry``) setting:
  ``TOOLPIN_NPM_REGISTRY``; a ``--registry`` flag in the command; ``npm_config_registry``
  / ``NPM_CONFIG_REGISTRY``; the project ``.npmrc`` (the server's folder and its
  parents); the user npmrc (``NPM_CONFIG_USERCONFIG`` or ``~/.npmrc``); the global npmrc
  (``NPM_CONFIG_GLOBALCONFIG`` or ``<prefix>/etc/npmrc``, prefix from
  ``NPM_CONFIG_PREFIX`` or beside ``node``); else ``https://registry.npmjs.org``. The same
  files give ``cafile``, ``https-proxy`` / ``proxy``, ``strict-ssl`` and the registry's
  ``//host/:_authToken``. ``${VAR}`` in a value is expanded as npm does.

PyPI through ``uvx`` / ``uv tool run`` — ``TOOLPIN_PYPI_INDEX``; an ``--index``,
  ``--default-index`` or ``--index-url`` flag; ``UV_DEFAULT_INDEX``, ``UV_INDEX_URL``;
  ``uv.toml`` (``UV_CONFIG_FILE``, else the project's ``uv.toml`` or ``pyproject.toml``
  ``[tool.uv]``, the user's ``~/.config/uv/uv.toml``, the system's ``/etc/uv/uv.toml``):
  a default ``[[index]]``, or ``index-url``; else ``https://pypi.org/simple``.

PyPI through ``pipx run`` — ``TOOLPIN_PYPI_INDEX``; ``--index-url``; ``PIP_INDEX_URL``;
  ``pip.conf`` (``PIP_CONFIG_FILE``; else the site, user and global files, in pip's
  order), ``index-url`` of ``[install]`` or ``[global]``; else PyPI.

``TOOLPIN_PYPI_URL`` (a PyPI-like base URL, its index at ``/simple``) is still read after
``TOOLPIN_PYPI_INDEX``. The CA files of :func:`toolpin.util.net.tls_context` apply to
every registry request, plus npm's ``cafile`` for npm; proxies come from the standard
variables (``HTTPS_PROXY``, ``NO_PROXY``, ...) and, for npm, from its settings.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from toolpin.errors import PackageError
from toolpin.packages.spec import PackageRef

ENV_NPM_REGISTRY: Final = "TOOLPIN_NPM_REGISTRY"
ENV_PYPI_INDEX: Final = "TOOLPIN_PYPI_INDEX"
ENV_PYPI_URL: Final = "TOOLPIN_PYPI_URL"
DEFAULT_NPM_REGISTRY: Final = "https://registry.npmjs.org"
DEFAULT_PYPI_INDEX: Final = "https://pypi.org/simple"
MAX_CONFIG_BYTES: Final = 1 << 20
_NPM_VAR: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class RegistrySettings:
    """Where and how to ask one registry (or index)."""

    url: str
    """npm: the registry base URL; PyPI: the simple index URL (no trailing slash)."""
    source: str
    """Where the URL was configured (for messages): ``default``, ``the command``, a
    variable's name or a file path."""
    cafile: str | None = None
    """An extra CA file for this registry (npm's ``cafile``)."""
    proxy: str | None = None
    """A proxy URL the runner's own settings name (npm ``https-proxy``/``proxy``)."""
    token: str | None = None
    """A bearer token for the registry (npm ``//host/:_authToken``); never printed."""
    verify: bool = True
    """``False`` only when the runner's settings say ``strict-ssl=false``."""


def _read_text(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_CONFIG_BYTES:
        raise PackageError(f"the package configuration {path} is larger than 1 MiB")
    return data.decode("utf-8", "replace")


def _parents(where: Path | None) -> Iterator[Path]:
    if where is None:
        return
    here = where.absolute()
    yield here
    yield from here.parents


# ---------------------------------------------------------------------------- npm


def _npmrc(text: str, env: Mapping[str, str]) -> dict[str, str]:
    """An npmrc as ``key -> value`` (ini lines; ``;``/``#`` comments; ``${VAR}`` expanded)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in ";#" or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key] = _NPM_VAR.sub(lambda m: env.get(m.group(1), ""), value)
    return out


def npm_config_files(where: Path | None, env: Mapping[str, str]) -> list[Path]:
    """The npmrc files npm reads for a command started in ``where``, strongest first."""
    files: list[Path] = []
    for folder in _parents(where):
        candidate = folder / ".npmrc"
        if candidate.is_file():
            files.append(candidate)
            break
        if (folder / "package.json").is_file() or (folder / ".git").exists():
            break
    user = env.get("NPM_CONFIG_USERCONFIG") or env.get("npm_config_userconfig")
    home = env.get("HOME")
    files.append(Path(user) if user else Path(home or os.path.expanduser("~")) / ".npmrc")
    glob = env.get("NPM_CONFIG_GLOBALCONFIG") or env.get("npm_config_globalconfig")
    if glob:
        files.append(Path(glob))
    else:
        prefix = env.get("NPM_CONFIG_PREFIX") or env.get("npm_config_prefix")
        if not prefix:
            node = shutil.which("node", path=env.get("PATH"))
            if node:
                prefix = str(Path(os.path.realpath(node)).parent.parent)
        if prefix:
            files.append(Path(prefix) / "etc" / "npmrc")
    return [f for f in files if f.is_file()]


def _npm_setting(key: str, env: Mapping[str, str], files: list[dict[str, str]]) -> str | None:
    for name in (
        f"npm_config_{key.replace('-', '_')}",
        f"NPM_CONFIG_{key.replace('-', '_').upper()}",
    ):
        if env.get(name):
            return env[name]
    for settings in files:
        if settings.get(key):
            return settings[key]
    return None


def npm_settings(
    ref: PackageRef, *, where: Path | None = None, env: Mapping[str, str] | None = None
) -> RegistrySettings:
    """The npm registry ``ref`` is fetched from, with its CA file, proxy and token."""
    env = os.environ if env is None else env
    paths = npm_config_files(where, env)
    files = [_npmrc(_read_text(p) or "", env) for p in paths]
    scope = ref.name.split("/", 1)[0] if ref.name.startswith("@") else None
    url, source = None, "default"
    if env.get(ENV_NPM_REGISTRY):
        url, source = env[ENV_NPM_REGISTRY], ENV_NPM_REGISTRY
    elif ref.registry:
        url, source = ref.registry, "the command"
    else:
        url, source = _npm_registry(scope, env, paths, files)
    url = (url or DEFAULT_NPM_REGISTRY).rstrip("/")
    _check_url(url, source)
    cafile = _npm_setting("cafile", env, files)
    proxy = _npm_setting("https-proxy", env, files) or _npm_setting("proxy", env, files)
    strict = (_npm_setting("strict-ssl", env, files) or "true").lower() != "false"
    return RegistrySettings(
        url, source, cafile=cafile, proxy=proxy, token=_npm_token(url, files), verify=strict
    )


def _npm_registry(
    scope: str | None, env: Mapping[str, str], paths: list[Path], files: list[dict[str, str]]
) -> tuple[str | None, str]:
    """A scope's own registry (any file) first, then ``registry``: environment, files."""
    if scope is not None:
        for path, settings in zip(paths, files, strict=True):
            if settings.get(f"{scope}:registry"):
                return settings[f"{scope}:registry"], str(path)
    for name in ("npm_config_registry", "NPM_CONFIG_REGISTRY"):
        if env.get(name):
            return env[name], name
    for path, settings in zip(paths, files, strict=True):
        if settings.get("registry"):
            return settings["registry"], str(path)
    return None, "default"


def _npm_token(url: str, files: list[dict[str, str]]) -> str | None:
    """The ``//host/path/:_authToken`` whose path is the longest prefix of ``url``."""
    parts = urlsplit(url)
    target = f"//{parts.netloc}{parts.path.rstrip('/')}/"
    best: tuple[int, str] | None = None
    for settings in reversed(files):  # stronger files override weaker ones
        for key, value in settings.items():
            if not key.endswith(":_authToken") or not key.startswith("//"):
                continue
            prefix = key[: -len(":_authToken")]
            prefix = prefix if prefix.endswith("/") else prefix + "/"
            if target.startswith(prefix) and (best is None or len(prefix) >= best[0]):
                best = (len(prefix), value)
    return best[1] if best else None


# ---------------------------------------------------------------------------- PyPI


def _uv_files(where: Path | None, env: Mapping[str, str]) -> list[tuple[Path, bool]]:
    """``(file, is pyproject)`` uv reads, strongest first."""
    if env.get("UV_NO_CONFIG"):
        return []
    if env.get("UV_CONFIG_FILE"):
        return [(Path(env["UV_CONFIG_FILE"]), False)]
    files: list[tuple[Path, bool]] = []
    for folder in _parents(where):
        if (folder / "uv.toml").is_file():
            files.append((folder / "uv.toml", False))
            break
        if (folder / "pyproject.toml").is_file() and "[tool.uv" in (
            _read_text(folder / "pyproject.toml") or ""
        ):
            files.append((folder / "pyproject.toml", True))
            break
    config_home = env.get("XDG_CONFIG_HOME") or str(
        Path(env.get("HOME") or os.path.expanduser("~")) / ".config"
    )
    files.append((Path(config_home) / "uv" / "uv.toml", False))
    files.extend(
        (Path(d) / "uv" / "uv.toml", False)
        for d in (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")
    )
    files.append((Path("/etc/uv/uv.toml"), False))
    return [(f, p) for f, p in files if f.is_file()]


def _uv_index(path: Path, pyproject: bool) -> str | None:
    text = _read_text(path)
    if text is None:
        return None
    try:
        doc: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise PackageError(f"{path} is not valid TOML; uv would refuse it too") from None
    if pyproject:
        doc = doc.get("tool", {}).get("uv", {}) if isinstance(doc.get("tool"), dict) else {}
    if not isinstance(doc, dict):
        return None
    indexes = doc.get("index")
    if isinstance(indexes, list):
        for index in indexes:
            if (
                isinstance(index, dict)
                and index.get("default")
                and isinstance(index.get("url"), str)
            ):
                return str(index["url"])
        # uv searches the named indexes before the default one.
        for index in indexes:
            if (
                isinstance(index, dict)
                and not index.get("explicit")
                and isinstance(index.get("url"), str)
            ):
                return str(index["url"])
    value = doc.get("index-url")
    return value if isinstance(value, str) else None


def pip_config_files(env: Mapping[str, str]) -> list[Path]:
    """The pip.conf files pip reads, strongest first."""
    if env.get("PIP_CONFIG_FILE"):
        return [Path(env["PIP_CONFIG_FILE"])] if env["PIP_CONFIG_FILE"] != os.devnull else []
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    files: list[Path] = []
    if env.get("VIRTUAL_ENV"):
        files.append(Path(env["VIRTUAL_ENV"]) / "pip.conf")
    files += [config_home / "pip" / "pip.conf", home / ".pip" / "pip.conf"]
    files.extend(
        Path(d) / "pip" / "pip.conf" for d in (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")
    )
    files.append(Path("/etc/pip.conf"))
    return [f for f in files if f.is_file()]


def _pip_index(path: Path) -> str | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(_read_text(path) or "", source=str(path))
    except configparser.Error:
        raise PackageError(f"{path} is not a valid pip configuration") from None
    for section in ("install", "global"):
        if parser.has_option(section, "index-url"):
            return parser.get(section, "index-url").split()[0]
    return None


def pypi_settings(
    ref: PackageRef, *, where: Path | None = None, env: Mapping[str, str] | None = None
) -> RegistrySettings:
    """The simple index ``ref`` is fetched from (see the module doc for the order)."""
    env = os.environ if env is None else env
    url, source = _pypi_index(ref, where, env)
    url = url.rstrip("/")
    _check_url(url, source)
    return RegistrySettings(url, source)


def _pypi_index(ref: PackageRef, where: Path | None, env: Mapping[str, str]) -> tuple[str, str]:
    if env.get(ENV_PYPI_INDEX):
        return env[ENV_PYPI_INDEX], ENV_PYPI_INDEX
    if env.get(ENV_PYPI_URL):
        return env[ENV_PYPI_URL].rstrip("/") + "/simple", ENV_PYPI_URL
    if ref.registry:
        return ref.registry, "the command"
    if ref.runner.startswith("pipx"):
        if env.get("PIP_INDEX_URL"):
            return env["PIP_INDEX_URL"].split()[0], "PIP_INDEX_URL"
        for path in pip_config_files(env):
            found = _pip_index(path)
            if found:
                return found, str(path)
        return DEFAULT_PYPI_INDEX, "default"
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if env.get(name):
            return env[name].split()[0], name
    for path, pyproject in _uv_files(where, env):
        found = _uv_index(path, pyproject)
        if found:
            return found, str(path)
    return DEFAULT_PYPI_INDEX, "default"


def _check_url(url: str, source: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        where = "" if source == "default" else f" (from {source})"
        raise PackageError(
            f"the package registry URL{where} is not an http(s) URL",
            advice="toolpin reads registries over HTTP(S) only; a file:// index cannot be pinned.",
        )
