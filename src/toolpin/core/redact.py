"""A server's command line with what looks like a secret replaced: safe to store and show.

The argv of a server often carries a key (``--api-key sk-...``, ``env TOKEN=... node``,
``https://user:pass@host``). The pin keeps the argv only as this function writes it, so a
person reviewing a changed command sees what moved (a venv, a package version) and never
a secret. A secret is replaced by ``‹redacted:1a2b3c4d›``: the first 8 hex characters of
SHA-256 over the value (tagged with this module's purpose), so a changed secret still
shows as a change ("secret changed") without showing either value. That hash tells no
more than the command id already does (the SHA-256 of the whole argv, stored since the
first toolpin).

What counts as a secret (decided here, documented in docs/review.md):

- ``NAME=value`` where ``NAME`` is written like an environment variable
  (``[A-Z_][A-Z0-9_]*``): always the value, whatever the name (``env TZ=UTC`` too), and
  every ``name=value`` assignment of ``env`` before the program it runs. The values of
  the environment are never stored in clear.
- ``name=value`` otherwise (``--api-key=...``, ``token=...``) when ``name`` looks secret:
  one of its words (split on ``-``, ``_``, ``.``) is a secret word (:data:`SECRET_WORDS`)
  or ends in ``token``, ``key``, ``secret``, ``password``.
- the argument after such a flag (``--token X``, ``--api-key X``, ``--password X``),
  unless the flag names a place or a kind (``--token-file PATH``, ``--auth-type basic``)
  or is a negation (``--no-auth``). ``-p`` is *not* taken as a password flag: it is
  ``npx -p PACKAGE`` and ``--port`` far more often; a long random password after it is
  still caught by the entropy rule.
- a header value ``Authorization: ...`` (and other secret-looking header names).
- in a URL: the user information (``user:pass@``) and the value of a secret-looking
  query parameter.
- a well-known key prefix (``sk-``, ``ghp_``, ``github_pat_``, ``xox?-``, ``glpat-``,
  ``AKIA``) and any long high-entropy word: at least 20 characters of base64 or URL-safe
  alphabet with letters and digits and at least 4 bits of entropy per character, or at
  least 32 hex digits with at least 3 bits (a 40-digit commit hash is redacted too: a
  change of it still shows).

Ordinary arguments stay as they are: paths, flags, package names and versions
(``@scope/pkg@1.2.3``, ``pkg==1.2.3``), ports, host names.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Final
from urllib.parse import parse_qsl, urlsplit

__all__ = ["MARKER_PREFIX", "is_marker", "redact_argv", "redact_env", "redact_value"]

MARKER_PREFIX: Final = "‹redacted:"
_MARKER_END: Final = "›"
_MARKER = re.compile(r"‹redacted:[0-9a-f]{8}›")

SECRET_WORDS: Final = frozenset(
    {
        "token", "secret", "password", "passwd", "pass", "pwd", "auth", "authorization",
        "credential", "credentials", "cred", "creds", "key", "apikey", "bearer", "cookie",
        "session", "signature", "sig", "private", "jwt", "otp", "pat", "dsn",
    }
)  # fmt: skip
"""Words of a name that make its value a secret (any word of ``api-key``, ``X_TOKEN``)."""

_SECRET_ENDINGS: Final = ("token", "key", "secret", "password", "passwd")
_NOT_A_VALUE: Final = frozenset(
    {"file", "path", "dir", "env", "var", "name", "type", "mode", "url", "id", "header"}
)
"""A last word that makes a secret-sounding flag name a place or a kind, not the secret."""

_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")
_FLAG_ASSIGN = re.compile(r"(-{0,2}[A-Za-z_][A-Za-z0-9_.\-]*)=(.*)\Z", re.S)
_WORDS = re.compile(r"[-_.]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9\-]*):\s*(.+)\Z", re.S)
_PREFIXED = re.compile(
    r"(sk-|sk_live_|sk_test_|rk_live_|ghp_|gho_|ghs_|ghu_|github_pat_|glpat-|xox[abprs]-|AKIA|"
    r"AIza|hf_|npm_|pypi-)[A-Za-z0-9_\-]{12,}"
)
_BASE64ISH = re.compile(r"[A-Za-z0-9+=_\-~]{20,}\Z")
_HEX = re.compile(r"[0-9a-fA-F]{32,}\Z")
_JWT = re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.")


def marker(value: str) -> str:
    """``‹redacted:1a2b3c4d›`` for ``value`` (the same value, the same marker; a marker
    stays itself, so redacting twice changes nothing)."""
    if _MARKER.fullmatch(value):
        return value
    digest = hashlib.sha256(b"toolpin redacted argv\x00" + value.encode("utf-8", "surrogatepass"))
    return f"{MARKER_PREFIX}{digest.hexdigest()[:8]}{_MARKER_END}"


def is_marker(text: str) -> bool:
    """Whether ``text`` holds a redaction marker."""
    return MARKER_PREFIX in text


def _words(name: str) -> list[str]:
    name = _CAMEL.sub("_", name.lstrip("-"))
    return [w for w in _WORDS.split(name.lower()) if w]


def secret_name(name: str) -> bool:
    """Whether a flag, parameter or header name says its value is a secret."""
    words = _words(name)
    if not words or words[0] == "no" or words[-1] in _NOT_A_VALUE:
        return False
    return any(w in SECRET_WORDS or w.endswith(_SECRET_ENDINGS) for w in words)


def _entropy(text: str) -> float:
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _classes(text: str) -> int:
    """How often the kind of character (upper, lower, digit) changes along ``text``."""
    kinds = ["u" if c.isupper() else "l" if c.islower() else "d" for c in text]
    return sum(1 for a, b in itertools.pairwise(kinds) if a != b)


def looks_random(text: str) -> bool:
    """A key-like word: a known key prefix, a JSON web token, or a long word of a key's
    alphabet whose characters are spread (entropy) and mixed (letters and digits
    alternating, as no word or version number does)."""
    if _PREFIXED.search(text) or _JWT.search(text):
        return True
    for piece in re.split(r"[/:,;@.]", text):
        if _HEX.match(piece):
            if _entropy(piece) >= 3.0:
                return True
            continue
        if not _BASE64ISH.match(piece):
            continue
        core = re.sub(r"[-_+=~]", "", piece)
        if (
            len(core) >= 16
            and any(c.isdigit() for c in core)
            and any(c.isalpha() for c in core)
            and _entropy(core) >= 3.5
            and _classes(core) >= 0.2 * len(core)
        ):
            return True
    return False


def _redact_url(text: str) -> str | None:
    """The URL with its user information and secret query values replaced, or ``None``
    when ``text`` is not a URL with an authority."""
    if "://" not in text:
        return None
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if not parts.scheme or not parts.netloc:
        return None
    out = text
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        out = out.replace(userinfo + "@", marker(userinfo) + "@", 1)
    if parts.query:
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if value and (secret_name(name) or looks_random(value)):
                raw = _raw_query_value(parts.query, name)
                if raw:
                    out = out.replace(f"{name}={raw}", f"{name}={marker(value)}", 1)
    path = urlsplit(out).path
    if any(looks_random(seg) and not is_marker(seg) for seg in path.split("/")):
        out = out.replace(path, "/".join(_redact_word(seg) for seg in path.split("/")), 1)
    return out


def _raw_query_value(query: str, name: str) -> str:
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key == name:
            return value
    return ""


def _redact_word(text: str) -> str:
    return marker(text) if text and looks_random(text) else text


def redact_value(text: str) -> str:
    """One argument, or the value part of one, with a secret in it replaced."""
    if not text:
        return text
    url = _redact_url(text)
    if url is not None:
        return url
    header = _HEADER.match(text)
    if header and secret_name(header.group(1)) and not header.group(2).startswith("//"):
        return f"{header.group(1)}: {marker(header.group(2))}"
    return _redact_word(text)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with every value that looks like a secret replaced by a marker."""
    out: list[str] = []
    secret_next = False
    in_env = bool(argv) and argv[0].replace("\\", "/").rsplit("/", 1)[-1] in ("env", "env.exe")
    for index, arg in enumerate(argv):
        if in_env and index > 0:
            if "=" in arg and not arg.startswith("-"):
                name, _, value = arg.partition("=")  # env's assignments: the environment
                out.append(f"{name}={marker(value)}" if value else arg)
                continue
            if not arg.startswith("-"):
                in_env = False  # the program env runs
        if secret_next:
            secret_next = False
            if not arg.startswith("-") or len(arg) == 1:
                out.append(marker(arg))
                continue
        if index > 0 and arg.startswith("-") and "=" not in arg and secret_name(arg):
            secret_next = True
            out.append(arg)
            continue
        assign = _FLAG_ASSIGN.match(arg)
        if assign is not None and "://" not in assign.group(1):
            name, value = assign.groups()
            if value and (_ENV_NAME.match(name) or secret_name(name)):
                out.append(f"{name}={marker(value)}")
            else:
                out.append(f"{name}={redact_value(value)}")
            continue
        out.append(redact_value(arg))
    return out


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """An environment with every value replaced (names kept): nothing of ``env`` is ever
    stored in clear."""
    return {name: marker(value) for name, value in env.items()}
