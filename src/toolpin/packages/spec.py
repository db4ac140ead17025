"""Recognise the package a server command runs, and hold it at an exact version.

A server started with ``npx -y some-server`` runs whatever the registry serves as the
newest version on that start: its tool definitions can stay identical while its code
changes (the postmark-mcp 1.0.16 case). This module reads the command as written and
says which registry package it runs and whether the command pins an exact version.

Pure functions over an argv, standard library only: the proxy imports this on start-up.

Runners recognised (the runner is the command's basename without ``.cmd``, ``.exe``,
``.bat`` or ``.ps1``):

* npm: ``npx``, ``bunx``, ``bun x``, ``npm exec`` / ``npm x``, ``pnpm dlx``, ``yarn dlx``;
  the package is ``--package``/``-p`` when given, else the first positional argument.
* PyPI: ``uvx``, ``uv tool run``, ``pipx run``; the package is ``--from`` (uv) or
  ``--spec`` (pipx) when given, else the first positional argument.
* OCI: ``docker run``, ``podman run``, ``container run``; the image is the first
  positional argument, pinned only when written ``image@sha256:<64 hex>``.

A spec that is not a registry package (a URL, ``git+``, ``github:``, ``file:``, a path, an
alias, shell metacharacters, whitespace) raises :class:`~toolpin.errors.PackageError`:
the runner fetches code that no registry version can hold. A local script (``node
server.js``, ``npx ./dir``) is no package at all: :func:`detect_package` returns ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from toolpin.errors import PackageError

Ecosystem = Literal["npm", "pypi", "oci"]

# npm: a plain semantic version (an optional leading "v" is accepted on input only).
NPM_EXACT = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?\Z"
)
# PyPI: a public PEP 440 version without local part or epoch ("1.2", "2.0.0rc1", "1.0.post2").
PYPI_EXACT = re.compile(
    r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?\Z",
)
OCI_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}\Z")

_NPM_NAME = re.compile(r"^(@[a-z0-9~][a-z0-9._~-]*/)?[a-z0-9~][a-z0-9._~-]*\Z", re.IGNORECASE)
_NPM_TAG = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*\Z")
# Characters a range may contain ("^1.2.0", ">=1 <2", "1.x || 2.x"); anything else is hostile.
_NPM_RANGE = re.compile(r"^[0-9A-Za-z.^~<>=*| +-]+\Z")
_PYPI_REQ = re.compile(
    r"^(?P<name>[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)"
    r"(?P<extras>\[[A-Za-z0-9._,-]*\])?"
    r"(?:(?P<op>==|@)(?P<ver>[^=<>!~,;\s]+)|(?P<range>(?:[<>!~=]=?|===)[0-9A-Za-z.*+!<>=~, -]*))?\Z"
)
_OCI_IMAGE = re.compile(
    r"^(?P<repo>[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+(?=/))?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?\Z"
)

_NPM_VALUE_FLAGS = frozenset(
    {
        "--prefix",
        "--registry",
        "--cache",
        "--userconfig",
        "-w",
        "--workspace",
        "--loglevel",
        "--node-options",
        "--call",
        "-c",
        "--shell",
        "--script-shell",
    }
)
_UV_VALUE_FLAGS = frozenset(
    {
        "--from",
        "--with",
        "--with-editable",
        "--with-requirements",
        "--python",
        "-p",
        "--index",
        "--default-index",
        "--index-url",
        "-i",
        "--extra-index-url",
        "--find-links",
        "-f",
        "--constraints",
        "-c",
        "--overrides",
        "--build-constraints",
        "-b",
        "--directory",
        "--project",
        "--config-file",
        "--cache-dir",
        "--color",
        "--index-strategy",
        "--keyring-provider",
        "--resolution",
        "--prerelease",
        "--exclude-newer",
        "--upgrade-package",
        "-P",
        "--reinstall-package",
        "--refresh-package",
        "--no-binary-package",
        "--no-build-package",
        "--config-setting",
        "-C",
        "--env-file",
        "--python-platform",
        "--link-mode",
    }
)
_INDEX_FLAGS = ("--index", "--default-index", "--index-url", "-i")
"""Flags that name the package index (uv: ``--index`` is searched before the default)."""
_PIPX_VALUE_FLAGS = frozenset(
    {"--spec", "--python", "--index-url", "-i", "--pip-args", "--backend"}
)
_OCI_VALUE_FLAGS = frozenset(
    {
        "-a",
        "--attach",
        "--add-host",
        "--annotation",
        "--blkio-weight",
        "--cap-add",
        "--cap-drop",
        "--cgroup-parent",
        "--cgroupns",
        "--cidfile",
        "--cpus",
        "--cpu-shares",
        "-c",
        "--cpuset-cpus",
        "--cpuset-mems",
        "--device",
        "--dns",
        "--dns-option",
        "--dns-search",
        "--domainname",
        "--entrypoint",
        "-e",
        "--env",
        "--env-file",
        "--expose",
        "--gpus",
        "--group-add",
        "--health-cmd",
        "--health-interval",
        "--health-retries",
        "--health-timeout",
        "-h",
        "--hostname",
        "--ip",
        "--ip6",
        "--ipc",
        "--isolation",
        "-l",
        "--label",
        "--label-file",
        "--link",
        "--log-driver",
        "--log-opt",
        "--mac-address",
        "-m",
        "--memory",
        "--memory-swap",
        "--mount",
        "--name",
        "--network",
        "--net",
        "--network-alias",
        "--pid",
        "--pids-limit",
        "--platform",
        "-p",
        "--publish",
        "--pull",
        "--restart",
        "--runtime",
        "--security-opt",
        "--shm-size",
        "--stop-signal",
        "--stop-timeout",
        "--storage-opt",
        "--sysctl",
        "--tmpfs",
        "--ulimit",
        "-u",
        "--user",
        "--userns",
        "--uts",
        "-v",
        "--volume",
        "--volumes-from",
        "-w",
        "--workdir",
        "--secret",
        "--arch",
        "--os",
        "--authfile",
        "--creds",
    }
)

_RUNNER_SUFFIXES = (".cmd", ".exe", ".bat", ".ps1")


@dataclass(frozen=True)
class PackageRef:
    """The registry package a server command runs, as written in the command."""

    ecosystem: Ecosystem
    name: str
    """npm ``@scope/name``, PyPI normalised name, OCI image repository."""
    requested: str
    """As written: ``""`` when none, a tag (``latest``), a range, a version or a digest."""
    exact: str | None
    """The exact version (OCI: ``sha256:<64 hex>``) when the command pins one."""
    runner: str
    """``npx``, ``bunx``, ``npm exec``, ``pnpm dlx``, ``yarn dlx``, ``uvx``, ...; see module doc."""
    arg_index: int
    """Index in the argv of the argument holding the spec (for rewriting)."""
    registry: str | None = None
    """A registry URL the command names (npm ``--registry``; uv ``--index``,
    ``--default-index``, ``--index-url``; pipx ``--index-url``), if any."""
    extras: str = ""
    """PyPI extras as written (``[a,b]``), kept when the spec is rewritten."""

    @property
    def pinned(self) -> bool:
        """True when the command itself holds the package at one exact version."""
        return self.exact is not None

    @property
    def is_range(self) -> bool:
        """True when ``requested`` is a version range (never pinned, refused by resolve)."""
        if self.exact is not None or not self.requested:
            return False
        if self.ecosystem == "npm":
            return not _NPM_TAG.match(self.requested)
        if self.ecosystem == "pypi":
            return self.requested != "latest"
        return False

    def label(self) -> str:
        """``name`` plus the pinned version, for messages (``pkg 1.2.3``, ``pkg``)."""
        return f"{self.name} {self.exact}" if self.exact else self.name


def runner_name(command: str) -> str:
    """The basename of ``command`` without a Windows launcher suffix, lower-cased."""
    base = re.split(r"[\\/]", command)[-1]
    lowered = base.lower()
    for suffix in _RUNNER_SUFFIXES:
        if lowered.endswith(suffix):
            return lowered[: -len(suffix)]
    return lowered


def detect_package(argv: Sequence[str]) -> PackageRef | None:
    """The registry package ``argv`` runs, or ``None`` (no known runner, or a local path).

    Raises :class:`PackageError` when a known runner is given a spec that no registry
    version can hold (URL, git, ``file:``, shell metacharacters, ...).
    """
    if not argv:
        return None
    runner = runner_name(argv[0])
    rest = list(argv[1:])
    if runner in ("npx", "bunx"):
        return _detect_npm(argv, 1, runner)
    if runner in ("npm", "pnpm", "yarn", "bun"):
        sub = _first_positional(rest, _NPM_VALUE_FLAGS)
        wanted = {"npm": ("exec", "x"), "pnpm": ("dlx",), "yarn": ("dlx",), "bun": ("x",)}[runner]
        if sub is None or rest[sub] not in wanted:
            return None
        return _detect_npm(argv, sub + 2, f"{runner} {rest[sub] if runner != 'npm' else 'exec'}")
    if runner == "uvx":
        return _detect_pypi(argv, 1, "uvx", "--from", _UV_VALUE_FLAGS)
    if runner == "uv":
        sub = _first_positional(rest, _UV_VALUE_FLAGS)
        if sub is None or rest[sub] != "tool" or rest[sub + 1 : sub + 2] != ["run"]:
            return None
        return _detect_pypi(argv, sub + 3, "uv tool run", "--from", _UV_VALUE_FLAGS)
    if runner == "pipx":
        sub = _first_positional(rest, _PIPX_VALUE_FLAGS)
        if sub is None or rest[sub] != "run":
            return None
        return _detect_pypi(argv, sub + 2, "pipx run", "--spec", _PIPX_VALUE_FLAGS)
    if runner in ("docker", "podman", "container"):
        sub = _first_positional(rest, _OCI_VALUE_FLAGS)
        if sub is None:
            return None
        start = sub + 2
        if rest[sub] == "container" and rest[sub + 1 : sub + 2] == ["run"]:
            start = sub + 3
        elif rest[sub] != "run":
            return None
        return _detect_oci(argv, start, f"{runner} run")
    return None


def _first_positional(args: Sequence[str], value_flags: frozenset[str]) -> int | None:
    """Index in ``args`` of the first argument that is neither a flag nor a flag's value."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return i + 1 if i + 1 < len(args) else None
        if arg.startswith("-") and arg != "-":
            if "=" not in arg and arg in value_flags:
                i += 2
                continue
            i += 1
            continue
        return i
    return None


def _scan_flags(
    argv: Sequence[str], start: int, value_flags: frozenset[str], wanted: tuple[str, ...]
) -> tuple[dict[str, tuple[int, str]], int | None]:
    """Values of the ``wanted`` flags (index, value) and the index of the first positional."""
    found: dict[str, tuple[int, str]] = {}
    i = start
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return found, (i + 1 if i + 1 < len(argv) else None)
        if arg.startswith("-") and arg != "-":
            flag, eq, value = arg.partition("=")
            if eq:
                if flag in wanted:
                    found.setdefault(flag, (i, value))
                i += 1
                continue
            if arg in value_flags or arg in wanted:
                if arg in wanted and i + 1 < len(argv):
                    found.setdefault(arg, (i + 1, argv[i + 1]))
                i += 2
                continue
            i += 1
            continue
        return found, i
    return found, None


def _looks_local(spec: str) -> bool:
    return spec.startswith((".", "/", "~", "\\")) or bool(re.match(r"^[A-Za-z]:[\\/]", spec))


def _refuse(spec: str, runner: str) -> PackageError:
    return PackageError(
        f"{runner} is given {_quote(spec)}, which is not a registry package "
        "(URL, git, file, alias or shell syntax); toolpin cannot hold it at a version",
        advice="Use a registry package with an exact version, for example name@1.2.3.",
    )


def _quote(text: str) -> str:
    """A config value quoted for a one-line message, with control characters escaped."""
    return repr(text[:120])


def _package_arg(
    argv: Sequence[str],
    flags: Mapping[str, tuple[int, str]],
    spec_flags: Sequence[str],
    positional: int | None,
) -> tuple[int, str] | None:
    """Where the runner's package is named and how: the value of the first of
    ``spec_flags`` given, else the positional argument; ``None`` when there is none or it
    is a local path (nothing to resolve)."""
    given = next((flags[f] for f in spec_flags if f in flags), None)
    if given is None:
        if positional is None:
            return None
        given = positional, argv[positional]
    return None if _looks_local(given[1]) else given


def _detect_npm(argv: Sequence[str], start: int, runner: str) -> PackageRef | None:
    flags, positional = _scan_flags(
        argv, start, _NPM_VALUE_FLAGS, ("--package", "-p", "--registry")
    )
    registry = flags["--registry"][1] if "--registry" in flags else None
    found = _package_arg(argv, flags, ("--package", "-p"), positional)
    if found is None:
        return None
    index, spec = found
    name, requested = _split_npm(spec, runner)
    if requested.startswith("v") and NPM_EXACT.match(requested[1:]):
        exact: str | None = requested[1:]
    else:
        exact = requested if NPM_EXACT.match(requested) else None
    return PackageRef("npm", name, requested, exact, runner, index, registry)


def _split_npm(spec: str, runner: str) -> tuple[str, str]:
    if spec.startswith("@"):
        scope_end = spec.find("/")
        at = spec.find("@", scope_end + 1) if scope_end > 0 else -1
    else:
        at = spec.find("@")
    name, requested = (spec, "") if at < 0 else (spec[:at], spec[at + 1 :])
    if not _NPM_NAME.match(name):
        raise _refuse(spec, runner)
    if requested and not (
        NPM_EXACT.match(requested.removeprefix("v"))
        or _NPM_TAG.match(requested)
        or (_NPM_RANGE.match(requested) and re.search(r"[0-9*xX]", requested))
    ):
        raise _refuse(spec, runner)
    return name, requested


def _detect_pypi(
    argv: Sequence[str], start: int, runner: str, spec_flag: str, value_flags: frozenset[str]
) -> PackageRef | None:
    flags, positional = _scan_flags(argv, start, value_flags, (spec_flag, *_INDEX_FLAGS))
    registry = next((flags[f][1] for f in _INDEX_FLAGS if f in flags), None)
    if registry is not None and "=" in registry.split("://", 1)[0]:
        registry = registry.split("=", 1)[1]  # uv's named index: --index name=URL
    found = _package_arg(argv, flags, (spec_flag,), positional)
    if found is None:
        return None
    index, spec = found
    match = _PYPI_REQ.match(spec)
    if match is None:
        raise _refuse(spec, runner)
    name = normalise_pypi_name(match["name"])
    extras = match["extras"] or ""
    if match["range"] is not None:
        return PackageRef(
            "pypi", name, match["range"].strip(), None, runner, index, registry, extras
        )
    requested = match["ver"] or ""
    if (
        requested
        and requested != "latest"
        and not PYPI_EXACT.match(requested)
        and (match["op"] == "@" or re.search(r"[^0-9A-Za-z.*+!]", requested))
    ):
        raise _refuse(spec, runner)
    exact = requested if PYPI_EXACT.match(requested) else None
    return PackageRef("pypi", name, requested, exact, runner, index, registry, extras)


def normalise_pypi_name(name: str) -> str:
    """PEP 503 normal form: lower case, runs of ``-``, ``_`` and ``.`` become one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _detect_oci(argv: Sequence[str], start: int, runner: str) -> PackageRef | None:
    _flags, positional = _scan_flags(argv, start, _OCI_VALUE_FLAGS, ())
    if positional is None:
        return None
    image = argv[positional]
    match = _OCI_IMAGE.match(image)
    if match is None:
        raise _refuse(image, runner)
    digest = match["digest"]
    requested = digest or match["tag"] or ""
    return PackageRef("oci", match["repo"], requested, digest, runner, positional)


def check_plain_version(ecosystem: Ecosystem, version: str) -> str:
    """``version`` if it is a plain exact version for ``ecosystem``; else PackageError."""
    ok = {
        "npm": NPM_EXACT,
        "pypi": PYPI_EXACT,
        "oci": OCI_DIGEST,
    }[ecosystem].match(version)
    if not ok:
        kind = "an image digest (sha256:<64 hex>)" if ecosystem == "oci" else "a plain version"
        raise PackageError(f"{_quote(version)} is not {kind}; refusing to put it in a command")
    return version


def pin_argv(argv: Sequence[str], ref: PackageRef, version: str) -> list[str] | None:
    """``argv`` with the package held at ``version``; ``None`` when this form cannot be pinned.

    ``version`` must be a plain version (npm semver, PEP 440 number) or, for OCI, a
    ``sha256:<64 hex>`` digest; anything else raises :class:`PackageError`, so nothing a
    registry or a lock says can smuggle shell syntax or another source into the command.
    """
    check_plain_version(ref.ecosystem, version)
    again = detect_package(argv)
    if again is None or (again.ecosystem, again.name, again.arg_index) != (
        ref.ecosystem,
        ref.name,
        ref.arg_index,
    ):
        raise PackageError("the command no longer runs the package it was checked for")
    out = list(argv)
    original = out[ref.arg_index]
    prefix = ""
    for flag in ("--package=", "--from=", "--spec="):
        if original.startswith(flag):
            prefix = flag
    if ref.ecosystem == "npm":
        out[ref.arg_index] = f"{prefix}{ref.name}@{version}"
        return out
    if ref.ecosystem == "oci":
        out[ref.arg_index] = f"{ref.name}@{version}"
        return out
    from_flag = ref.arg_index > 0 and argv[ref.arg_index - 1] in ("--from", "--spec")
    if prefix or from_flag:
        out[ref.arg_index] = f"{prefix}{ref.name}{ref.extras}=={version}"
        return out
    if ref.runner in ("uvx", "uv tool run") and not ref.extras:
        out[ref.arg_index] = f"{ref.name}@{version}"
        return out
    return None
