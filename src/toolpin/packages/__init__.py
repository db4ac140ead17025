"""Package pinning: which registry package a server command runs, and at which version.

``detect_package`` and ``pin_argv`` are pure (the proxy uses them on start-up);
``resolve`` and ``latest_version`` ask the npm or PyPI registry (``httpx2`` is imported
only then). See :mod:`toolpin.packages.spec` and :mod:`toolpin.packages.registry`.
The registry's names are imported on first use, so what only reads a command (``wrap``,
``lock --definitions-only``) does not load the network code (``ssl``).
"""

from __future__ import annotations

from toolpin.packages.spec import (
    Ecosystem,
    PackageRef,
    check_plain_version,
    detect_package,
    normalise_pypi_name,
    pin_argv,
    runner_name,
)

__all__ = [
    "Ecosystem",
    "PackageRef",
    "ResolvedPackage",
    "check_plain_version",
    "detect_package",
    "latest_version",
    "normalise_pypi_name",
    "pin_argv",
    "resolve",
    "runner_name",
]

_REGISTRY = frozenset({"ResolvedPackage", "latest_version", "resolve"})

TYPE_CHECKING = False
if TYPE_CHECKING:
    from toolpin.packages.registry import ResolvedPackage, latest_version, resolve


def __getattr__(name: str) -> object:
    if name not in _REGISTRY:
        raise AttributeError(f"module 'toolpin.packages' has no attribute {name!r}")
    from toolpin.packages import registry

    value = getattr(registry, name)
    globals()[name] = value
    return value
