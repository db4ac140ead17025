"""Resolve a package to an exact version and the registry's digest of its contents.

* npm: ``GET <registry>/<name>/<version or tag>`` (scoped names URL-encoded); the answer's
  ``version`` must be a plain semantic version and ``dist.integrity`` is recorded.
* PyPI: the standard simple index, ``GET <index>/<normalised name>/`` asking for PEP 691
  JSON and accepting PEP 503 HTML (so mirrors, private indexes and proxies that serve only
  the simple API work); the release is the newest non-pre-release version with a file
  that is not yanked, or the version asked for, and every file of it is recorded as
  ``(filename, sha256)``.
* OCI: no network. Only a digest written in the command (``image@sha256:...``) is recorded.

Which registry or index, with which CA file, proxy and token: :mod:`toolpin.packages.config`
(the runner's own configuration). Trust: :func:`toolpin.util.net.tls_context`. Answers are
capped in size, time-limited, and JSON is parsed strictly (a repeated member name is
refused). ``httpx2`` is imported only when a request is made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urljoin

from toolpin.core.canonical import unique_members
from toolpin.errors import InputError, LockfileError, PackageError
from toolpin.packages.spec import (
    NPM_EXACT,
    OCI_DIGEST,
    PYPI_EXACT,
    Ecosystem,
    PackageRef,
    _quote,
    check_plain_version,
)
from toolpin.util.net import read_capped

if TYPE_CHECKING:
    import httpx2

    from toolpin.packages.config import RegistrySettings

# The configuration readers and the simple-index parser (packaging, tomllib, configparser)
# are imported when a registry is asked, not on the proxy's start path (``run --lock``
# imports this package for ResolvedPackage and pin_argv).

__all__ = [
    "ResolvedPackage",
    "latest_version",
    "npm_registry",
    "resolve",
]
MAX_ANSWER_BYTES = 8 * 1024 * 1024
SIMPLE_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01"
)
_SHA256_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class ResolvedPackage:
    """One exact release as the registry describes it."""

    ecosystem: Ecosystem
    name: str
    requested: str
    version: str
    integrity: str | None = None
    """npm ``dist.integrity`` (``sha512-...``)."""
    files: tuple[tuple[str, str], ...] = ()
    """PyPI ``(filename, sha256)`` of every file of the release, sorted."""

    def label(self) -> str:
        return f"{self.name} {self.version}"

    def same_contents(self, other: ResolvedPackage) -> bool:
        """True when both records describe the same bytes for the same version."""
        return (self.ecosystem, self.name, self.version, self.integrity, self.files) == (
            other.ecosystem,
            other.name,
            other.version,
            other.integrity,
            other.files,
        )

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "ecosystem": self.ecosystem,
            "name": self.name,
            "requested": self.requested,
            "version": self.version,
        }
        if self.ecosystem == "npm":
            out["integrity"] = self.integrity
        if self.ecosystem == "pypi":
            out["files"] = [{"filename": f, "sha256": h} for f, h in self.files]
        return out

    @classmethod
    def from_json(cls, data: object) -> ResolvedPackage:
        """Read a record written by :meth:`to_json`; :class:`LockfileError` when malformed."""
        if not isinstance(data, dict):
            raise LockfileError("a package record is not an object")
        eco = data.get("ecosystem")
        name = data.get("name")
        requested = data.get("requested", "")
        version = data.get("version")
        if eco not in ("npm", "pypi", "oci"):
            raise LockfileError("a package record names an unknown ecosystem")
        if not isinstance(name, str) or not name or not isinstance(requested, str):
            raise LockfileError("a package record has no usable name")
        if not isinstance(version, str):
            raise LockfileError(f"the package record of {_quote(name)} has no version")
        try:
            check_plain_version(eco, version)
        except PackageError:
            raise LockfileError(
                f"the package record of {_quote(name)} holds a version that is not plain"
            ) from None
        integrity = data.get("integrity")
        if integrity is not None and not isinstance(integrity, str):
            raise LockfileError(f"the package record of {_quote(name)} has a bad integrity")
        files: list[tuple[str, str]] = []
        raw_files = data.get("files", [])
        if not isinstance(raw_files, list):
            raise LockfileError(f"the package record of {_quote(name)} has bad files")
        for item in raw_files:
            if not isinstance(item, dict):
                raise LockfileError(f"the package record of {_quote(name)} has bad files")
            filename, digest = item.get("filename"), item.get("sha256")
            if not isinstance(filename, str) or not _is_sha256(digest):
                raise LockfileError(f"the package record of {_quote(name)} has bad files")
            assert isinstance(digest, str)
            files.append((filename, digest))
        return cls(eco, name, requested, version, integrity, tuple(sorted(files)))


def npm_registry(ref: PackageRef, *, where: Path | None = None) -> str:
    """The npm registry base URL to ask about ``ref`` (see :mod:`toolpin.packages.config`)."""
    from toolpin.packages.config import npm_settings

    return npm_settings(ref, where=where).url


def resolve(
    ref: PackageRef,
    *,
    timeout: float = 15.0,
    version: str | None = None,
    where: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> ResolvedPackage:
    """Ask the registry which exact release ``ref`` (or ``version``) is, and its digest.

    ``version`` overrides what the command requested (used to re-check a locked
    version). ``where`` is the folder the server starts in (for a project ``.npmrc`` or
    ``uv.toml``); ``env`` the environment it starts with (default: this process's).
    Raises :class:`PackageError` for a version range, an unknown package, a
    registry that cannot be reached in ``timeout`` seconds, or an answer that is not a
    plain version.
    """
    wanted = version if version is not None else (ref.exact or ref.requested)
    if version is not None:
        check_plain_version(ref.ecosystem, version)
    elif ref.is_range:
        raise PackageError(
            f"{ref.name}@{ref.requested} is a version range; pin an exact version",
            advice=f"Write one version in the command, for example {ref.name}@1.2.3.",
        )
    if ref.ecosystem == "oci":
        if not wanted or not OCI_DIGEST.match(wanted):
            raise PackageError(
                f"image {ref.name} is not pinned by digest, so it can change on any start",
                advice=f"Write it as {ref.name}@sha256:<digest>.",
            )
        return ResolvedPackage("oci", ref.name, ref.requested, wanted)
    return _from_registry(ref, wanted, timeout, where, env)


def latest_version(
    ref: PackageRef,
    *,
    timeout: float = 15.0,
    where: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """The version the registry serves as newest (npm tag ``latest``, PyPI newest release)."""
    if ref.ecosystem == "oci":
        raise PackageError(f"image {ref.name}: toolpin does not look up newer image digests")
    return _from_registry(ref, "latest", timeout, where, env).version


def _from_registry(
    ref: PackageRef, wanted: str, timeout: float, where: Path | None, env: Mapping[str, str] | None
) -> ResolvedPackage:
    """``ref`` at ``wanted`` (``""`` or ``"latest"``: the newest) as its npm registry or
    package index answers, with the settings that apply ``where`` (see :func:`resolve`)."""
    from toolpin.packages.config import npm_settings, pypi_settings

    if ref.ecosystem == "npm":
        ask = _Ask(ref, timeout, npm_settings(ref, where=where, env=env), env)
        return _resolve_npm(ask, wanted or "latest")
    ask = _Ask(ref, timeout, pypi_settings(ref, where=where, env=env), env)
    return _resolve_pypi(ask, "" if wanted in ("", "latest") else wanted)


@dataclass(frozen=True)
class _Ask:
    """A question about ``ref`` to its registry: the settings that apply, the environment
    the server starts with, and how long the registry may take to answer."""

    ref: PackageRef
    timeout: float
    settings: RegistrySettings
    env: Mapping[str, str] | None

    def get(self, url: str, *, accept: str) -> tuple[bytes, str]:
        """The body and content type (lower case, no parameters) of a 200 answer."""
        return _get(url, self.ref, self.timeout, self.settings, self.env, accept=accept)


def _resolve_npm(ask: _Ask, wanted: str) -> ResolvedPackage:
    ref = ask.ref
    url = f"{ask.settings.url}/{quote(ref.name, safe='@')}/{quote(wanted, safe='')}"
    body, _ = ask.get(url, accept="application/json")
    answer = _json_object(body, ref)
    version = answer.get("version")
    if not isinstance(version, str) or not NPM_EXACT.match(version):
        raise PackageError(
            f"the registry answered a version of {ref.name} that is not a plain version number"
        )
    if answer.get("name") not in (None, ref.name):
        raise PackageError(f"the registry answered another package than {ref.name}")
    if NPM_EXACT.match(wanted) and version != wanted:
        raise PackageError(f"the registry answered {ref.name} {version} when asked for {wanted}")
    dist = answer.get("dist")
    integrity = dist.get("integrity") if isinstance(dist, dict) else None
    if integrity is not None and not (isinstance(integrity, str) and integrity.isascii()):
        raise PackageError(f"the registry answered a malformed integrity for {ref.label()}")
    return ResolvedPackage("npm", ref.name, ref.requested, version, integrity or None)


def _resolve_pypi(ask: _Ask, wanted: str) -> ResolvedPackage:
    from packaging.version import InvalidVersion, Version

    from toolpin.packages.simple import parse_simple_html, parse_simple_json

    ref = ask.ref
    url = f"{ask.settings.url}/{quote(ref.name, safe='')}/"
    body, kind = ask.get(url, accept=SIMPLE_ACCEPT)
    try:
        if kind.startswith("application/vnd.pypi.simple.v1+json"):
            page = parse_simple_json(body, ref.name)
        elif kind in ("text/html", "application/vnd.pypi.simple.v1+html", ""):
            page = parse_simple_html(body, ref.name, base=url)
        else:
            raise PackageError(f"the package index answered an unknown kind of page for {ref.name}")
    except ValueError as exc:
        raise PackageError(
            f"the package index answered a malformed page for {ref.name} ({exc})"
        ) from None
    files = [f for f in page if f.version is not None]
    if wanted:
        try:
            target = Version(wanted)
        except InvalidVersion:
            raise PackageError(f"{wanted!r} is not a plain version of {ref.name}") from None
        chosen = [f for f in files if f.version == target]
        if not chosen:
            raise PackageError(f"{ref.name} {wanted} is not found in the package index")
    else:
        released = [f for f in files if not f.yanked and f.version is not None]
        stable = [f for f in released if not f.version.is_prerelease]  # type: ignore[union-attr]
        pool = stable or released
        if not pool:
            raise PackageError(f"{ref.name} is not found in the package index (no release files)")
        newest = max(f.version for f in pool if f.version is not None)
        chosen = [f for f in files if f.version == newest]
        target = newest
    version = str(target)
    if not PYPI_EXACT.match(version):
        raise PackageError(
            f"the package index answered a version of {ref.name} that is not a plain version number"
        )
    recorded: list[tuple[str, str]] = []
    for item in chosen:
        if not _is_sha256(item.sha256):
            raise PackageError(
                f"the package index gives no sha256 digest for a file of {ref.name} {version}"
            )
        assert item.sha256 is not None
        recorded.append((item.filename, item.sha256))
    return ResolvedPackage(
        "pypi", ref.name, ref.requested, version, None, tuple(sorted(set(recorded)))
    )


def _is_sha256(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _SHA256_HEX


def _client(
    settings: RegistrySettings, env: Mapping[str, str] | None, timeout: float
) -> httpx2.Client:
    import httpx2

    from toolpin.util.net import tls_context

    try:
        verify: Any = (
            tls_context(env, extra_cafiles=[settings.cafile] if settings.cafile else [])
            if settings.verify
            else False
        )
    except InputError as exc:
        raise PackageError(exc.message, advice=exc.advice) from None
    return httpx2.Client(
        timeout=timeout,
        follow_redirects=True,
        max_redirects=3,
        verify=verify,
        trust_env=True,
        proxy=settings.proxy or None,
    )


def _get(
    url: str,
    ref: PackageRef,
    timeout: float,
    settings: RegistrySettings,
    env: Mapping[str, str] | None,
    *,
    accept: str,
) -> tuple[bytes, str]:
    """The body and content type (lower case, no parameters) of a 200 answer."""
    import httpx2

    where = "the npm registry" if ref.ecosystem == "npm" else "the package index"
    headers = {"Accept": accept}
    if settings.token:
        headers["Authorization"] = f"Bearer {settings.token}"
    try:
        with (
            _client(settings, env, timeout) as client,
            client.stream("GET", url, headers=headers) as response,
        ):
            if response.status_code == 404:
                raise PackageError(f"{ref.label()} is not found in the registry ({where})")
            if response.status_code != 200:
                raise PackageError(
                    f"{where} answered HTTP {response.status_code} for {ref.label()}"
                )
            if settings.token and urljoin(url, "/") != urljoin(str(response.url), "/"):
                raise PackageError(f"{where} redirected to another host for {ref.label()}")
            kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            return read_capped(response.iter_bytes(), MAX_ANSWER_BYTES, _too_large), kind
    except httpx2.TimeoutException:
        raise PackageError(
            f"{where} did not answer within {timeout:g}s for {ref.label()}"
        ) from None
    except httpx2.HTTPError as exc:
        raise PackageError(
            f"cannot reach {where} for {ref.label()} ({type(exc).__name__})",
            advice=_network_advice(exc),
        ) from None


def _network_advice(exc: Exception) -> str | None:
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return (
            "The registry's certificate is not trusted here; name your CA file in "
            "SSL_CERT_FILE (or npm's cafile)."
        )
    return None


def _too_large() -> PackageError:
    return PackageError(
        f"the registry answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MiB"
    )


def _json_object(body: bytes, ref: PackageRef) -> dict[str, Any]:
    where = "the npm registry" if ref.ecosystem == "npm" else "the package index"
    try:
        data = json.loads(body, object_pairs_hook=unique_members)
    except (ValueError, UnicodeDecodeError):
        raise PackageError(
            f"{where} answered something that is not JSON for {ref.label()}"
        ) from None
    if not isinstance(data, dict):
        raise PackageError(f"{where} answered something that is not an object for {ref.label()}")
    return data
