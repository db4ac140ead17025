"""The pull request's one toolpin comment, kept up to date (``snapshot --check --comment``).

In GitHub Actions, on a ``pull_request`` event: the comments of the pull request are
listed (GitHub REST, ``GET /repos/{repo}/issues/{n}/comments``), the one that starts with
:data:`MARKER` and was written by the token's account (``github-actions[bot]`` for the
workflow's ``GITHUB_TOKEN``) is edited in place (``PATCH .../issues/comments/{id}``);
only when there is none is one created (``POST``), and only for a change: a server that
matches its baseline updates an existing comment (so it no longer shows an old diff) but
never adds one. One comment per pull request, never one per push.

Only ``GITHUB_API_URL`` is contacted (``https://``, or ``http://`` on a loopback address),
and only when asked. A token without the permission (403, 404) or any other failure is
reported in one line and never changes the check's exit code; nothing GitHub answers is
ever printed.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from toolpin.core.canonical import parse_json
from toolpin.errors import InputError, JSONError, ToolpinError
from toolpin.util.fs import read_input

MARKER: Final = "<!-- toolpin snapshot -->"
"""The hidden first line of toolpin's comment (an HTML comment GitHub does not show)."""
DEFAULT_AUTHOR: Final = "github-actions[bot]"
MAX_BODY: Final = 65_000
"""GitHub refuses a comment longer than 65,536 characters."""
MAX_PAGES: Final = 30
"""Pages of 100 comments read while looking for the marked one."""
_TIMEOUT: Final = 20.0


class CommentError(ToolpinError):
    """The comment could not be written (reported as a warning, exit code unchanged)."""


@dataclass(frozen=True)
class PullRequest:
    """Where the comment goes."""

    api: str
    repository: str
    number: int
    token: str


@dataclass(frozen=True)
class Posted:
    """What was done: ``updated`` or ``created`` a comment, or ``skipped`` (no change to
    report and no comment to update)."""

    action: str
    comment_id: int | None = None


def pull_request_from_env(env: Mapping[str, str]) -> PullRequest:
    """The pull request of the running workflow. Raises :class:`CommentError`."""
    token = env.get("GITHUB_TOKEN", "")
    repository = env.get("GITHUB_REPOSITORY", "")
    event_path = env.get("GITHUB_EVENT_PATH", "")
    api = env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    if not token:
        raise CommentError("no GITHUB_TOKEN to comment with")
    if repository.count("/") != 1 or not all(
        part and all(c.isalnum() or c in "-_." for c in part) for part in repository.split("/")
    ):
        raise CommentError("GITHUB_REPOSITORY is not owner/name")
    _check_api(api)
    if not event_path:
        raise CommentError("no GITHUB_EVENT_PATH (not running in GitHub Actions)")
    from pathlib import Path

    try:
        event = parse_json(read_input(Path(event_path), error=InputError))
    except (InputError, JSONError):
        raise CommentError("the workflow's event file cannot be read") from None
    pr = event.get("pull_request") if isinstance(event, dict) else None
    number = pr.get("number") if isinstance(pr, dict) else None
    if type(number) is not int or number <= 0:
        raise CommentError("not a pull_request event, so there is no pull request to comment on")
    return PullRequest(api, repository, number, token)


def _check_api(api: str) -> None:
    parts = urlsplit(api)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname:
        try:
            if ipaddress.ip_address(parts.hostname).is_loopback:
                return
        except ValueError:
            pass
    raise CommentError("GITHUB_API_URL must be an https:// URL")


def upsert(
    pr: PullRequest,
    body: str,
    *,
    create: bool,
    author: str = DEFAULT_AUTHOR,
    env: Mapping[str, str] | None = None,
) -> Posted:
    """Edit toolpin's marked comment on ``pr`` to ``body``, or create it when ``create``
    and there is none. Raises :class:`CommentError` (one line, no GitHub text)."""
    import httpx2

    from toolpin.util.net import tls_context

    text = f"{MARKER}\n{body}"
    if len(text) > MAX_BODY:
        text = text[: MAX_BODY - 80] + "\n\n(cut: the comment was too long for GitHub)\n"
    headers = {
        "Accept": "application/vnd.github+json",
        "Authorization": f"Bearer {pr.token}",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "toolpin",
    }
    base = f"{pr.api}/repos/{pr.repository}/issues"
    try:
        verify: Any = tls_context(env)
    except InputError as exc:
        raise CommentError(exc.message) from None
    try:
        with httpx2.Client(
            timeout=_TIMEOUT, headers=headers, verify=verify, trust_env=True, follow_redirects=False
        ) as client:
            found = _find(client, f"{base}/{pr.number}/comments", author)
            if found is not None:
                _send(client, "PATCH", f"{base}/comments/{found}", text)
                return Posted("updated", found)
            if not create:
                return Posted("skipped")
            made = _send(client, "POST", f"{base}/{pr.number}/comments", text)
            return Posted("created", made)
    except httpx2.HTTPError as exc:
        raise CommentError(f"GitHub could not be reached ({type(exc).__name__})") from None


def _status_error(status: int) -> CommentError:
    if status in (401, 403, 404):
        return CommentError(
            f"GitHub refused the comment (HTTP {status}); the token needs "
            "`pull-requests: write` (a pull request from a fork gets a read-only token)"
        )
    return CommentError(f"GitHub answered HTTP {status}")


def _json(data: bytes) -> Any:
    try:
        return parse_json(data)
    except JSONError:
        raise CommentError("GitHub's answer is not JSON") from None


def _find(client: Any, url: str, author: str) -> int | None:
    """The id of the first comment that starts with the marker, by ``author``."""
    for page in range(1, MAX_PAGES + 1):
        answer = client.get(url, params={"per_page": 100, "page": page})
        if answer.status_code != 200:
            raise _status_error(answer.status_code)
        comments = _json(answer.content)
        if not isinstance(comments, list):
            raise CommentError("GitHub's list of comments is not a list")
        for comment in comments:
            if not isinstance(comment, dict):
                continue
            body, user, cid = comment.get("body"), comment.get("user"), comment.get("id")
            login = user.get("login") if isinstance(user, dict) else None
            if (
                isinstance(body, str)
                and body.startswith(MARKER)
                and login == author
                and type(cid) is int
            ):
                return cid
        if len(comments) < 100:
            return None
    return None


def _send(client: Any, method: str, url: str, body: str) -> int | None:
    answer = client.request(
        method,
        url,
        content=json.dumps({"body": body}).encode(),
        headers={"Content-Type": "application/json"},
    )
    if answer.status_code not in (200, 201):
        raise _status_error(answer.status_code)
    made = _json(answer.content)
    cid = made.get("id") if isinstance(made, dict) else None
    return cid if type(cid) is int else None
