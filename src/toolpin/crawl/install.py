"""Install a package candidate into a scratch directory, without running its install
scripts, and say how to start it. Only with ``--allow-exec``: installing and starting a
package found in a public listing runs a stranger's code (in the probe sandbox).

* npm: ``npm install --ignore-scripts --no-audit --no-fund --prefix <scratch>/pkg
  <name>@<version>`` (``--registry $TOOLPIN_NPM_REGISTRY`` when set), with the user's
  ``--userconfig`` and ``--globalconfig`` named explicitly (``--prefix`` would otherwise
  stop npm reading the global npmrc and the ``cafile`` it names), the project ``.npmrc``
  of the crawl's directory copied into the prefix, and the shared download cache
  (:mod:`toolpin.crawl.caches`). The server is the package's declared ``bin`` (the one named
  like the package, or the only one, or the first by name), else its ``main``, run with
  ``node``. The installed version and the lockfile's ``integrity`` are recorded.
* PyPI: ``python -m pip install --only-binary=:all: --target <scratch>/site
  <name>==<version>`` (wheels only, so no build script runs; ``--index-url
  $TOOLPIN_PYPI_URL/simple`` when set), with ``--report`` for the wheel's sha256. The
  server is the package's console script named like the package (or the only one), run
  with this Python and ``PYTHONPATH`` set to the target.

Installs run in parallel (as many as the crawl's ``--concurrency``): each has its own
prefix and private npm cache directory; only the content-addressed stores are shared. Each
install runs in its own process group, killed after ``--install-timeout`` seconds, and its
stderr is kept (the last :data:`STDERR_KEEP_BYTES`) so a failure says why
(:func:`toolpin.crawl.hint.stderr_hint`).
"""

from __future__ import annotations

import configparser
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolpin.crawl.caches import SharedCaches
from toolpin.crawl.candidates import PackageCoords
from toolpin.crawl.hint import InstallFailed, stderr_hint
from toolpin.crawl.hostconfig import HostSetup
from toolpin.errors import PackageError
from toolpin.packages.config import ENV_NPM_REGISTRY, ENV_PYPI_URL

DEFAULT_INSTALL_TIMEOUT: Final = 300.0
STDERR_KEEP_BYTES: Final = 16 << 10
_NPM_NAME: Final = re.compile(r"(?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*")
_PYPI_NAME: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_VERSION: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}")


@dataclass(frozen=True)
class Installed:
    """How to start an installed package."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    package: PackageCoords


def run_install_step(
    cmd: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float, what: str
) -> None:
    """Run one installer command; :class:`InstallFailed` (with the stderr hint) when it
    fails or runs out of time, :class:`PackageError` when the program is missing."""
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=dict(env),
                cwd=cwd,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise PackageError(f"{what.split()[0]} is not installed") from None
        code: int | None = None
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        if code == 0:
            return
        size = err.seek(0, os.SEEK_END)
        err.seek(max(0, size - STDERR_KEEP_BYTES))
        hint = stderr_hint(err.read().decode("utf-8", "replace"))
    if code is None:
        raise InstallFailed(f"{what} did not finish within {timeout:g}s", hint=hint)
    raise InstallFailed(f"{what} failed (exit code {code})", hint=hint)


def _inside(base: Path, relative: str) -> Path:
    target = (base / relative).resolve()
    if not target.is_relative_to(base.resolve()):
        raise PackageError("the package points its command outside itself")
    if not target.is_file():
        raise PackageError("the package's command file is missing")
    return target


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _install_spec(coords: PackageCoords, name: re.Pattern[str], what: str, sep: str) -> str:
    """What the installer is asked for (``name``, or ``name`` ``sep`` ``version``), once
    the name matches ``name`` and the version is plain (``what`` names the ecosystem)."""
    if not name.fullmatch(coords.name):
        raise PackageError(f"the {what} package name is not a valid name")
    if coords.version is not None and not _VERSION.fullmatch(coords.version):
        raise PackageError(f"the {what} package version is not a plain version")
    return f"{coords.name}{sep}{coords.version}" if coords.version else coords.name


def install_npm(
    coords: PackageCoords,
    scratch: Path,
    *,
    env: Mapping[str, str],
    timeout: float = DEFAULT_INSTALL_TIMEOUT,
    registry: str | None = None,
    setup: HostSetup | None = None,
    caches: SharedCaches | None = None,
) -> Installed:
    """Install an npm package; see the module doc."""
    spec = _install_spec(coords, _NPM_NAME, "npm", "@")
    prefix = scratch / "pkg"
    prefix.mkdir(parents=True, exist_ok=True)
    cmd = [
        "npm",
        "install",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
        "--loglevel=error",
        "--prefix",
        str(prefix),
        "--cache",
        str(caches.npm_cache_for(scratch) if caches else scratch / "npm-cache"),
    ]
    if setup is not None:
        cmd += setup.npm_install_flags()
        if setup.npm_projectconfig is not None:
            shutil.copyfile(setup.npm_projectconfig, prefix / ".npmrc")
    if registry:
        cmd += ["--registry", registry]
    cmd += ["--", spec]
    run_install_step(cmd, env=env, cwd=prefix, timeout=timeout, what="npm install")
    package_dir = prefix / "node_modules" / coords.name
    manifest = _read_json(package_dir / "package.json")
    if not isinstance(manifest, dict):
        raise PackageError("the installed package has no readable package.json")
    entry = _npm_entry(manifest, coords.name)
    script = _inside(package_dir, entry)
    version = manifest.get("version")
    lock = _read_json(prefix / "package-lock.json")
    integrity = None
    if isinstance(lock, dict):
        record = (lock.get("packages") or {}).get(f"node_modules/{coords.name}")
        if isinstance(record, dict) and isinstance(record.get("integrity"), str):
            integrity = record["integrity"]
    installed = PackageCoords(
        "npm",
        coords.name,
        version if isinstance(version, str) and _VERSION.fullmatch(version) else coords.version,
        integrity if integrity and len(integrity) <= 256 else None,
    )
    return Installed(("node", str(script)), {}, installed)


def _npm_entry(manifest: Mapping[str, Any], name: str) -> str:
    bin_ = manifest.get("bin")
    if isinstance(bin_, str) and bin_:
        return bin_
    if isinstance(bin_, dict):
        scripts = {k: v for k, v in bin_.items() if isinstance(k, str) and isinstance(v, str) and v}
        base = name.rsplit("/", 1)[-1]
        if base in scripts:
            return scripts[base]
        if scripts:
            return scripts[sorted(scripts)[0]]
    main = manifest.get("main")
    return main if isinstance(main, str) and main else "index.js"


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def install_pypi(
    coords: PackageCoords,
    scratch: Path,
    *,
    env: Mapping[str, str],
    timeout: float = DEFAULT_INSTALL_TIMEOUT,
    index: str | None = None,
) -> Installed:
    """Install a PyPI package (wheels only); see the module doc."""
    spec = _install_spec(coords, _PYPI_NAME, "PyPI", "==")
    target = scratch / "site"
    report = scratch / "pip-report.json"
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-input",
        "--only-binary=:all:",
        "--target",
        str(target),
        "--report",
        str(report),
    ]
    if index:
        cmd += ["--index-url", index.rstrip("/") + "/simple"]
    cmd += [spec]
    run_install_step(cmd, env=env, cwd=scratch, timeout=timeout, what="pip install")
    wanted = _normalise(coords.name)
    version, digest = coords.version, None
    data = _read_json(report)
    for item in data.get("install", []) if isinstance(data, dict) else []:
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or _normalise(str(meta.get("name", ""))) != wanted:
            continue
        if isinstance(meta.get("version"), str) and _VERSION.fullmatch(meta["version"]):
            version = meta["version"]
        archive = (item.get("download_info") or {}).get("archive_info") or {}
        sha = (archive.get("hashes") or {}).get("sha256")
        if isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha):
            digest = f"sha256:{sha}"
    module, func = _console_script(target, wanted)
    # Both names matched _ENTRY (ASCII identifiers and dots), so the line is plain code.
    code_line = f"import sys; import {module} as _m; sys.exit(_m.{func}())"
    argv = (sys.executable, "-s", "-c", code_line)
    return Installed(
        argv, {"PYTHONPATH": str(target)}, PackageCoords("pypi", coords.name, version, digest)
    )


_ENTRY: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\s*:\s*([A-Za-z_][A-Za-z0-9_.]*)")


def _console_script(target: Path, wanted: str) -> tuple[str, str]:
    scripts: dict[str, tuple[str, str]] = {}
    for info in target.glob("*.dist-info"):
        dist = _normalise(info.name.removesuffix(".dist-info").rsplit("-", 1)[0])
        if dist != wanted:
            continue
        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        try:
            parser.read(info / "entry_points.txt", encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        if parser.has_section("console_scripts"):
            for name, value in parser.items("console_scripts"):
                match = _ENTRY.fullmatch(value.split("[", 1)[0].strip())
                if match:
                    scripts[name] = (match.group(1), match.group(2))
    if not scripts:
        raise PackageError("the PyPI package declares no console script")
    for name, entry in scripts.items():
        if _normalise(name) == wanted:
            return entry
    if len(scripts) == 1:
        return next(iter(scripts.values()))
    raise PackageError("the PyPI package has several console scripts; cannot tell which starts it")


def install(
    coords: PackageCoords,
    scratch: Path,
    *,
    env: Mapping[str, str],
    timeout: float = DEFAULT_INSTALL_TIMEOUT,
    environ: Mapping[str, str] | None = None,
    setup: HostSetup | None = None,
    caches: SharedCaches | None = None,
) -> Installed:
    """Install ``coords`` (npm or PyPI) into ``scratch``; registry URLs come from
    ``TOOLPIN_NPM_REGISTRY`` / ``TOOLPIN_PYPI_URL`` in ``environ`` (default: ours).
    ``env`` is the installer's environment (the caller adds ``setup``'s variables and the
    ``caches`` environment); ``setup`` adds npm's configuration files."""
    where = os.environ if environ is None else environ
    if coords.ecosystem == "npm":
        return install_npm(
            coords,
            scratch,
            env=env,
            timeout=timeout,
            registry=where.get(ENV_NPM_REGISTRY),
            setup=setup,
            caches=caches,
        )
    if coords.ecosystem == "pypi":
        return install_pypi(
            coords, scratch, env=env, timeout=timeout, index=where.get(ENV_PYPI_URL)
        )
    raise PackageError("no sandboxed runner for this kind of package")
