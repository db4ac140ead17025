"""How a client starts toolpin: the one ``--launcher`` choice of ``wrap``, ``policy`` and
``install-links``, and the check that the chosen launcher really starts toolpin.

The choices (:data:`LAUNCHER_CHOICES`, or an absolute path):

``path`` (the default)
    the installed ``toolpin`` by its absolute path. Desktop clients (Claude Desktop, the
    IDEs started from a dock) do not inherit the shell's ``PATH``, so an absolute path is
    the one form that starts everywhere.
``toolpin``
    a bare ``toolpin``, found on the ``PATH`` of whatever starts it (a terminal client, or
    machines where toolpin is installed in the same place).
``uvx``
    ``uvx toolpin@<this version>``: the same exact toolpin fetched from PyPI on every
    machine. Refused (like any launcher that does not start) until that version is
    published.
``/abs/path/to/toolpin``
    that file.

Every choice is checked before anything is written: ``LAUNCHER --version`` must print
toolpin's version line. ``--force`` skips the check (say, to write entries for another
machine).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from toolpin import __version__
from toolpin.core.render import visible
from toolpin.errors import ConfigError, InputError

LAUNCHER_CHOICES: Final = ("path", "toolpin", "uvx")
"""The named ``--launcher`` choices; anything else must be an absolute path."""


@dataclass(frozen=True)
class Launcher:
    """The argv that starts toolpin: ``(/abs/toolpin,)`` or ``(uvx, toolpin@<version>)``."""

    argv: tuple[str, ...]
    note: str | None = None
    """Said with the plan, e.g. when the command lives in a checkout's ``.venv``."""


def _is_checkout_venv(command: Path) -> bool:
    """True when ``command`` lives in a project's own virtual environment (``.venv`` next
    to a ``pyproject.toml`` or ``.git``): it breaks when that checkout moves or goes."""
    for parent in command.parents:
        if (parent / "pyvenv.cfg").is_file():
            project = parent.parent
            return (project / "pyproject.toml").exists() or (project / ".git").exists()
    return False


def installed_launcher() -> Launcher:
    """The installed ``toolpin`` command, as an absolute path.

    GUI clients do not inherit the shell's PATH, so a bare ``toolpin`` may not start from
    them. Prefers the user's installed tool (``make install``, ``pipx``, ``uv tool``: on
    PATH or beside this interpreter) over a checkout's ``.venv``, which breaks when the
    checkout moves; falls back to the latter with a note.
    """
    script = "toolpin.exe" if os.name == "nt" else "toolpin"
    beside = Path(sys.executable).parent / script
    found = shutil.which(script)
    candidates = [Path(c).absolute() for c in (found, beside) if c and Path(c).is_file()]
    for candidate in candidates:
        if not _is_checkout_venv(candidate):
            return Launcher((str(candidate),))
    if candidates:
        return Launcher(
            (str(candidates[-1]),),
            note=(
                f"toolpin runs from a checkout's virtual environment ({candidates[-1]}); "
                "wrapped entries stop starting if it moves. `make install` puts a stable "
                "toolpin on PATH."
            ),
        )
    raise ConfigError(
        "cannot find the installed toolpin command",
        advice="Install toolpin from its checkout with `make install`, then run this again.",
    )


def uvx_launcher(version: str = __version__) -> Launcher:
    """``uvx toolpin@<version>`` (uvx's exact-version syntax); uvx by absolute path if found."""
    uvx = shutil.which("uvx")
    return Launcher((str(Path(uvx).absolute()) if uvx else "uvx", f"toolpin@{version}"))


def choose_launcher(choice: str) -> Launcher:
    """The launcher a ``--launcher`` value names (see the module's documentation).

    Raises :class:`InputError` for a value that is neither a choice nor an absolute path.
    """
    if choice == "path":
        return installed_launcher()
    if choice == "uvx":
        return uvx_launcher()
    if choice == "toolpin":
        return Launcher(
            ("toolpin",),
            note=(
                "a bare `toolpin` starts only where it is on the client's PATH; desktop "
                "apps do not read your shell's PATH (the default --launcher path writes "
                "an absolute one)."
            ),
        )
    if not os.path.isabs(choice):
        raise InputError(
            f"--launcher {visible(choice)[:80]!r} is neither {', '.join(LAUNCHER_CHOICES)} "
            "nor an absolute path"
        )
    return Launcher((choice,))


def check_launcher(argv: Sequence[str], *, timeout: float = 60.0) -> None:
    """Refuse a launcher that does not start: ``LAUNCHER --version`` must print toolpin's.

    A client on an entry whose command cannot start shows only "Connection closed", so
    this is checked before anything is written (``--force`` skips it).
    """
    import subprocess

    shown = " ".join(argv)
    by_uvx = len(argv) == 2 and argv[1].startswith("toolpin@")
    try:
        done = subprocess.run(
            [*argv, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise ConfigError(
            f"the launcher `{visible(shown)}` does not start: command not found",
            advice="Choose another --launcher, or pass --force to write it anyway.",
        ) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = "no answer in time" if isinstance(exc, subprocess.TimeoutExpired) else str(exc)
        raise ConfigError(
            f"the launcher `{visible(shown)}` does not start: {visible(why)}",
            advice="Choose another --launcher, or pass --force to write it anyway.",
        ) from None
    if done.returncode == 0 and done.stdout.startswith(b"toolpin"):
        return
    if by_uvx:
        raise ConfigError(
            f"the launcher `{visible(shown)}` does not start toolpin: uvx cannot fetch "
            f"{visible(argv[1])} (exit {done.returncode}); this version is not published on "
            "PyPI, or this machine cannot reach it",
            advice=(
                "Use the default --launcher path (the installed toolpin by absolute path), "
                "or pass --force to write the uvx entry anyway."
            ),
        )
    raise ConfigError(
        f"the launcher `{visible(shown)}` does not start toolpin "
        f"(`{visible(shown)} --version` exited {done.returncode})",
        advice=(
            "Install toolpin from its checkout with `make install` and use the default "
            "--launcher path, or pass --force to write it anyway."
        ),
    )


__all__ = [
    "LAUNCHER_CHOICES",
    "Launcher",
    "check_launcher",
    "choose_launcher",
    "installed_launcher",
    "uvx_launcher",
]
