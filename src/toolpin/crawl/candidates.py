"""What discovery hands to the prober: one :class:`Candidate` per server.

A candidate says how to reach a server (a local command, a Streamable HTTP URL, or a
package to install first) and where it was found. Its :attr:`Candidate.id` is stable across
runs and machines:

* ``config`` candidates (a client-style ``mcpServers`` file): the pin store's id of the
  command as written (:func:`toolpin.pins.serverid.server_id`), so a crawl of a local config
  and ``toolpin run`` agree on ids; a remote entry uses ``config-url:<url>``;
* every other source: the first 16 hex characters of SHA-256 over ``"<source>:<key>"``
  (``registry:<name>``, ``npm:<package>``, ``github:<owner/repo>``), as the reference
  crawler does.

Names, descriptions and URLs come from third parties: they are stored and shown through
:func:`toolpin.core.render.visible`, never put in an error message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

Source = Literal["config", "registry", "npm", "github"]
Transport = Literal["stdio", "streamable-http", "unknown"]
SOURCES: Final[tuple[Source, ...]] = ("config", "registry", "npm", "github")

MAX_NAME_CHARS: Final = 256
MAX_URL_CHARS: Final = 2048
MAX_TEXT_CHARS: Final = 512


def crawl_id(source: str, key: str) -> str:
    """``sha256("<source>:<key>")[:16]``."""
    return hashlib.sha256(f"{source}:{key}".encode()).hexdigest()[:16]


def without_query(url: str) -> str:
    """``url`` without credentials, query and fragment (where secrets usually sit)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host if parts.port is None else f"{host}:{parts.port}"
    except ValueError:
        return "(unparsable URL)"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def clip(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters (None stays None)."""
    if text is None:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class PackageCoords:
    """A package that starts a server: ecosystem, name, exact version, registry digest."""

    ecosystem: str
    """``npm`` | ``pypi`` | ``oci`` | ... (the registry's ``registryType``)."""
    name: str
    version: str | None = None
    digest: str | None = None
    """npm ``dist.integrity``, a wheel's ``sha256:<hex>``, an OCI digest, when known."""
    files: tuple[tuple[str, str], ...] = ()
    """PyPI: ``(filename, sha256 hex)`` of every file of the release, as the registry
    lists them (a config's ``uvx`` entry may run any of them)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ecosystem": self.ecosystem, "name": self.name}
        if self.version is not None:
            out["version"] = self.version
        if self.digest is not None:
            out["digest"] = self.digest
        if self.files:
            out["files"] = [{"filename": f, "sha256": h} for f, h in self.files]
        return out

    def identity(self) -> tuple[str | None, str | None, tuple[tuple[str, str], ...]]:
        """What a package change is judged by: version, digest and files."""
        return (self.version, self.digest, self.files)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PackageCoords:
        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        files: list[tuple[str, str]] = []
        raw = data.get("files")
        for item in raw if isinstance(raw, list) else []:
            if isinstance(item, dict):
                filename, sha = item.get("filename"), item.get("sha256")
                if isinstance(filename, str) and isinstance(sha, str):
                    files.append((filename, sha))
        return cls(
            ecosystem=text("ecosystem") or "unknown",
            name=text("name") or "",
            version=text("version"),
            digest=text("digest"),
            files=tuple(files),
        )


@dataclass(frozen=True)
class Candidate:
    """One server to look at."""

    id: str
    name: str
    source: Source
    transport: Transport
    argv: tuple[str, ...] = ()
    """The command of a local (``config``) server, already expanded."""
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Variables the config sets for a local server (values never leave this object)."""
    cwd: str | None = None
    url: str | None = None
    """The Streamable HTTP endpoint."""
    package: PackageCoords | None = None
    """A package to install in a scratch prefix and run (needs ``allow_exec``)."""
    description: str | None = None
    homepage: str | None = None
    skip_reason: str | None = None
    """Set when the candidate is recorded but cannot be probed (fixed text)."""

    @property
    def probeable(self) -> bool:
        return self.skip_reason is None and self.transport != "unknown"

    @property
    def public_url(self) -> str | None:
        """The URL as recorded: a URL from a local config may carry a secret filled in from
        the environment, so its credentials, query and fragment are left out; a URL from a
        public listing is public already and kept whole."""
        if self.url is None:
            return None
        return without_query(self.url) if self.source == "config" else self.url

    def identity(self) -> dict[str, Any]:
        """Which server this is and how it is reached (no env, no free text): the part of
        :meth:`descriptor` a shard's observation file records."""
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "source": self.source,
            "transport": self.transport,
        }
        if self.public_url is not None:
            out["url"] = self.public_url
        if self.package is not None:
            out["package"] = self.package.to_json()
        return out

    def descriptor(self) -> dict[str, Any]:
        """What crawl state keeps to probe the candidate again on a later run (no env)."""
        out = self.identity()
        if self.description is not None:
            out["description"] = self.description
        if self.homepage is not None:
            out["homepage"] = self.homepage
        if self.skip_reason is not None:
            out["skip"] = self.skip_reason
        return out

    @classmethod
    def from_descriptor(cls, data: Mapping[str, Any]) -> Candidate | None:
        """Rebuild a candidate kept by :meth:`descriptor` (``None`` when unusable)."""
        id_, name, source, transport = (
            data.get("id"),
            data.get("name"),
            data.get("source"),
            data.get("transport"),
        )
        if not (isinstance(id_, str) and isinstance(name, str)):
            return None
        if source not in SOURCES or source == "config":
            return None
        if transport not in ("stdio", "streamable-http", "unknown"):
            return None
        url = data.get("url")
        package = data.get("package")
        description = data.get("description")
        homepage = data.get("homepage")
        skip = data.get("skip")
        return cls(
            id=id_,
            name=name,
            source=source,
            transport=transport,
            url=url if isinstance(url, str) else None,
            package=PackageCoords.from_json(package) if isinstance(package, dict) else None,
            description=description if isinstance(description, str) else None,
            homepage=homepage if isinstance(homepage, str) else None,
            skip_reason=skip if isinstance(skip, str) else None,
        )
