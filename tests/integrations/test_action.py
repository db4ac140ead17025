"""The composite GitHub Action's shell steps, run in order with a shell as a runner would."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integrations.conftest import REPO, Installed

pytestmark = pytest.mark.slow

ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
_EXPR = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")


def _inputs(**given: str) -> dict[str, str]:
    defaults = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    unknown = set(given) - set(defaults)
    assert not unknown, unknown
    return {**defaults, **given}


def _render(text: str, inputs: dict[str, str]) -> str:
    return _EXPR.sub(lambda m: inputs[m.group(1)], text)


def _runs(step: dict[str, Any], inputs: dict[str, str], failed: bool) -> bool:
    """The few `if:` forms the action uses, evaluated as Actions would."""
    cond = step.get("if")
    if cond is None:
        return not failed
    always = "always()" in cond
    for name, value in inputs.items():
        cond = cond.replace(f"inputs.{name}", json.dumps(value).replace('"', "'"))
    cond = cond.replace("always() && ", "").replace("always()", "true")
    cond = re.sub(r"hashFiles\([^)]*\) != ''", "true", cond)
    parts = [p.strip() for p in cond.split("&&")]
    ok = True
    for part in parts:
        if part == "true":
            continue
        left, op, right = re.match(r"(.+?)\s*(==|!=)\s*(.+)", part).groups()  # type: ignore[union-attr]
        ok = ok and ((left.strip() == right.strip()) == (op == "=="))
    return ok and (always or not failed)


def _run_action(
    project: Path,
    installed: Installed,
    *,
    env: dict[str, str] | None = None,
    prefix: tuple[str, ...] = (),
    skip: frozenset[str] = frozenset(),
    **given: str,
) -> tuple[dict[str, str], list[str]]:
    """Run the action's shell steps in order, as a runner would; ``env`` is added to every
    step's environment, ``prefix`` goes before each step's shell (``unshare -rn``), the
    steps named in ``skip`` are left out. Returns the Result step's outputs and the names
    of the steps that ran."""
    inputs = _inputs(**given)
    summary = project / "step_summary.md"
    summary.touch()
    outcomes: dict[str, str] = {}
    outputs: dict[str, dict[str, str]] = {}
    ran: list[str] = []
    failed = False
    for index, step in enumerate(ACTION["runs"]["steps"]):
        if "uses" in step:
            assert re.search(r"@v\d+$", step["uses"]), step["uses"]
            continue
        if step["name"] in skip or not _runs(step, inputs, failed):
            continue
        if step["name"] in _PACKAGE_SET_UP:
            assert installed.exclusive, "a test running the install step: mark installs_into_venv"
        output = project / f"github_output_{index}"
        output.write_text("")
        step_env = installed.env(
            GITHUB_ACTION_PATH=str(REPO),
            GITHUB_OUTPUT=str(output),
            GITHUB_STEP_SUMMARY=str(summary),
            RUNNER_TEMP=str(project.parent),
            TOOLPIN_HOME=str(project / "home"),
            **(env or {}),
            **{k: _render(str(v), inputs) for k, v in step.get("env", {}).items()},
        )
        for key, value in list(step_env.items()):
            if "${{ steps." in value:
                sid, field, name = re.search(  # type: ignore[union-attr]
                    r"steps\.([\w-]+)\.(\w+)(?:\.([\w-]+))?", value
                ).groups()
                if field == "outcome":
                    step_env[key] = outcomes.get(sid, "skipped")
                else:
                    step_env[key] = outputs.get(sid, {}).get(name or "", "")
        done = subprocess.run(
            [*prefix, "bash", "-e", "-c", _render(step["run"], inputs)],
            cwd=project, env=step_env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        ran.append(step["name"])
        written = dict(
            line.split("=", 1) for line in output.read_text().splitlines() if "=" in line
        )
        if "id" in step:
            outcomes[step["id"]] = "success" if done.returncode == 0 else "failure"
            outputs[step["id"]] = written
        STDERR[step["name"]] = done.stderr
        failed = failed or done.returncode != 0
    return outputs.get("result", {}), ran


STDERR: dict[str, str] = {}
"""What each step of the last run wrote to stderr (for the assertions on warnings)."""


def _project(tmp_path: Path, installed: Installed) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    state = project / "demo-state"
    config = json.loads((REPO / "examples" / "mcp.json").read_text())
    config["mcpServers"]["demo"]["env"] = {"TOOLPIN_DEMO_STATE": str(state)}
    (project / ".mcp.json").write_text(json.dumps(config, indent=2))
    shutil.copy(REPO / "examples" / "tools-list.json", project / "tools-list.json")
    env = installed.env(TOOLPIN_HOME=str(project / "home"))
    for argv in (
        ["toolpin", "lock", "--definitions-only"],
        ["toolpin", "pin", "--listing", "tools-list.json", "--lock", "tools.lock.json"],
    ):
        subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True, timeout=300)
    state.write_text("0")  # the next lock --check is the server's first session again
    return project


@pytest.mark.installs_into_venv
def test_a_clean_project_passes(installed: Installed, tmp_path: Path) -> None:
    project = _project(tmp_path, installed)
    results, ran = _run_action(
        project, installed, listing="tools-list.json", **{"lock-args": "--definitions-only"}
    )
    assert results == {"result": "clean"}
    assert ran == ["Install toolpin", "toolpin lock --check", "toolpin check", "Result"]
    assert json.loads((project / "toolpin.sarif").read_text())["version"] == "2.1.0"


@pytest.mark.installs_into_venv
def test_drift_fails_and_still_writes_sarif(installed: Installed, tmp_path: Path) -> None:
    project = _project(tmp_path, installed)
    (project / "demo-state").write_text("1")  # the demo server now shows its changed tool
    shutil.copy(REPO / "examples" / "tools-list.changed.json", project / "tools-list.json")
    results, ran = _run_action(
        project, installed, listing="tools-list.json", **{"lock-args": "--definitions-only"}
    )
    assert results == {"result": "drift"}
    assert "toolpin check" in ran, "the offline check runs even after the lock check failed"
    sarif = json.loads((project / "toolpin.sarif").read_text())
    assert sarif["runs"][0]["results"], "the drift is in the SARIF report"


@pytest.mark.installs_into_venv
def test_the_lock_check_can_be_skipped(installed: Installed, tmp_path: Path) -> None:
    project = _project(tmp_path, installed)
    results, ran = _run_action(project, installed, config="", listing="tools-list.json")
    assert "toolpin lock --check" not in ran
    assert results == {"result": "clean"}
    assert os.path.exists(project / "toolpin.sarif")


# ------------------------------------------------------------------ maintainer mode

SCRIPTED = REPO / "tests" / "servers" / "scripted.py"
SEARCH = {
    "name": "search",
    "description": "Search the notes.",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
}
WIDER = {
    **SEARCH,
    "inputSchema": {
        "type": "object",
        "properties": {"q": {"type": "string"}, "context": {"type": "string"}},
    },
}
HOSTILE = {
    "name": "count",
    "description": "Count. <img src=x onerror=alert(1)> @octocat https://evil.example/x \u202e",
}
MAINTAINER = {"command": "python", "args": "server.py server.json"}
_PACKAGE_SET_UP = frozenset({"Install toolpin"})
"""The runner's package set-up (pip from the index): the one step allowed to reach out.
Left out after the first maintainer test: the fixture's venv holds this checkout's
wheel already."""


def _server_repo(tmp_path: Path, installed: Installed, *, baseline: bool = True) -> Path:
    """A server's repository: its server (the scripted one), and its committed baseline."""
    project = tmp_path / "server-repo"
    project.mkdir(parents=True)
    shutil.copy(SCRIPTED, project / "server.py")
    _serve(project, [SEARCH])
    if baseline:
        argv = ["toolpin", "snapshot", "--", "python", "server.py", "server.json"]
        env = installed.env(TOOLPIN_HOME=str(project / "home"))
        subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True, timeout=300)
    return project


def _serve(project: Path, tools: list[dict[str, Any]]) -> None:
    (project / "server.json").write_text(json.dumps({"tools": tools}), encoding="utf-8")


def _summary(project: Path) -> str:
    return (project / "step_summary.md").read_text(encoding="utf-8")


@pytest.mark.installs_into_venv
def test_maintainer_mode_passes_and_says_so(installed: Installed, tmp_path: Path) -> None:
    project = _server_repo(tmp_path, installed)
    results, ran = _run_action(project, installed, **MAINTAINER)
    assert results == {"result": "clean"}
    assert ran == ["Install toolpin", "toolpin snapshot --check", "Result"], (
        "maintainer mode runs no lock check of a config the server's repository lacks"
    )
    assert "matches `.toolpin/definitions.json`" in _summary(project)


def test_maintainer_mode_writes_the_labelled_diff_to_the_summary(
    installed: Installed, tmp_path: Path
) -> None:
    from tests.maintainer.test_markdown import _assert_safe

    project = _server_repo(tmp_path, installed)
    _serve(project, [WIDER, HOSTILE])
    results, _ = _run_action(project, installed, skip=_PACKAGE_SET_UP, **MAINTAINER)
    assert results == {"result": "drift"}
    summary = _summary(project)
    first = summary.index("Schema changed, description untouched")
    assert first < summary.index("- `search`: `New field: context`")
    assert summary.index("- `search`") < summary.index("- `count`: `New tool")
    assert '+       "context": {' in summary
    assert "toolpin snapshot -- python server.py server.json" in summary
    _assert_safe(summary, code_blocks=2)


def test_a_first_run_writes_the_baseline_and_fails(installed: Installed, tmp_path: Path) -> None:
    project = _server_repo(tmp_path, installed, baseline=False)
    lines = {**MAINTAINER, "args": "server.py\n  server.json\n"}  # a YAML block of words
    results, _ = _run_action(project, installed, skip=_PACKAGE_SET_UP, **lines)
    assert results == {"result": "new"}, "no committed baseline is never a pass"
    assert "no baseline yet" in _summary(project)
    assert (project / ".toolpin" / "definitions.json").is_file()


def test_a_server_that_cannot_start_fails_with_a_summary(
    installed: Installed, tmp_path: Path
) -> None:
    project = _server_repo(tmp_path, installed)
    results, _ = _run_action(
        project, installed, skip=_PACKAGE_SET_UP, command="python", args="missing.py"
    )
    assert results == {"result": "drift"}
    assert "the server could not be checked" in _summary(project)
    assert "exit 2" in _summary(project)


class FakeGitHub:
    """GitHub's REST API for issue comments, on loopback: list (paged), create, edit."""

    def __init__(self, *, refuse: int | None = None) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.comments: list[dict[str, Any]] = [
            # someone else's comment carrying the marker: never edited
            {"id": 1, "body": "<!-- toolpin snapshot -->\nforged", "user": {"login": "mallory"}},
            *({"id": 10 + i, "body": f"chat {i}", "user": {"login": "dev"}} for i in range(120)),
        ]
        self.requests: list[tuple[str, str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, doc: Any) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                from urllib.parse import parse_qs, urlsplit

                url = urlsplit(self.path)
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size)) if size else None
                fake.requests.append((self.command, url.path, self.headers["Authorization"]))
                if refuse is not None:
                    return self._answer(refuse, {"message": "Resource not accessible"})
                if self.command == "GET" and url.path == "/repos/o/r/issues/7/comments":
                    query = parse_qs(url.query)
                    per, page = int(query["per_page"][0]), int(query["page"][0])
                    return self._answer(200, fake.comments[(page - 1) * per : page * per])
                if self.command == "POST" and url.path == "/repos/o/r/issues/7/comments":
                    made = {
                        "id": 999,
                        "body": body["body"],
                        "user": {"login": "github-actions[bot]"},
                    }
                    fake.comments.append(made)
                    return self._answer(201, made)
                if self.command == "PATCH" and url.path.startswith("/repos/o/r/issues/comments/"):
                    cid = int(url.path.rsplit("/", 1)[1])
                    for comment in fake.comments:
                        if comment["id"] == cid:
                            comment["body"] = body["body"]
                            return self._answer(200, comment)
                return self._answer(404, {"message": "Not Found"})

            do_GET = do_POST = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        import threading

        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def ours(self) -> list[dict[str, Any]]:
        return [c for c in self.comments if c["user"]["login"] == "github-actions[bot]"]

    def env(self, project: Path) -> dict[str, str]:
        event = project.parent / "event.json"
        event.write_text(json.dumps({"pull_request": {"number": 7}}))
        return {
            "GITHUB_API_URL": self.url,
            "GITHUB_REPOSITORY": "o/r",
            "GITHUB_EVENT_PATH": str(event),
            "NO_PROXY": "127.0.0.1",
        }


@pytest.fixture
def github() -> Any:
    fake = FakeGitHub()
    yield fake
    fake.server.shutdown()


def test_the_pull_request_comment_is_one_comment_updated_in_place(
    installed: Installed, tmp_path: Path, github: FakeGitHub
) -> None:
    project = _server_repo(tmp_path, installed)
    run = {**MAINTAINER, "comment": "true", "github-token": "tok-123"}
    env = github.env(project)
    _run_action(project, installed, env=env, skip=_PACKAGE_SET_UP, **run)
    assert [m for m, _, _ in github.requests] == ["GET", "GET"], "looked for one to update"
    assert github.ours() == [], "a server that matches adds no comment"
    github.requests.clear()

    _serve(project, [WIDER])
    assert _run_action(project, installed, env=env, skip=_PACKAGE_SET_UP, **run)[0] == {
        "result": "drift"
    }
    (created,) = github.ours()
    assert created["body"].startswith("<!-- toolpin snapshot -->\n### toolpin snapshot:")
    assert "New field: context" in created["body"]
    assert [m for m, _, _ in github.requests] == ["GET", "GET", "POST"], "paged, then created"

    _serve(project, [WIDER, HOSTILE])  # the next push
    github.requests.clear()
    _run_action(project, installed, env=env, skip=_PACKAGE_SET_UP, **run)
    assert [m for m, _, _ in github.requests] == ["GET", "GET", "PATCH"]
    (edited,) = github.ours()
    assert edited["id"] == created["id"] and "New tool" in edited["body"]

    _serve(project, [SEARCH])  # the change is reverted: the comment says so
    assert _run_action(project, installed, env=env, skip=_PACKAGE_SET_UP, **run)[0] == {
        "result": "clean"
    }
    (last,) = github.ours()
    assert "matches" in last["body"]
    assert github.comments[0]["body"] == "<!-- toolpin snapshot -->\nforged"
    assert {auth for _, _, auth in github.requests} == {"Bearer tok-123"}


def test_no_comment_unless_asked(installed: Installed, tmp_path: Path, github: FakeGitHub) -> None:
    project = _server_repo(tmp_path, installed)
    _serve(project, [WIDER])
    results, _ = _run_action(
        project, installed, env=github.env(project), skip=_PACKAGE_SET_UP, **MAINTAINER
    )
    assert results == {"result": "drift"}
    assert github.requests == []


def test_a_token_without_permission_warns_and_keeps_the_verdict(
    installed: Installed, tmp_path: Path
) -> None:
    refusing = FakeGitHub(refuse=403)
    try:
        project = _server_repo(tmp_path, installed)
        _serve(project, [WIDER])
        run = {**MAINTAINER, "comment": "true", "github-token": "read-only"}
        results, _ = _run_action(
            project, installed, env=refusing.env(project), skip=_PACKAGE_SET_UP, **run
        )
    finally:
        refusing.server.shutdown()
    assert results == {"result": "drift"}
    assert "Schema changed, description untouched" in _summary(project)
    err = STDERR["toolpin snapshot --check"]
    assert "warning: no pull-request comment: GitHub refused the comment (HTTP 403)" in err
    assert "Resource not accessible" not in err, "nothing GitHub answers is printed"


# -------------------------------------------------------- nothing is sent anywhere


class Recorder:
    """An HTTP(S) proxy on loopback that records every connection and refuses it."""

    def __init__(self) -> None:
        import socket
        import threading

        self.seen: list[bytes] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

        def serve() -> None:
            while True:
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    return
                with conn:
                    conn.settimeout(2)
                    try:
                        self.seen.append(conn.recv(4096))
                        conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                    except OSError:
                        pass

        threading.Thread(target=serve, daemon=True).start()


def _no_network() -> tuple[str, ...]:
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not available")
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("user and network namespaces are not available")
    return ("unshare", "-rn")


def test_the_action_contacts_no_host(installed: Installed, tmp_path: Path) -> None:
    """Every step after the package set-up, in both outcomes, run (1) in a network
    namespace with no network at all, where any connection fails, and (2) with every
    proxy variable naming a recorder that refuses and records, which sees nothing."""
    recorder = Recorder()
    proxies = dict.fromkeys(
        ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"), recorder.url
    )
    prefix = _no_network()
    for tools, verdict in (([SEARCH], "clean"), ([WIDER, HOSTILE], "drift")):
        for wrap in (prefix, ()):
            project = _server_repo(tmp_path / f"{verdict}{len(wrap)}", installed)
            _serve(project, tools)
            results, ran = _run_action(
                project, installed, env=proxies, prefix=wrap, skip=_PACKAGE_SET_UP, **MAINTAINER
            )
            assert results == {"result": verdict}, (wrap, STDERR)
            assert "toolpin snapshot --check" in ran
            assert "the server could not be checked" not in _summary(project)
    assert recorder.seen == []
    # Both nets catch what they are for: a request through the proxy variables is recorded,
    # and no connection at all leaves the namespace.
    fetch = "import urllib.request as u, sys; u.urlopen(sys.argv[1], timeout=5)"
    for wrap in ((), prefix):
        done = subprocess.run(
            [*wrap, sys.executable, "-c", fetch, "http://example.invalid/"],
            env={**os.environ, **proxies}, capture_output=True, timeout=60,
        )  # fmt: skip
        assert done.returncode != 0
    assert len(recorder.seen) == 1 and recorder.seen[0].startswith(b"GET http://example.invalid/")
    recorder.sock.close()


_NETWORK_WORDS = re.compile(
    r"\b(curl|wget|nc|ncat|socat|ssh|scp|rsync|gh|npx|docker)\b|https?://|git\s+(push|fetch|pull|clone)"
)


def test_action_yml_names_no_network_command() -> None:
    """The static half: no step's script names a network tool or a URL, and the only
    actions used are Python's set-up and (consumer mode, saved exports only) the SARIF
    upload."""
    for step in ACTION["runs"]["steps"]:
        if "uses" in step:
            name = step["uses"].split("@")[0]
            assert name in {"actions/setup-python", "github/codeql-action/upload-sarif"}, name
            if name.endswith("upload-sarif"):
                assert "inputs.listing != ''" in step["if"]
            continue
        script = step["run"]
        if step["name"] in _PACKAGE_SET_UP:
            assert script.strip() == 'python -m pip install --quiet "$GITHUB_ACTION_PATH"'
            continue
        assert not _NETWORK_WORDS.search(script), (step["name"], script)
