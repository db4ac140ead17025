"""The environment a crawled server runs in, and the placeholder-credential rule.

A probed server gets a *minimal* environment: ``PATH``, ``HOME`` (a scratch directory that
is thrown away), ``NODE_ENV=production``, ``CI=1`` and ``NO_UPDATE_NOTIFIER=1``, plus the
variables a local config explicitly sets for it. Nothing else of the crawler's environment
(tokens, cloud credentials, the log key) reaches it.

Placeholder credentials, by the reference crawler's rule: when a server fails and its
stderr names variables it is missing, the probe is retried **once**, and only when
*every* named variable is credential-shaped (a name ending in ``TOKEN``, ``SECRET``,
``KEY``, ``PASSWORD``, ``PASSWD``, ``CREDENTIAL(S)``, ``CLIENT_ID``, ``API_KEY``,
``APIKEY``, ``AUTH``, ``BEARER``, ``DSN`` or ``CONNECTION_STRING``). The retry sets each of
them to :data:`PLACEHOLDER`. A variable that may select what the server offers (such as
``..._TOOLSETS``) blocks the retry: a server observed with an invented configuration would
be logged with a surface nobody sees. Only variable *names* are ever recorded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

PLACEHOLDER: Final = "toolpin-probe-placeholder"
BASE_ENV: Final = {"NODE_ENV": "production", "CI": "1", "NO_UPDATE_NOTIFIER": "1"}
DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"

_VARIABLE: Final = re.compile(r"(?<![A-Za-z0-9_$])\$?\{?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\}?")
_MISSING_CONTEXT: Final = re.compile(
    r"missing|required|not set|must be (?:set|provided|specified|defined)|not defined|undefined"
    r"|not provided|not found|not configured|please (?:set|provide|export)|no \S+ (?:set|found)"
    r"|is empty|environment variable",
    re.IGNORECASE,
)
MAX_NAME_LENGTH: Final = 128


def credential_shaped(name: str) -> bool:
    """Whether a variable name ends like a credential (``GITHUB_TOKEN``, ``OPENAI_API_KEY``)."""
    upper = name.upper()
    return any(upper.endswith(s) for s in _suffixes())


def _suffixes() -> tuple[str, ...]:
    return (
        "TOKEN",
        "SECRET",
        "KEY",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "CREDENTIALS",
        "CLIENT_ID",
        "API_KEY",
        "APIKEY",
        "AUTH",
        "BEARER",
        "DSN",
        "CONNECTION_STRING",
    )


def missing_variables(stderr_tail: str) -> list[str]:
    """Variable names a server's stderr says are missing, in order of first mention.

    Only ``UPPER_SNAKE`` names (with at least one underscore) on lines that speak of
    something missing or required are taken.
    """
    names: list[str] = []
    for line in stderr_tail.splitlines():
        if not _MISSING_CONTEXT.search(line):
            continue
        for match in _VARIABLE.finditer(line):
            name = match.group(1)
            if len(name) <= MAX_NAME_LENGTH and name not in names:
                names.append(name)
    return names


def placeholder_plan(missing: Iterable[str], already: Mapping[str, str]) -> dict[str, str] | None:
    """The variables to add for the one retry, or ``None`` when the rule forbids it.

    ``None`` when nothing is named, when any named variable is not credential-shaped, or
    when a named variable was already set (a placeholder cannot fix it).
    """
    named = list(missing)
    if not named:
        return None
    if not all(credential_shaped(name) for name in named):
        return None
    if any(name in already for name in named):
        return None
    return dict.fromkeys(named, PLACEHOLDER)


def sandbox_env(
    home: Path,
    *,
    extra: Mapping[str, str] | None = None,
    path: str | None = None,
) -> dict[str, str]:
    """The minimal environment for one probe (``extra`` comes last and wins)."""
    env = {"PATH": path or os.environ.get("PATH") or DEFAULT_PATH, "HOME": str(home)}
    env.update(BASE_ENV)
    if os.name == "nt":  # pragma: no cover - Windows needs these to start anything
        for name in ("SYSTEMROOT", "COMSPEC", "PATHEXT", "TEMP", "TMP"):
            if name in os.environ:
                env[name] = os.environ[name]
    if extra:
        env.update(extra)
    return env
