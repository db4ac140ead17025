"""Shared fixtures: a private HOME for the whole run, a private ``TOOLPIN_HOME`` per test
and the npm reference server.

No test may write into the real HOME. :func:`pytest_configure` points ``HOME`` at a
private folder (and unsets the XDG folders and ``TOOLPIN_HOME``, which then follow it)
before any test (or fixture) runs, in every process (each xdist worker has its own); the
configuration tools need to reach the package registries (``~/.npmrc``, ``~/.gitconfig``,
pip's and uv's configuration) is copied into it from the real HOME, or from
``TOOLPIN_TESTS_CONFIG_HOME`` when set. The caches
that keep runs fast (npm, uv, pip, virtualenv, Go build) live in ``<repo>/.cache``. At the
end of the run the real HOME's toolpin and Chromium folders are compared with how they
were at the start, and the run fails if any changed (see docs/testing.md).
"""

from __future__ import annotations

import compileall
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

# pytest rewrites the asserts of every test module it imports, and of every module of a
# package that is a pytest plugin (hypothesis, anyio, xdist, ...), and keeps the result in
# __pycache__ unless bytecode writing is off (PYTHONDONTWRITEBYTECODE): then every run,
# and every xdist worker in it, rewrites all of them again, most of the collection's
# time. This conftest is imported before any test module: from here on the rewritten
# modules are kept (gitignored), like the compiled sources (``_bytecode`` below). It is
# set before this file imports hypothesis, whose 73 modules were rewritten again in every
# pytest process when it came after (about 0.4 s of CPU each).
sys.dont_write_bytecode = False

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from tests import _cpu_profile  # noqa: E402
from tests.shared import CACHE, npm_install  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

# A suite started in the background by a non-interactive shell (`make test &`, a CI step's
# `cmd &`) inherits SIGINT ignored, and every process the tests start would inherit that
# too: the tests that interrupt the proxy or the witness with SIGINT would wait for an
# end that never comes. The tests start their processes as a terminal would: SIGINT on.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# Hypothesis: every test keeps its own number of examples; no example has a deadline and
# slow generation is not an error (both are timings, which no test asserts: on a loaded
# machine they failed tests whose property held, and a deadline miss runs the example
# again to confirm it). A test's own @settings override these. HYPOTHESIS_PROFILE=default
# gives Hypothesis's defaults back (docs/testing.md).
settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
NPM_PREFIX = CACHE / "npm-servers"
EVERYTHING = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"

CONFIG_FILES = (
    ".npmrc",
    ".gitconfig",
    ".config/git/config",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".config/uv/uv.toml",
)
"""What tools need to reach the registries (proxy, CA file, mirrors, git identity)."""

WATCHED = (
    ".local/share/toolpin",
    ".local/state/toolpin",
    ".local/lib/toolpin",
    ".config/toolpin",
    ".cache/toolpin",
    ".config/chromium",
    ".cache/chromium",
)
"""The real HOME's folders the suite once wrote into; a change there fails the run."""

XDG_FOLDERS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")

_PROFILE = "toolpin-cpu-profile"

REAL_HOME_VAR = "TOOLPIN_TESTS_REAL_HOME"
"""Set by the first process (xdist's workers inherit the private HOME, not the real one)."""


def _real_home() -> Path:
    return Path(os.environ.get(REAL_HOME_VAR) or os.path.expanduser("~"))


def _copy_config(source: Path, home: Path) -> None:
    for name in CONFIG_FILES:
        src = source / name
        if not src.is_file():
            continue
        dst = home / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        text = src.read_text(encoding="utf-8")
        if name == ".npmrc":  # a CA file named from the home stays the real one
            text = re.sub(r"(?m)^(\s*cafile\s*=\s*)~/", rf"\g<1>{source}/", text)
        dst.write_text(text, encoding="utf-8")


def _snapshot(home: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under the watched folders: size and modification time."""
    seen: dict[str, tuple[int, int]] = {}
    for name in WATCHED:
        top = home / name
        if not top.exists():
            continue
        for path in [top, *top.rglob("*")]:
            try:
                st = path.lstat()
            except OSError:
                continue
            seen[str(path.relative_to(home))] = (st.st_size, st.st_mtime_ns)
    return seen


TMPDIR_VAR = "TOOLPIN_TESTS_TMPDIR"
"""Where the run's temporary files go; unset: a RAM file system when one has room."""

_TMPFS_ROOM = 4 << 30


def _fast_tmpdir() -> str | None:
    """A folder for the run's temporary files on a RAM file system (``/dev/shm``), or
    ``None`` to keep the system's.

    The suite creates and deletes hundreds of thousands of small files (a published site
    alone is over 4,000); on this machine's disk creating a file in ``/tmp`` costs about
    1 ms, on tmpfs about 20 us (docs/testing.md). ``TOOLPIN_TESTS_TMPDIR`` chooses the
    folder (empty: the system's); otherwise ``/dev/shm`` is used when it is a tmpfs with
    at least 4 GiB free.
    """
    if TMPDIR_VAR in os.environ:
        return os.environ[TMPDIR_VAR] or None
    shm = "/dev/shm"
    try:
        st = os.statvfs(shm)
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            tmpfs = any(
                line.split()[1:3] == [shm, "tmpfs"] for line in mounts if len(line.split()) > 2
            )
    except OSError:
        return None
    if not tmpfs or st.f_bavail * st.f_frsize < _TMPFS_ROOM or not os.access(shm, os.W_OK):
        return None
    return os.path.join(shm, f"toolpin-tests-{os.getuid()}")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Before anything asks for a temporary folder (pytest's basetemp is made under it,
    # xdist's workers and every subprocess inherit TMPDIR).
    if not os.environ.get("PYTEST_XDIST_WORKER") and (fast := _fast_tmpdir()):
        os.makedirs(fast, mode=0o700, exist_ok=True)
        os.environ["TMPDIR"] = fast
        tempfile.tempdir = None
    real = _real_home()
    os.environ[REAL_HOME_VAR] = str(real)
    home = Path(tempfile.mkdtemp(prefix="toolpin-tests-home-"))
    _copy_config(Path(os.environ.get("TOOLPIN_TESTS_CONFIG_HOME") or real), home)
    # The XDG folders and TOOLPIN_HOME are unset, not pointed inside: they then follow
    # HOME, here and in a test that gives a subprocess a HOME of its own.
    for name in (*XDG_FOLDERS, "TOOLPIN_HOME"):
        os.environ.pop(name, None)
    # A public log configured in the developer's environment would be consulted by every
    # proxy a test starts: the tests that want one name it themselves.
    for name in ("TOOLPIN_LOG", "TOOLPIN_LOG_VKEY", "TOOLPIN_REQUIRE_PUBLIC"):
        os.environ.pop(name, None)
    os.environ.update(
        {
            "HOME": str(home),
            "npm_config_cache": str(CACHE / "npm"),
            "UV_CACHE_DIR": str(CACHE / "uv"),
            "GOCACHE": str(CACHE / "go-build"),
            "PIP_CACHE_DIR": str(CACHE / "pip"),
            "VIRTUALENV_OVERRIDE_APP_DATA": str(CACHE / "virtualenv"),
        }
    )
    config.stash[_HOME] = home
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the workers inherit it
        os.environ[DIST_VAR] = str(config.getoption("dist", "no"))
    if os.environ.get(_cpu_profile.ENV) and not config.pluginmanager.has_plugin(_PROFILE):
        config.pluginmanager.register(_cpu_profile, _PROFILE)  # docs/testing.md
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the controller checks, once
        config.stash[_BEFORE] = _snapshot(real)


DIST_VAR = "TOOLPIN_TESTS_DIST"
"""How the controller deals the tests to its workers (its ``--dist``), for the workers."""

LONG_MARKS = ("slow", "npm", "registries")
"""Tests that spend seconds to minutes waiting (servers that answer late, registries,
installs, Chromium)."""

LONG_MODULES: dict[str, float] = {
    "tests/teamlock/test_teamlock_slow.py": 80,
    "tests/integrations/test_action.py": 68,
    "tests/proxy/test_proxy_real_servers.py": 65,
    "tests/integrations/test_precommit.py": 41,
    "tests/proxy/test_proxy_store_faults.py": 38,
    "tests/site/test_site_layout.py": 12,
    "tests/integrations/test_install.py": 28,
    "tests/proxy/test_real_listings.py": 28,
    "tests/probe/test_probe_slow.py": 27,
    "tests/proxy/test_proxy_acceptance.py": 27,
    "tests/site/test_site_browser.py": 24,
    "tests/crawl/test_crawl_real_packages.py": 23,
    "tests/teamlock/test_teamlock_real_packages.py": 23,
    "tests/evidence/test_evidence_lookup.py": 22,
    "tests/test_readme.py": 21,
    "tests/proxy/test_proxy_audit_chain.py": 20,
    "tests/probe/test_probe.py": 20,
    "tests/remote/test_remote_lock_auth.py": 20,
    "tests/proxy/test_proxy_hostile.py": 18,
    "tests/teamlock/test_teamlock_log_proofs.py": 16,
    "tests/witness/test_witness_state.py": 16,
    "tests/proxy/test_classify.py": 16,
    "tests/evidence/test_evidence_prepared.py": 14,
    "tests/remote/test_remote_sdk.py": 14,
    "tests/storage/test_storage_serve.py": 13,
    "tests/storage/test_storage_interrupt.py": 12,
    "tests/proxy/test_proxy_public_log.py": 12,
    "tests/lookup/test_plugin.py": 12,
    "tests/core/test_seqdiff.py": 12,
    "tests/witness/test_witness_aics_interop.py": 11,
    "tests/lookup/test_lookup_stdio.py": 11,
    "tests/install/test_install_browser.py": 11,
    "tests/proxy/test_proxy_store.py": 11,
    "tests/teamlock/test_teamlock_lock.py": 10,
    "tests/lookup/test_lookup_vocabulary.py": 5,
    "tests/site/test_site_state.py": 8,
    "tests/site/test_site_cache.py": 5,
}
"""The modules that take longest in all, with the seconds one worker spent on the whole
module (setup to teardown, ``TOOLPIN_CPU_PROFILE``, a quiet run on 2026-12-05): they go
first, longest first (docs/testing.md, *Long tests first*)."""

DEFAULT_LONG_SECONDS = 10.0
"""The weight of a module with a test marked long that the table above does not list."""


def _weight(item: pytest.Item) -> float | None:
    """The seconds a long test's module is expected to take; ``None`` for the rest."""
    path = item.nodeid.split("::", 1)[0]
    if path in LONG_MODULES:
        return LONG_MODULES[path]
    if any(item.get_closest_marker(name) for name in LONG_MARKS):
        return DEFAULT_LONG_SECONDS
    return None


def _shares(total: int, workers: int) -> list[int]:
    """The sizes of the contiguous shares ``--dist worksteal`` first hands the workers
    (xdist's ``WorkStealingScheduling.check_schedule``: what is left, divided by the
    workers left)."""
    sizes = []
    for k in range(workers):
        sizes.append(total // (workers - k))
        total -= sizes[-1]
    return sizes


WAITING_MODULES: Final = ("tests/teamlock/test_teamlock_slow.py", "tests/probe/test_probe_slow.py")
"""The long modules that mostly wait, on purpose (servers that answer after 11 s and more,
about 110 s of one worker and 11 s of CPU in all): one worker takes them all, one after
the other, so that the other three keep both cores busy meanwhile. Dealt to two workers,
they waited at the same time for half a minute while the two left could not fill both
cores (docs/testing.md, *Long tests first*)."""


def pack_longest_first(
    weights: dict[str, float], workers: int, together: Iterable[str] = ()
) -> list[list[str]]:
    """Modules to workers, longest first, each to the worker with the least so far (the
    longest-processing-time rule): the longest waits start at once, in parallel, and no
    worker is handed far more than another. Ties keep the given order. The modules of
    ``together`` that ``weights`` has go first to the first worker, longest first, one
    after the other (modules that wait rather than compute)."""
    parts: list[list[str]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    first = sorted((m for m in together if m in weights), key=lambda m: -weights[m])
    for module in first:
        parts[0].append(module)
        loads[0] += weights[module]
    for module in sorted((m for m in weights if m not in first), key=lambda m: -weights[m]):
        k = loads.index(min(loads))
        parts[k].append(module)
        loads[k] += weights[module]
    return parts


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long tests start first, longest first, spread over the workers by their
    expected time, so their waiting overlaps the rest of the suite instead of trailing
    it: each worker's share of the collection begins with its part of them
    (``worksteal`` takes work from the end of a share). Every worker computes the same
    order (xdist requires it); the rest keep theirs."""
    # A worker's own ``--dist`` is always "no" (xdist resets it there): the controller's,
    # passed down in the environment (``pytest_configure``), says how the run is dealt.
    dist = os.environ.get(DIST_VAR) or config.getoption("dist", "no")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if dist not in ("load", "worksteal") or workers < 2:
        return  # one process: nothing to overlap; loadscope, loadfile: their grouping
    # Whole modules to a worker: the tests of one module often wait for one thing built
    # once (tests/shared.py), which the other workers need not wait for.
    modules: dict[str, list[pytest.Item]] = {}
    weights: dict[str, float] = {}
    rest: list[pytest.Item] = []
    for item in items:
        weight = _weight(item)
        if weight is None:
            rest.append(item)
            continue
        module = item.nodeid.split("::", 1)[0]
        modules.setdefault(module, []).append(item)
        weights[module] = weight
    parts = [
        [item for module in part for item in modules[module]]
        for part in pack_longest_first(weights, workers, WAITING_MODULES)
    ]
    sizes = _shares(len(items), workers)
    if dist != "worksteal" or any(len(p) > n for p, n in zip(parts, sizes, strict=True)):
        items[:] = [item for part in parts for item in part] + rest
        return
    ordered: list[pytest.Item] = []
    taken = 0
    for part, size in zip(parts, sizes, strict=True):
        ordered += part + rest[taken : taken + size - len(part)]
        taken += size - len(part)
    items[:] = ordered


_HOME = pytest.StashKey[Path]()
_BEFORE = pytest.StashKey[dict[str, tuple[int, int]]]()


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_BEFORE, None)
    if before is None:
        return
    after = _snapshot(_real_home())
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write("\n")  # after the progress line, which is not ended yet
            reporter.write_line(f"the suite wrote into the real HOME ({_real_home()}):", red=True)
            for path in changed[:20]:
                reporter.write_line(f"  {path}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _bytecode() -> None:
    """Compile ``src`` once, as an installed package is: the tests start the proxy as a
    subprocess many times, and ``PYTHONDONTWRITEBYTECODE`` would make each start compile
    every module again."""
    compileall.compile_dir(str(REPO / "src"), quiet=1)


@pytest.fixture
def toolpin_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh, empty pin store for one test (``TOOLPIN_HOME`` points at it)."""
    home = tmp_path / "toolpin-home"
    monkeypatch.setenv("TOOLPIN_HOME", str(home))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TOOLPIN_COLOR", raising=False)
    yield home


@pytest.fixture(scope="session")
def server_everything() -> Path:
    """The entry script of the real ``@modelcontextprotocol/server-everything`` from npm.

    Installed once into ``<repo>/.cache/npm-servers`` (gitignored) and reused, under a
    file lock (``tests.shared``). A failed install fails the tests that need it: nothing
    is skipped.
    """
    package = NPM_PREFIX / "node_modules" / "@modelcontextprotocol" / "server-everything"
    failed = npm_install(NPM_PREFIX, EVERYTHING, EVERYTHING_VERSION)
    if failed:
        pytest.fail(failed)
    entry = package / "dist" / "index.js"
    if not entry.exists():
        pytest.fail(f"{entry} is missing after npm install")
    return entry
