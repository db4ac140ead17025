"""`python -m build` gives a wheel and an sdist that install and run in a fresh venv."""

from __future__ import annotations

import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.integrations.conftest import REPO, Built, Installed

pytestmark = pytest.mark.slow


def test_the_wheel_holds_the_package_and_its_data(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        names = wheel.namelist()
        entry = next(n for n in names if n.endswith("entry_points.txt"))
        entry_points = wheel.read(entry).decode()
    assert "toolpin/__main__.py" in names
    assert "toolpin/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", ".cache/", "bench/"))]
    assert "toolpin = toolpin.__main__:main" in entry_points


def test_the_sdist_holds_sources_tests_and_licence(built: Built) -> None:
    with tarfile.open(built.sdist) as sdist:
        names = sdist.getnames()
    root = names[0].split("/")[0]
    for wanted in ("pyproject.toml", "LICENSE", "README.md", "src/toolpin/__init__.py"):
        assert f"{root}/{wanted}" in names, wanted
    assert not [n for n in names if "/.cache/" in n or "/.venv/" in n]


def test_the_installed_command_runs_the_demo(installed: Installed, tmp_path: Path) -> None:
    env = installed.env(TOOLPIN_HOME=str(tmp_path / "home"))
    version = subprocess.run(
        ["toolpin", "--version"], env=env, capture_output=True, text=True, check=True
    )
    assert version.stdout.startswith("toolpin, version ")
    demo = subprocess.run(
        ["toolpin", "demo"], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert demo.returncode == 0, demo.stderr
    assert "Blocked" in demo.stdout


def test_the_sdist_installs_too(built: Built, installed: Installed, tmp_path: Path) -> None:
    """The sdist builds and installs (with pip, into a folder of its own: the shared venv
    is only read) and its command runs, on the venv's dependencies."""
    target = tmp_path / "from-sdist"
    subprocess.run(
        [str(installed.bin / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
         "--target", str(target), str(built.sdist)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    env = installed.env(TOOLPIN_HOME=str(tmp_path), PYTHONPATH=str(target))
    where = subprocess.run(
        [str(installed.bin / "python"), "-c", "import toolpin; print(toolpin.__file__)"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(target), where.stdout
    out = subprocess.run(
        [str(installed.bin / "python"), "-m", "toolpin", "hash",
         str(REPO / "examples" / "tools-list.json")],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "read_page" in out.stdout


def test_make_install_puts_toolpin_on_path(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    done = subprocess.run(
        ["make", "-C", str(REPO), "install", f"PREFIX={prefix}"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    link = prefix / "bin" / "toolpin"
    assert link.is_symlink()
    target = link.resolve()
    assert str(target).startswith(str(prefix)), "the command must not point into the checkout"
    out = subprocess.run([str(link), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("toolpin, version ")
    pins = prefix / "share" / "toolpin" / "pins"  # toolpin's data folder on Linux
    pins.mkdir(parents=True)
    (pins / "x.json").write_text("{}")
    subprocess.run(["make", "-C", str(REPO), "uninstall", f"PREFIX={prefix}"], check=True,
                   capture_output=True)  # fmt: skip
    assert not link.exists()
    assert (pins / "x.json").exists(), "uninstall must never touch the user's pins"
