"""TLS trust for toolpin's own HTTP clients, from the machine's usual settings.

Behind a TLS-intercepting proxy the proxy's CA is configured the usual ways; toolpin's
registry and HTTP-probe clients trust it the same ways:

* the system's trust store (what ``httpx2`` uses without settings);
* plus every CA file named by ``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``
  and ``NODE_EXTRA_CA_CERTS``, and the folder ``SSL_CERT_DIR`` (added to the store, never
  replacing it, so a file holding only the proxy's CA works as well as a full bundle);
* plus a file the caller names (npm's ``cafile``, ``pip``'s ``cert``).

A variable naming a file that cannot be read is an error (exit 2, with the variable's
name), never a silent fall back to fewer or more roots. Proxy variables (``HTTPS_PROXY``,
``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, upper or lower case) are honoured by the
registry clients through ``httpx2``'s ``trust_env``, and by the remote-server clients
(``toolpin run --url``, the lock's probe) through :func:`environment_proxies`, which reads
them exactly as ``trust_env`` does.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from toolpin.errors import InputError

CA_FILE_VARIABLES: Final = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
)
CA_DIR_VARIABLES: Final = ("SSL_CERT_DIR",)


def environment_proxies() -> dict[str, str | None]:
    """The proxies the environment configures, as ``httpx2`` mount patterns: a pattern
    (``https://``, ``all://*.example.com``...) maps to a proxy URL, or to ``None`` for a
    ``NO_PROXY`` host (a direct connection). ``NO_PROXY=*`` gives no proxy at all.

    ``httpx2``'s own reading of the environment (``trust_env``), so a remote server is
    reached through the same proxy as the registries."""
    from httpx2._utils import get_environment_proxies

    return get_environment_proxies()


def read_capped(chunks: Iterable[bytes], cap: int, too_large: Callable[[], Exception]) -> bytes:
    """The bytes of a streamed answer (``response.iter_bytes()``), joined; raises
    ``too_large()`` as soon as they pass ``cap`` bytes, before the rest is read."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > cap:
            raise too_large()
        parts.append(chunk)
    return b"".join(parts)


def _system_context() -> ssl.SSLContext:
    import httpcore2

    # The trust store without the SSL_CERT_* shortcut (those are added below, to it).
    return httpcore2.default_ssl_context(_trust_env=False)


_CONTEXTS: dict[tuple[object, ...], ssl.SSLContext] = {}


def _stamp(path: str | None) -> tuple[str, int, int] | None:
    """A CA file or folder as the cache sees it: its path, and its size and time (a
    changed file is read again)."""
    if not path:
        return None
    try:
        info = os.stat(path)
    except OSError:
        return (path, -1, -1)
    return (path, info.st_size, info.st_mtime_ns)


def tls_context(
    env: Mapping[str, str] | None = None, *, extra_cafiles: Sequence[str] = ()
) -> ssl.SSLContext:
    """A verifying client context: the system store plus the configured CA files.

    Loading the system store costs tens of milliseconds, so the context is made once per
    process for the same CA settings (the same variables naming the same files, unchanged)
    and shared; every caller uses it as it is (verification settings are never changed on
    it)."""
    env = os.environ if env is None else env
    key = (
        *(_stamp(env.get(name)) for name in (*CA_FILE_VARIABLES, *CA_DIR_VARIABLES)),
        *(_stamp(path) for path in extra_cafiles),
    )
    cached = _CONTEXTS.get(key)
    if cached is None:
        cached = _CONTEXTS[key] = _new_context(env, extra_cafiles)
    return cached


def _new_context(env: Mapping[str, str], extra_cafiles: Sequence[str]) -> ssl.SSLContext:
    context = _system_context()
    sources = [(name, env.get(name)) for name in CA_FILE_VARIABLES]
    sources += [("a configured CA file", path) for path in extra_cafiles]
    seen: set[str] = set()
    for name, path in sources:
        if not path or path in seen:
            continue
        seen.add(path)
        try:
            context.load_verify_locations(cafile=path)
        except (OSError, ssl.SSLError):
            raise InputError(
                f"{name} names a CA file that cannot be read as PEM certificates",
                advice="Point it at a readable PEM file, or unset it.",
            ) from None
    for name in CA_DIR_VARIABLES:
        path = env.get(name)
        if path and os.path.isdir(path):
            try:
                context.load_verify_locations(capath=path)
            except (OSError, ssl.SSLError):
                raise InputError(f"{name} names a CA folder that cannot be read") from None
    return context
