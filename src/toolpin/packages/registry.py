"""Resolve a package to an exact version and the registry's digest of its contents.

* npm: ``GET <registry>/<name>/<version or tag>`` (scoped names URL-encoded); the answer's
  ``version`` must be a plain semantic version and ``dist.integrity`` is recorded.
* PyPI: ``GET <index>/pypi/<name>[/<version>]/json``; ``info.version`` must be a plain
  PEP 440 number and every file of the release is recorded as ``(filename, sha256)``.
* OCI: no network. Only a digest written in the command (``image@sha256:...``) is recorded.

Registry URLs: ``TOOLPIN_NPM_REGISTRY`` first, then a ``--registry`` flag in the command,
then ``npm_config_registry``, then ``https://registry.npmjs.org``; ``TOOLPIN_PYPI_URL`` or
``https://pypi.org``. Answers are capped in size, time-limited, and parsed as strict JSON
(a repeated member name is refused). ``httpx2`` is imported only when a request is made.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from toolpin.errors import LockfileError, PackageError
from toolpin.packages.spec import (
    NPM_EXACT,
    OCI_DIGEST,
    PYPI_EXACT,
    Ecosystem,
    PackageRef,
    _quote,
    check_plain_version,
)

if TYPE_CHECKING:
    import httpx2

ENV_NPM_REGISTRY = "TOOLPIN_NPM_REGISTRY"
ENV_PYPI_URL = "TOOLPIN_PYPI_URL"
DEFAULT_NPM_REGISTRY = "https://registry.npmjs.org"
DEFAULT_PYPI_URL = "https://pypi.org"
MAX_ANSWER_BYTES = 8 * 1024 * 1024
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


def npm_registry(ref: PackageRef) -> str:
    """The npm registry base URL to ask about ``ref`` (see module doc for the order)."""
    for candidate in (
        os.environ.get(ENV_NPM_REGISTRY),
        ref.registry,
        os.environ.get("npm_config_registry"),  # noqa: SIM112 - npm writes it lower-case
        os.environ.get("NPM_CONFIG_REGISTRY"),
    ):
        if candidate:
            return candidate.rstrip("/")
    return DEFAULT_NPM_REGISTRY


def pypi_url() -> str:
    """The PyPI base URL (``TOOLPIN_PYPI_URL`` or ``https://pypi.org``)."""
    return (os.environ.get(ENV_PYPI_URL) or DEFAULT_PYPI_URL).rstrip("/")


def resolve(
    ref: PackageRef, *, timeout: float = 15.0, version: str | None = None
) -> ResolvedPackage:
    """Ask the registry which exact release ``ref`` (or ``version``) is, and its digest.

    ``version`` overrides what the command requested (used to re-check a locked
    version). Raises :class:`PackageError` for a version range, an unknown package, a
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
    if ref.ecosystem == "npm":
        return _resolve_npm(ref, wanted or "latest", timeout)
    return _resolve_pypi(ref, "" if wanted in ("", "latest") else wanted, timeout)


def latest_version(ref: PackageRef, *, timeout: float = 15.0) -> str:
    """The version the registry serves as newest (npm tag ``latest``, PyPI newest release)."""
    if ref.ecosystem == "oci":
        raise PackageError(f"image {ref.name}: toolpin does not look up newer image digests")
    if ref.ecosystem == "npm":
        return _resolve_npm(ref, "latest", timeout).version
    return _resolve_pypi(ref, "", timeout).version


def _resolve_npm(ref: PackageRef, wanted: str, timeout: float) -> ResolvedPackage:
    url = f"{npm_registry(ref)}/{quote(ref.name, safe='@')}/{quote(wanted, safe='')}"
    answer = _get_json(url, ref, timeout)
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


def _resolve_pypi(ref: PackageRef, wanted: str, timeout: float) -> ResolvedPackage:
    path = (
        f"{quote(ref.name, safe='')}/{quote(wanted, safe='')}/json"
        if wanted
        else (f"{quote(ref.name, safe='')}/json")
    )
    answer = _get_json(f"{pypi_url()}/pypi/{path}", ref, timeout)
    info = answer.get("info")
    version = info.get("version") if isinstance(info, dict) else None
    if not isinstance(version, str) or not PYPI_EXACT.match(version):
        raise PackageError(
            f"the registry answered a version of {ref.name} that is not a plain version number"
        )
    if wanted and version != wanted:
        raise PackageError(f"the registry answered {ref.name} {version} when asked for {wanted}")
    urls = answer.get("urls")
    if not isinstance(urls, list):
        raise PackageError(f"the registry answer for {ref.name} {version} lists no files")
    files: list[tuple[str, str]] = []
    for item in urls:
        digests = item.get("digests") if isinstance(item, dict) else None
        filename = item.get("filename") if isinstance(item, dict) else None
        digest = digests.get("sha256") if isinstance(digests, dict) else None
        if not isinstance(filename, str) or not _is_sha256(digest):
            raise PackageError(f"the registry answer for {ref.name} {version} has a bad file entry")
        assert isinstance(digest, str)
        files.append((filename, digest))
    return ResolvedPackage("pypi", ref.name, ref.requested, version, None, tuple(sorted(files)))


def _is_sha256(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _SHA256_HEX


def _get_json(url: str, ref: PackageRef, timeout: float) -> dict[str, Any]:
    import httpx2

    where = "the npm registry" if ref.ecosystem == "npm" else "PyPI"
    try:
        with (
            httpx2.Client(timeout=timeout, follow_redirects=True, max_redirects=3) as client,
            client.stream("GET", url, headers={"Accept": "application/json"}) as response,
        ):
            if response.status_code == 404:
                raise PackageError(f"{ref.label()} is not found in the registry ({where})")
            if response.status_code != 200:
                raise PackageError(
                    f"{where} answered HTTP {response.status_code} for {ref.label()}"
                )
            body = _read_capped(response)
    except httpx2.TimeoutException:
        raise PackageError(
            f"{where} did not answer within {timeout:g}s for {ref.label()}"
        ) from None
    except httpx2.HTTPError as exc:
        raise PackageError(
            f"cannot reach {where} for {ref.label()} ({type(exc).__name__})"
        ) from None
    try:
        data = json.loads(body, object_pairs_hook=_no_repeats)
    except (ValueError, UnicodeDecodeError):
        raise PackageError(
            f"{where} answered something that is not JSON for {ref.label()}"
        ) from None
    if not isinstance(data, dict):
        raise PackageError(f"{where} answered something that is not an object for {ref.label()}")
    return data


def _read_capped(response: httpx2.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise PackageError(
                f"the registry answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MiB"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError("repeated member name")
        out[key] = value
    return out
