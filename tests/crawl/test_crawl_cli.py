"""``toolpin log crawl`` from the command line: output, exit codes, concurrent crawls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from crawl_helpers import (
    SRC,
    FakeAPI,
    LogKey,
    independent_check,
    stub_argv,
    tool,
    write_config,
    write_spec,
)

from toolpin.cli import _register_commands, cli


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC)
    return env


def _config(tmp_path: Path, count: int = 3) -> Path:
    specs = tmp_path / "specs"
    specs.mkdir(exist_ok=True)
    servers = {
        f"s{i}": stub_argv(write_spec(specs / f"s{i}.json", name=f"s{i}", tools=[tool(f"t{i}")]))
        for i in range(count)
    }
    return write_config(tmp_path / "servers.json", servers)


def test_crawl_prints_a_json_summary_and_the_log_verifies(tmp_path: Path, log_key: LogKey) -> None:
    _register_commands()
    config = _config(tmp_path)
    log_dir = tmp_path / "log"
    args = ["log", "crawl", "--log", str(log_dir), "--key", str(log_key.path)]
    result = CliRunner().invoke(
        cli, [*args, "--servers", str(config), "--concurrency", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["new"] == 3 and summary["log_size"] == 3 and summary["failed"] == 0
    assert set(summary) >= {"candidates", "probed", "failed", "new", "changed", "log_size"}
    assert "duration_s" in summary and summary["sources"]["config"]["candidates"] == 3

    verify_args = ["log", "verify", "--log", str(log_dir), "--vkey", log_key.vkey]
    verify = CliRunner().invoke(cli, verify_args)
    assert verify.exit_code == 0, verify.output
    assert verify.output.startswith("ok:")

    again = CliRunner().invoke(cli, [*args, "--servers", str(config), "--json"])
    assert json.loads(again.stdout)["appended"] == 0
    servers = json.loads(again.stdout)["servers"]
    assert [(s["name"], s["status"], s["tools"]) for s in servers] == [
        ("s0", "unchanged", 1),
        ("s1", "unchanged", 1),
        ("s2", "unchanged", 1),
    ]


def test_usage_errors_exit_2(tmp_path: Path, log_key: LogKey) -> None:
    base = [sys.executable, "-m", "toolpin", "log", "crawl", "--log", str(tmp_path / "log")]
    cases = [
        (["--key", str(log_key.path), "--source", "config"], "--servers"),
        (["--key", str(tmp_path / "missing.key"), "--servers", str(_config(tmp_path))], "key"),
        (["--key", str(log_key.path), "--servers", str(tmp_path / "nope.json")], "nope.json"),
        (["--key", str(log_key.path), "--source", "ftp"], "ftp"),
    ]
    for extra, word in cases:
        done = subprocess.run(
            [*base, *extra], capture_output=True, text=True, env=_env(), timeout=60
        )
        assert done.returncode == 2, (extra, done.stderr)
        assert word in done.stderr
        assert "Traceback" not in done.stderr


def test_concurrent_crawls_of_one_log_are_serialised(tmp_path: Path, log_key: LogKey) -> None:
    config = _config(tmp_path, count=4)
    log_dir = tmp_path / "log"
    cmd = [
        sys.executable,
        "-m",
        "toolpin",
        "log",
        "crawl",
        "--log",
        str(log_dir),
        "--key",
        str(log_key.path),
        "--servers",
        str(config),
        "--json",
    ]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outputs]
    summaries = sorted((json.loads(o[0]) for o in outputs), key=lambda s: s["appended"])
    # One crawl logged the four servers; the other ran after it and found nothing new.
    assert [s["appended"] for s in summaries] == [0, 4]
    assert summaries[0]["unchanged"] == 4
    records = independent_check(log_dir, log_key.vkey)
    assert sorted(r["server"]["name"] for r in records) == ["s0", "s1", "s2", "s3"]


def test_a_crawl_that_cannot_get_the_lock_refuses(tmp_path: Path, log_key: LogKey) -> None:
    from filelock import FileLock

    from toolpin.crawl.runner import crawl_lock_path

    config = _config(tmp_path, count=1)
    log_dir = tmp_path / "log"
    with FileLock(str(crawl_lock_path(log_dir))):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "toolpin",
                "log",
                "crawl",
                "--log",
                str(log_dir),
                "--key",
                str(log_key.path),
                "--servers",
                str(config),
                "--wait",
                "0.2",
            ],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
    assert done.returncode == 2
    assert "another crawl" in done.stderr


def test_the_cli_module_stays_light() -> None:
    code = (
        "import sys, toolpin.cli.crawl; "
        "heavy = [m for m in ('httpx2', 'rich', 'mcp', 'cryptography', 'toolpin.crawl.runner',"
        " 'sqlite3', 'httpcore2') if m in sys.modules]; print(heavy)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_the_table_names_every_server_and_ends_with_the_summary(
    tmp_path: Path, log_key: LogKey
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    good = stub_argv(write_spec(specs / "good.json", name="good", tools=[tool("a"), tool("b")]))
    bad = stub_argv(
        write_spec(specs / "bad.json", name="bad", crash=1, stderr="boom \x1b[31mred\u202e")
    )
    config = write_config(tmp_path / "servers.json", {"good\u202e": good, "broken": bad})
    cmd = [
        sys.executable,
        "-m",
        "toolpin",
        "log",
        "crawl",
        "--log",
        str(tmp_path / "log"),
        "--key",
        str(log_key.path),
        "--servers",
        str(config),
        "--concurrency",
        "1",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "SECS", "TOOLS", "PACKAGE", "REASON"]
    rows = {line.split()[0]: line for line in lines[1:-1]}
    assert set(rows) == {"good\\u{202e}", "broken"}
    assert rows["good\\u{202e}"].split()[1:2] == ["new"]
    assert " 2  -" in rows["good\\u{202e}"]
    assert rows["broken"].split()[1] == "failed"
    assert "boom red\\u{202e}" in rows["broken"]
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    assert lines[-1].startswith("crawled 2 of 2 servers in ")
    assert lines[-1].endswith(
        "1 new, 0 changed, 0 unchanged, 1 failed, 0 skipped; appended 1, log size 1"
    )
    progress = done.stderr.splitlines()
    assert "started 1 of 2: good\\u{202e}" in progress
    assert "started 2 of 2: broken" in progress
    assert any(p.startswith("finished 1 of 2: good\\u{202e} ok (") for p in progress)


def test_a_failed_source_is_named_before_the_summary_line(
    tmp_path: Path, log_key: LogKey, fake_api: FakeAPI
) -> None:
    from toolpin.cli.crawl import summary_table
    from toolpin.crawl.runner import CrawlOptions, crawl

    options = CrawlOptions(
        log_dir=tmp_path / "log",
        signer=log_key.signer,
        sources=("registry",),
        environ={"TOOLPIN_REGISTRY_URL": fake_api.url},
        optout_dirs=(),
    )
    summary = crawl(options)
    lines = summary_table(summary)
    assert lines[0].split() == ["NAME", "STATUS", "SECS", "TOOLS", "PACKAGE", "REASON"]
    assert lines[-2].startswith("source registry failed: ")
    assert lines[-1].startswith("crawled 0 of 0 servers in ")
