"""Every command in the README runs as printed and prints what the README shows.

The README's ``console`` blocks are run in order, each ``$ `` line with ``bash`` in a
scratch HOME that stands for ``/home/you`` (the checkout is ``~/toolpin``, ``toolpin`` is
``~/.local/bin/toolpin`` on ``PATH``, as after ``make install``), stdout and stderr
together, the folder carried from one command to the next as a shell would.

What is normalised, on both sides, before the output is compared (and nothing else):

- the scratch HOME's path is written ``/home/you``;
- times: ISO 8601 times (``2026-12-01T11:29:51.115Z``), the backups' file-name times
  (``2026-12-01T12-56-18-406781+00-00``) and durations (``0.1s``, ``14.7s``);
- what a new signing key makes different on every run: the verifier key
  (``origin+<8 hex>+<base64>``), the log's root hash (``root <base64>``), and the hashes
  of log entries and blobs (64 hex characters after ``sha256/``).

A block after ``<!-- readme-test: not run (REASON) -->`` is not run; the README says why
next to it (it installs from the package index, which the suite's own install test does).

Refresh the outputs after a change (they are pasted as printed, then reviewed)::

    PYTHONPATH=src python tests/test_readme.py --write
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SHOWN_HOME = "/home/you"
NOT_RUN = re.compile(r"<!-- readme-test: not run \((.+)\) -->")

NORMALISE = [
    # keys and hashes first: their base64 may hold what looks like a duration ("/90s=")
    (re.compile(r"([a-z0-9.-]+/[a-z0-9/_-]+)\+[0-9a-f]{8}\+[A-Za-z0-9+/=]+"), r"\1+<vkey>"),
    (re.compile(r"^root [A-Za-z0-9+/=]+$", re.M), "root <root>"),
    (re.compile(r"sha256/[0-9a-f]{64}"), "sha256/<hash>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d[:-]\d\d[:-]\d\d([.-]\d+)?(Z|[+-]\d\d[:-]\d\d)?"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)?s\b"), "<secs>"),
]


@dataclass
class Command:
    line: int  # the README line of the `$ ` command
    text: str
    expected: str
    run: bool


def commands(text: str) -> list[Command]:
    """The ``$ `` commands of every ``console`` block, each with the output shown under it."""
    found: list[Command] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```console":
            index += 1
            continue
        run = not (index > 0 and NOT_RUN.search(lines[index - 1]))
        index += 1
        current: Command | None = None
        output: list[str] = []
        while lines[index] != "```":
            line = lines[index]
            if line.startswith("$ "):
                if current is not None:
                    current.expected = "\n".join(output)
                    found.append(current)
                current, output = Command(index + 1, line[2:], "", run), []
            elif current is None:
                raise AssertionError(f"README.md:{index + 1}: output before any `$ ` command")
            else:
                output.append(line)
            index += 1
        if current is not None:
            current.expected = "\n".join(output)
            found.append(current)
        index += 1
    return found


def normalise(text: str) -> str:
    for pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    return text.rstrip("\n")


class Shell:
    """A scratch HOME in which the README's commands run, one after another."""

    def __init__(self, root: Path) -> None:
        self.home = root / "you"
        bin_dir = self.home / ".local" / "bin"
        bin_dir.mkdir(parents=True)
        (self.home / "toolpin").symlink_to(REPO)
        shim = bin_dir / "toolpin"
        shim.write_text(
            f'#!/bin/sh\nPYTHONPATH={REPO / "src"} exec {sys.executable} -m toolpin "$@"\n',
            encoding="utf-8",
        )
        shim.chmod(0o755)
        keep = ("LANG", "LC_ALL", "SSL_CERT_FILE", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY")
        self.env = {k: os.environ[k] for k in keep if k in os.environ}
        self.env |= {
            "HOME": str(self.home),
            "PATH": f"{bin_dir}:{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
            "NO_COLOR": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        self.cwd = self.home

    def run(self, command: str, timeout: float = 120) -> str:
        where = self.home / ".readme-cwd"
        script = f'{command}\n__rc=$?\npwd > "{where}"\nexit $__rc\n'
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
        if where.exists():
            self.cwd = Path(where.read_text(encoding="utf-8").strip())
        out = done.stdout.decode("utf-8", "replace")
        return out.replace(str(self.home), SHOWN_HOME).rstrip("\n")

    def stop_background(self) -> None:
        """End what the README started in the background (it writes each one's pid to a
        ``*.pid`` file), also when a command failed before the README's own ``kill``."""
        for pid_file in self.home.rglob("*.pid"):
            text = pid_file.read_text(encoding="utf-8").strip()
            if text.isdigit():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(text), signal.SIGTERM)


def run_readme(root: Path) -> list[tuple[Command, str | None]]:
    shell = Shell(root)
    try:
        results = [
            (command, shell.run(command.text) if command.run else None)
            for command in commands(README.read_text(encoding="utf-8"))
        ]
    finally:
        shell.stop_background()
    return results


def test_readme_commands_run_as_printed(tmp_path: Path) -> None:
    mismatches = []
    for command, actual in run_readme(tmp_path):
        if actual is not None and normalise(actual) != normalise(command.expected):
            mismatches.append(
                f"README.md:{command.line}: $ {command.text}\n"
                f"--- shown\n{command.expected}\n--- printed\n{actual}\n"
            )
    assert not mismatches, (
        "\n".join(mismatches) + "\nIf the new output is right: "
        "PYTHONPATH=src python tests/test_readme.py --write"
    )


def test_readme_has_commands_and_says_why_a_block_is_not_run() -> None:
    text = README.read_text(encoding="utf-8")
    found = commands(text)
    assert len([c for c in found if c.run]) >= 20
    for match in NOT_RUN.finditer(text):
        assert match.group(1).strip()


def test_normalising_keeps_what_must_match() -> None:
    shown = "pinned 1 tool for word-count (7b47bec1c603) at 2026-12-01T11:29:51.115Z"
    assert normalise(shown) == normalise(shown.replace("11:29:51.115", "09:00:00.001"))
    assert normalise(shown) != normalise(shown.replace("7b47bec1c603", "7b47bec1c604"))
    # a new key's root may end in what the duration rule would take ("/90s=")
    root = "root BR+L/Cfs5vNBpef7ON9iRVpkBvfZdIIaJ+s6cTh/90s="
    assert normalise(root) == normalise("root B3T5SN/Q+djXmHpNtSHcNBjJd8Fhn23eBSFd3ZE4haY=")


def write() -> None:
    """Paste each command's real output under it in README.md."""
    text = README.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as scratch:
        results = run_readme(Path(scratch))
    lines = text.split("\n")
    # replace from the bottom so earlier line numbers stay right
    for command, actual in reversed(results):
        if actual is None:
            continue
        start = command.line  # index of the first output line (0-based: line)
        end = start
        while not (lines[end].startswith("$ ") or lines[end] == "```"):
            end += 1
        lines[start:end] = actual.split("\n") if actual else []
    README.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote the outputs of {len(results)} commands into README.md")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: PYTHONPATH=src python tests/test_readme.py --write")
    if shutil.which("bash") is None:
        raise SystemExit("bash is needed")
    write()
