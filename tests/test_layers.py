"""The package map is enforced: which feature may import which, and no import cycle.

Read from the source with ``ast``, so a lazy import inside a function counts the same as
one at the top of a module; imports under ``if TYPE_CHECKING:`` are left out of the map
(they never run) but not out of the cycle check inside a package.
``tests/core/test_layers.py`` checks, in addition, that the core does no I/O.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = SRC / "toolpin"

SHARED = {"errors", "__init__"}
"""What every package may import: the error base and the version."""

ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "core": set(),
    "util": set(),
    "report": {"core"},
    "lockfile": {"core", "util"},
    "pins": {"core", "evidence", "lockfile", "util"},
    "packages": {"core", "util"},
    "probe": {"core", "util"},
    "offline": {"core", "lockfile", "report", "util"},
    "clients": {"core", "lockfile", "packages", "pins", "util"},
    "team": {
        "clients", "core", "lockfile", "packages", "pins", "probe", "report", "skills", "util",
    },
    "proxy": {"core", "pins", "report", "team", "util"},
    "remote": {"core", "pins", "probe", "proxy", "team", "util"},
    "publog": {"core", "util"},
    "crawl": {"clients", "core", "lockfile", "packages", "probe", "publog", "report", "util"},
    "site": {"core", "publog", "report", "util", "crawl", "clients", "lockfile"},
    "lookup": {"core", "evidence", "lockfile", "pins", "publog", "probe", "report", "util"},
    "evidence": {"core", "publog", "probe", "storage", "util"},
    "monitor": {"core", "evidence", "lockfile", "publog", "util"},
    "witness": {"core", "publog", "util"},
    "storage": {"publog", "util"},
    "demo": {"core", "util", "proxy", "pins", "report"},
    "maintainer": {"core", "lockfile", "probe", "report", "team", "util"},
    "skills": {"core", "lockfile", "pins", "util"},
    "cli": {
        "clients", "core", "crawl", "demo", "evidence", "lockfile", "lookup", "maintainer",
        "monitor", "offline", "packages", "pins", "probe", "proxy", "publog", "remote", "report",
        "site", "skills", "storage", "team", "util", "witness",
    },
    "__main__": {"cli", "proxy", "remote"},
    "__init__": {"core", "offline"},  # the lazy public API
}  # fmt: skip
"""Top-level package -> the other top-level packages it may import (besides SHARED)."""

PROXY_COMPOSITION = {"toolpin.proxy.start", "toolpin.remote.start"}
"""The modules that build a pin source (store or team lock) for ``toolpin run`` (and
``toolpin run --url``). Everything else in ``proxy/`` and ``remote/`` sees pins only
through ``toolpin.pins.source.PinSource``."""

PROXY_MODULES = {
    "toolpin.proxy",
    "toolpin.proxy.channel",
    "toolpin.proxy.classify",
    "toolpin.proxy.known_page",
    "toolpin.proxy.relay",
    "toolpin.proxy.session",
    "toolpin.proxy.settings",
    "toolpin.proxy.spawn",
    "toolpin.proxy.start",
}
"""``proxy/`` is the stdio proxy and nothing else: the relay, the server channel and the
child process, the session with its classifier and page index, and ``toolpin run``'s
start-up with its settings. The remote transports (HTTP, SSE, OAuth, the gateway) live in
``remote/``, which builds on these; ``proxy/`` never imports ``remote/`` (the layer map says so)."""

THIRD_PARTY_HOMES = {
    "click": {"cli"},
    "rich": {"cli"},
    "mcp": {"lookup", "remote"},
    "jinja2": {"site"},
    "yaml": {"skills"},
}
"""Heavy third-party imports, and the only packages that may make them."""


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
            (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
        ):
            for child in node.body:
                skip.update(id(n) for n in ast.walk(child))
    return skip


MODULES = dict(_modules())


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(module: str, path: Path, *, with_type_checking: bool = False) -> list[str]:
    """Every module ``module`` imports at run time (``from a import b`` counts a.b if a
    module, else a); with ``with_type_checking``, the ``TYPE_CHECKING`` imports too."""
    tree = _tree(path)
    skip = set() if with_type_checking else _type_checking_nodes(tree)
    out: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append(full if full in MODULES else base)
    return out


class _Graph(Mapping[str, list[str]]):
    """Every module's imports, each module read when first asked for: not while the suite
    is collected (in every worker, whichever tests it then runs), and once for both graphs."""

    def __init__(self, *, with_type_checking: bool) -> None:
        self._with_type_checking = with_type_checking
        self._known: dict[str, list[str]] = {}

    def __getitem__(self, module: str) -> list[str]:
        if module not in self._known:
            self._known[module] = _imports(
                module, MODULES[module], with_type_checking=self._with_type_checking
            )
        return self._known[module]

    def __iter__(self) -> Iterator[str]:
        return iter(MODULES)

    def __len__(self) -> int:
        return len(MODULES)


GRAPH = _Graph(with_type_checking=False)
FULL_GRAPH = _Graph(with_type_checking=True)


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_imports_follow_the_map(module: str) -> None:
    here = _top(module)
    assert here in ALLOWED, f"{here} is a new top-level package: add it to the map"
    for name in GRAPH[module]:
        root = name.split(".")[0]
        if root == "toolpin":
            there = _top(name)
            if there == here or there in SHARED:
                continue
            assert there in ALLOWED[here], f"{module} imports {name} ({here} -> {there})"
        elif root in THIRD_PARTY_HOMES:
            assert here in THIRD_PARTY_HOMES[root], f"{module} imports {root}"


def test_the_proxy_package_is_the_stdio_proxy() -> None:
    assert {m for m in MODULES if _top(m) == "proxy"} == PROXY_MODULES


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _top(m) in {"proxy", "remote"}))
def test_the_proxy_reaches_pins_only_through_the_pin_source(module: str) -> None:
    if module in PROXY_COMPOSITION:
        return
    for name in GRAPH[module]:
        if _top(name) == "team" or (_top(name) == "pins" and name != "toolpin.pins.source"):
            pytest.fail(f"{module} imports {name}: talk to the PinSource protocol instead")


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components: every group of modules that import each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return cycles


def _edges(graph: Mapping[str, list[str]]) -> dict[str, set[str]]:
    """The module graph without a module's own parent packages: importing ``toolpin.a.b``
    runs ``toolpin/a/__init__.py`` first, but that is not an edge back unless the package
    itself imports the module."""
    return {
        m: {n for n in graph[m] if n in MODULES and n != m and not m.startswith(n + ".")}
        for m in MODULES
    }


def test_no_import_cycle() -> None:
    """No cycle over the run-time module graph (lazy imports too)."""
    assert not _cycles(_edges(GRAPH)), f"import cycles: {_cycles(_edges(GRAPH))}"


PACKAGES = sorted({_top(m) for m in MODULES if m.count(".") >= 1})


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_a_package(package: str) -> None:
    """Inside one package, not even a type-only import closes a circle: a module that
    needs another's type for its annotations shares the type through a third module
    both import (the type-checker follows ``TYPE_CHECKING`` imports, and so does a
    reader)."""
    edges = {
        m: {n for n in targets if _top(n) == package}
        for m, targets in _edges(FULL_GRAPH).items()
        if _top(m) == package
    }
    assert not _cycles(edges), f"import cycles in {package}/: {_cycles(edges)}"


def test_at_most_five_top_level_modules() -> None:
    modules = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(modules) <= 5, modules


def test_the_map_sees_every_package() -> None:
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(ALLOWED), packages - set(ALLOWED)
    assert {"core", "pins", "proxy", "probe", "team", "cli"} <= packages


IMPORT_NAMES = {"httpx2": "httpx2", "pyyaml": "yaml"}
"""Distribution name -> import name, where they differ (most are the same)."""


def test_every_runtime_dependency_is_imported_by_src() -> None:
    import re
    import tomllib

    project = tomllib.loads((SRC.parent / "pyproject.toml").read_text(encoding="utf-8"))
    imported = {name.split(".")[0] for names in GRAPH.values() for name in names}
    for requirement in project["project"]["dependencies"]:
        dist = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)  # type: ignore[union-attr]
        module = IMPORT_NAMES.get(dist, dist.replace("-", "_"))
        assert module in imported, f"{dist} is a runtime dependency nothing in src/ imports"
