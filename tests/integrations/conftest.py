"""A toolpin built and installed as a user would get it: wheel and sdist into a fresh venv."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import venv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.shared import build_once

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
"""The test extra's uv: it builds and installs for the fixtures (the same wheel, sdist and
installed files as pip's, in a tenth of the CPU); what a test checks runs pip where a user
would (the Action's install step, ``make install``, pre-commit's hook environment)."""


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path


@dataclass(frozen=True)
class Installed:
    bin: Path
    """The fresh venv's bin directory (its ``toolpin`` and ``python``)."""
    exclusive: bool = False
    """True for a test marked ``installs_into_venv``: it alone uses the venv meanwhile."""

    def env(self, **extra: str) -> dict[str, str]:
        path = f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"
        base = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
        return {**base, "PATH": path, "VIRTUAL_ENV": str(self.bin.parent), **extra}


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The wheel and the sdist, built once per run (every worker shares them)."""

    def build(out: Path) -> None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "build",
                "--installer",
                "uv",
                "--sdist",
                "--wheel",
                "--outdir",
                str(out),
                str(REPO),
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )

    out = build_once(tmp_path_factory, "dist", build)
    (wheel,) = out.glob("toolpin-*.whl")
    (sdist,) = out.glob("toolpin-*.tar.gz")
    return Built(wheel, sdist)


@pytest.fixture
def installed(request: pytest.FixtureRequest, installed_venv: Installed) -> Iterator[Installed]:
    """The run's venv, for one test. Tests read it under a shared lock; a test marked
    ``installs_into_venv`` (the Action's "Install toolpin" step pip-installs the checkout
    into it, which replaces the installed files) holds the lock alone, so no test on
    another worker runs a half-replaced toolpin."""
    exclusive = request.node.get_closest_marker("installs_into_venv") is not None
    with (installed_venv.bin.parent.parent / "use.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield Installed(installed_venv.bin, exclusive=exclusive)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def installed_venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A fresh venv with the wheel installed, built once per run; tests use it through
    :func:`installed` (a test that installs more does so in a folder of its own)."""

    def build(out: Path) -> None:
        root = out / "venv"
        venv.EnvBuilder(with_pip=True, clear=True).create(root)
        subprocess.run(
            [
                str(UV),
                "pip",
                "install",
                "--quiet",
                "--python",
                str(root / "bin" / "python"),
                str(built.wheel),
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )

    return Installed(build_once(tmp_path_factory, "venv", build) / "venv" / "bin")
