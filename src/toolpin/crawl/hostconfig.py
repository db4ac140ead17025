"""The user's package set-up, carried into crawl installs and the probe sandbox.

The sandbox gives each probe a scratch ``HOME`` (:mod:`toolpin.crawl.sandbox`), so tools
that look for their configuration under ``~`` would no longer find it, and the minimal
environment would drop the CA and proxy settings a machine behind a TLS-intercepting proxy
needs. :func:`host_setup` reads, once per crawl, what the crawler's own environment says:

* the variables of :data:`PASS_THROUGH` (CA bundles, proxies, package indexes and their
  ``npm_config_*`` / ``PIP_*`` / ``UV_*`` settings), upper and lower case as set;
* npm's user, global and project configuration files: ``NPM_CONFIG_USERCONFIG`` or
  ``~/.npmrc``; ``NPM_CONFIG_GLOBALCONFIG`` or what ``npm config get globalconfig``
  answers (asked once, only when an npm install or ``npx`` entry needs it); the project
  ``.npmrc`` of the directory the crawl runs in. ``npm install --prefix`` stops reading
  the global file (and the ``cafile`` it names), so installs pass ``--userconfig`` and
  ``--globalconfig`` explicitly, and the project file is copied into the scratch prefix;
* pip's and uv's user files (``PIP_CONFIG_FILE`` or ``~/.config/pip/pip.conf`` /
  ``~/.pip/pip.conf``; ``UV_CONFIG_FILE`` or ``~/.config/uv/uv.toml``), passed by
  variable so they are read under the scratch ``HOME`` too (system files such as
  ``/etc/pip.conf`` and ``/etc/uv/uv.toml`` are read anyway).

Who gets what: installers (npm, pip) and servers from a local config (the user's own
servers, started as their client would) get all of it. A server installed from a public
listing (``--allow-exec``) gets the same *except* a proxy or index URL that carries a
user name or password, which is a credential and is left out (fail closed). Variable
*values* never reach the log; the record lists the names a server was started with.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

CA_VARIABLES: Final = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "PIP_CERT",
    "UV_NATIVE_TLS",
)
PROXY_VARIABLES: Final = (
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "all_proxy",
    "no_proxy",
)
INDEX_VARIABLES: Final = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
    "PIP_CONFIG_FILE",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_CONFIG_FILE",
    "UV_INSECURE_HOST",
    "npm_config_registry",
    "npm_config_cafile",
    "npm_config_ca",
    "npm_config_strict_ssl",
    "npm_config_proxy",
    "npm_config_https_proxy",
    "npm_config_noproxy",
    "npm_config_userconfig",
    "npm_config_globalconfig",
)
PASS_THROUGH: Final = CA_VARIABLES + PROXY_VARIABLES + INDEX_VARIABLES
"""Variables carried into the sandbox (npm's are matched in any case, as npm reads them)."""

_URL_VALUED: Final = frozenset(
    name.lower()
    for name in (
        *PROXY_VARIABLES,
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "UV_INDEX_URL",
        "UV_EXTRA_INDEX_URL",
        "UV_DEFAULT_INDEX",
        "UV_INDEX",
        "npm_config_registry",
        "npm_config_proxy",
        "npm_config_https_proxy",
    )
)
NPM_CONFIG_TIMEOUT: Final = 20.0


def _has_userinfo(value: str) -> bool:
    """Whether any URL in ``value`` (space or comma separated) names a user or password."""
    for part in value.replace(",", " ").split():
        try:
            parts = urlsplit(part if "://" in part else f"http://{part}")
        except ValueError:
            return True  # unparsable: not positively credential-free
        if parts.username is not None or parts.password is not None:
            return True
    return False


def _variables(environ: Mapping[str, str]) -> dict[str, str]:
    exact = frozenset(PASS_THROUGH)
    npm = frozenset(n.lower() for n in INDEX_VARIABLES if n.startswith("npm_config_"))
    return {
        name: value
        for name, value in environ.items()
        if value and (name in exact or name.lower() in npm)
    }


def _first_file(*candidates: Path | None) -> Path | None:
    for path in candidates:
        if path is not None and path.is_file():
            return path
    return None


@dataclass
class HostSetup:
    """What :func:`host_setup` found (see the module doc)."""

    variables: dict[str, str]
    home: Path | None
    npm_userconfig: Path | None
    npm_projectconfig: Path | None
    pip_config: Path | None
    uv_config: Path | None
    _globalconfig: Path | None = None
    _globalconfig_known: bool = False
    _environ: Mapping[str, str] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def npm_globalconfig(self) -> Path | None:
        """npm's global configuration file (asked of npm once, then remembered)."""
        with self._lock:
            if not self._globalconfig_known:
                self._globalconfig = _ask_npm_globalconfig(self._environ)
                self._globalconfig_known = True
            return self._globalconfig

    def sandbox_variables(self, *, trusted: bool, npm: bool = False) -> dict[str, str]:
        """Variables for a probed server's environment; ``trusted`` for a local config's
        own servers (see the module doc). ``npm``: also point npm at the user's and the
        global configuration files (for a server started through ``npx`` and the like)."""
        out: dict[str, str] = {}
        for name, value in self.variables.items():
            if not trusted and name.lower() in _URL_VALUED and _has_userinfo(value):
                continue
            out[name] = value
        if self.pip_config is not None and "PIP_CONFIG_FILE" not in out:
            out["PIP_CONFIG_FILE"] = str(self.pip_config)
        if self.uv_config is not None and "UV_CONFIG_FILE" not in out:
            out["UV_CONFIG_FILE"] = str(self.uv_config)
        if npm and trusted:
            names = {name.lower() for name in out}
            if self.npm_userconfig is not None and "npm_config_userconfig" not in names:
                out["npm_config_userconfig"] = str(self.npm_userconfig)
            globalconfig = self.npm_globalconfig()
            if globalconfig is not None and "npm_config_globalconfig" not in names:
                out["npm_config_globalconfig"] = str(globalconfig)
        return out

    def npm_install_flags(self) -> list[str]:
        """``--userconfig`` / ``--globalconfig`` for an ``npm install --prefix``."""
        flags: list[str] = []
        if self.npm_userconfig is not None:
            flags += ["--userconfig", str(self.npm_userconfig)]
        globalconfig = self.npm_globalconfig()
        if globalconfig is not None:
            flags += ["--globalconfig", str(globalconfig)]
        return flags


def _ask_npm_globalconfig(environ: Mapping[str, str]) -> Path | None:
    for name, value in environ.items():
        if name.lower() == "npm_config_globalconfig" and value:
            return Path(value)
    try:
        done = subprocess.run(
            ["npm", "config", "get", "globalconfig"],
            capture_output=True,
            text=True,
            env=dict(environ),
            timeout=NPM_CONFIG_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    answer = done.stdout.strip().splitlines()
    if done.returncode != 0 or len(answer) != 1 or not answer[0]:
        return None
    path = Path(answer[0])
    return path if path.is_absolute() and path.is_file() else None


def host_setup(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> HostSetup:
    """Read the package set-up from ``environ`` (default: this process's) and ``cwd``."""
    env = dict(os.environ if environ is None else environ)
    home_text = env.get("HOME") or (str(Path.home()) if environ is None else "")
    home = Path(home_text) if home_text else None
    lowered = {k.lower(): v for k, v in env.items() if v}
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else None
    if xdg is None and home is not None:
        xdg = home / ".config"
    userconfig = lowered.get("npm_config_userconfig")
    here = cwd if cwd is not None else Path.cwd()
    return HostSetup(
        variables=_variables(env),
        home=home,
        npm_userconfig=_first_file(
            Path(userconfig) if userconfig else None, home / ".npmrc" if home else None
        ),
        npm_projectconfig=_first_file(here / ".npmrc"),
        pip_config=_first_file(
            Path(env["PIP_CONFIG_FILE"]) if env.get("PIP_CONFIG_FILE") else None,
            xdg / "pip" / "pip.conf" if xdg else None,
            home / ".pip" / "pip.conf" if home else None,
        ),
        uv_config=_first_file(
            Path(env["UV_CONFIG_FILE"]) if env.get("UV_CONFIG_FILE") else None,
            xdg / "uv" / "uv.toml" if xdg else None,
        ),
        _environ=env,
    )
