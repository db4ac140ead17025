"""Where ``snapshot --check --comment`` would write, read from the workflow's environment:
anything unexpected is a one-line refusal, and nothing is contacted. (The comment itself
is tested against a loopback GitHub API in tests/integrations/test_action.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolpin.maintainer.github import CommentError, pull_request_from_env


def _env(tmp_path: Path, event: object = None, **over: str) -> dict[str, str]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"pull_request": {"number": 7}} if event is None else event))
    return {
        "GITHUB_TOKEN": "t",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_API_URL": "https://api.github.com",
        **over,
    }


def test_a_pull_request_event_names_the_pull_request(tmp_path: Path) -> None:
    pr = pull_request_from_env(_env(tmp_path))
    assert (pr.api, pr.repository, pr.number, pr.token) == ("https://api.github.com", "o/r", 7, "t")
    local = pull_request_from_env(_env(tmp_path, GITHUB_API_URL="http://127.0.0.1:8080/"))
    assert local.api == "http://127.0.0.1:8080"


@pytest.mark.parametrize(
    ("event", "over", "reason"),
    [
        ({"push": {}}, {}, "not a pull_request event"),
        ({"pull_request": {"number": "7"}}, {}, "not a pull_request event"),
        ({"pull_request": {"number": True}}, {}, "not a pull_request event"),
        (None, {"GITHUB_TOKEN": ""}, "no GITHUB_TOKEN"),
        (None, {"GITHUB_REPOSITORY": "o/r/../x"}, "owner/name"),
        (None, {"GITHUB_REPOSITORY": "o/r?x=1"}, "owner/name"),
        (None, {"GITHUB_API_URL": "http://api.github.com"}, "https://"),
        (None, {"GITHUB_API_URL": "http://10.0.0.1"}, "https://"),
        (None, {"GITHUB_API_URL": "file:///etc/passwd"}, "https://"),
        (None, {"GITHUB_EVENT_PATH": ""}, "not running in GitHub Actions"),
        (None, {"GITHUB_EVENT_PATH": "/dev/zero"}, "cannot be read"),
    ],
)
def test_anything_else_is_refused_in_one_line(
    tmp_path: Path, event: object, over: dict[str, str], reason: str
) -> None:
    with pytest.raises(CommentError) as caught:
        pull_request_from_env(_env(tmp_path, event, **over))
    assert reason in caught.value.message
    assert "\n" not in caught.value.message


def test_a_corrupt_event_file_is_refused(tmp_path: Path) -> None:
    env = _env(tmp_path)
    Path(env["GITHUB_EVENT_PATH"]).write_bytes(b'{"pull_request": {"number": 7, "number": 8}}')
    with pytest.raises(CommentError, match="cannot be read"):
        pull_request_from_env(env)
