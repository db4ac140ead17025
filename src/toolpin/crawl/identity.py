"""Package identity of a server from a local config: which registry release it runs.

A config entry such as ``npx -y @modelcontextprotocol/server-memory`` or ``uvx
mcp-server-time`` runs whatever the registry serves on that start. Before probing it, the
crawler reads the command with the team lock's own code (:func:`toolpin.packages.
detect_package`, :func:`~toolpin.packages.resolve`, :func:`~toolpin.packages.pin_argv`):

1. the package and what the command asks for (a version, a tag, nothing);
2. the exact release the registry serves for it, with its digest (npm ``dist.integrity``,
   every file's sha256 for PyPI, the ``sha256:`` digest written in a ``docker run
   image@sha256:...`` command);
3. the command rewritten to run exactly that release, so what is recorded is what ran;
4. for ``npx`` and ``uvx``, an install-only command (the same runner, the pinned release,
   ``node -e 0`` / ``python -c 0`` instead of the server) that the crawler runs first
   under ``--install-timeout``, so ``--timeout`` counts from the server's start, not the
   download.

Anything short of that is said, never guessed: a version range, a registry that cannot be
reached or a form that cannot be held at a version leaves the command as written and the
package recorded by name only (``note`` says why); a spec that is no registry package at
all (a URL, ``git+``, a path) is probed as written with no package recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from toolpin.crawl.candidates import PackageCoords
from toolpin.errors import PackageError
from toolpin.packages import PackageRef, ResolvedPackage, detect_package, pin_argv, resolve

RESOLVE_TIMEOUT: Final = 15.0
MAX_FILES: Final = 64
"""Most files of a PyPI release recorded (a release with more is recorded by version)."""


@dataclass(frozen=True)
class ConfigPackage:
    """What :func:`identify` found for one config command."""

    coords: PackageCoords
    """Ecosystem and name always; exact version and digest when resolved and pinned."""
    argv: tuple[str, ...]
    """The command to probe (pinned to ``coords.version`` when that was possible)."""
    prefetch: tuple[str, ...] | None = None
    """An install-only command to run first, when the runner has one."""
    note: str | None = None
    """Why the version or digest is not recorded (fixed text), when it is not."""


def coords_of(resolved: ResolvedPackage) -> PackageCoords:
    """The record form of a resolved release."""
    files = resolved.files if len(resolved.files) <= MAX_FILES else ()
    digest = resolved.integrity
    if resolved.ecosystem == "oci":
        digest = resolved.version
    return PackageCoords(
        "pypi" if resolved.ecosystem == "pypi" else resolved.ecosystem,
        resolved.name,
        resolved.version,
        digest,
        files,
    )


def identify(
    argv: Sequence[str],
    *,
    timeout: float = RESOLVE_TIMEOUT,
    where: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> ConfigPackage | None:
    """The package ``argv`` runs, resolved and pinned (see the module doc); ``None`` when
    the command runs no registry package. ``where`` and ``env`` are the folder and the
    environment the user's configuration is read from (a project ``.npmrc`` or
    ``uv.toml``; the registry, index, CA and proxy settings), as for ``toolpin lock``."""
    try:
        ref = detect_package(argv)
    except PackageError:
        return None
    if ref is None:
        return None
    name_only = PackageCoords(ref.ecosystem, ref.name)
    try:
        resolved = resolve(ref, timeout=timeout, where=where, env=env)
    except PackageError as exc:
        return ConfigPackage(name_only, tuple(argv), note=f"not resolved: {exc.message}")
    coords = coords_of(resolved)
    if ref.ecosystem == "oci":
        return ConfigPackage(coords, tuple(argv))
    try:
        pinned = pin_argv(argv, ref, resolved.version)
    except PackageError as exc:
        return ConfigPackage(name_only, tuple(argv), note=f"not pinned: {exc.message}")
    if pinned is None:
        return ConfigPackage(
            name_only, tuple(argv), note="this form of the command cannot be held at a version"
        )
    return ConfigPackage(coords, tuple(pinned), _prefetch(pinned, ref, resolved.version))


def _prefetch(pinned: Sequence[str], ref: PackageRef, version: str) -> tuple[str, ...] | None:
    """The install-only form of ``pinned`` (``npx`` and ``uvx`` only)."""
    index = ref.arg_index
    spec_text = pinned[index]
    if ref.runner == "npx":
        head = list(pinned[:index])
        if (
            not spec_text.startswith("--package=")
            and index > 1
            and pinned[index - 1]
            in (
                "--package",
                "-p",
            )
        ):
            head = head[:-1]
        if not any(arg in ("-y", "--yes") for arg in head):
            head.insert(1, "--yes")
        return (*head, "--package", f"{ref.name}@{version}", "--", "node", "-e", "0")
    if ref.runner == "uvx":
        head = list(pinned[:index])
        if not spec_text.startswith("--from=") and index > 1 and pinned[index - 1] == "--from":
            head = head[:-1]
        return (*head, "--from", f"{ref.name}{ref.extras}=={version}", "python", "-c", "0")
    return None
