"""``toolpin log serve --dir s3://...`` and ``log prove``/``verify-proof --log s3://...``,
against a real S3 server on loopback (moto's server mode): the bucket's objects served
with their own metadata, and the real readers (``log monitor``, ``log lookup``,
``toolpin run --log``, the in-browser verifier in Chromium) against the server."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from crawl_helpers import LogKey
from storage_helpers import config, run
from tests.site.serve_helpers import (
    LOOPBACK,
    browser_verdict,
    env_with_src,
    first_pin_against,
    log_serve,
    proxy_log,
)

IMMUTABLE = "public, max-age=31536000, immutable"
NOW = "2026-12-01T00:00:00Z"


def toolpin(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A reader as its own process (the AWS variables of the fixture included)."""
    env = {**os.environ, **LOOPBACK, "TOOLPIN_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "toolpin", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=env_with_src(env),
    )


def crawl(url: str, log_key: LogKey, servers: Path) -> None:
    done = run("log", "crawl", "--log", url, "--key", str(log_key.path), "--servers", str(servers))
    assert done.exit_code == 0, done.output


def test_serve_a_bucket_log_with_its_metadata_and_monitor_it(
    tmp_path: Path, log_key: LogKey, bucket: str, s3: Any
) -> None:
    url = f"s3://{bucket}/log"
    crawl(url, log_key, config(tmp_path, 3))
    s3.put_object(
        Bucket=bucket,
        Key="log/notes.txt",
        Body=b"hello\n",
        CacheControl="max-age=7",
        ContentType="text/plain; charset=utf-8",
    )
    s3.put_object(Bucket=bucket, Key="log/.toolpin.lock", Body=b"{}")
    s3.put_object(Bucket=bucket, Key="secret.txt", Body=b"outside the prefix\n")
    checkpoint = s3.get_object(Bucket=bucket, Key="log/checkpoint")["Body"].read()
    blob = next(
        item["Key"] for item in s3.list_objects_v2(Bucket=bucket, Prefix="log/blob/")["Contents"]
    )
    with log_serve(url) as served:
        status, headers, body = served.get("/checkpoint")
        assert status == 200 and body == checkpoint
        assert headers["cache-control"] == "no-cache"
        assert headers["content-type"] == "text/plain; charset=utf-8"
        assert headers["access-control-allow-origin"] == "*"
        assert headers["etag"] == '"' + hashlib.sha256(checkpoint).hexdigest() + '"'
        assert served.get("/checkpoint", If_None_Match=headers["etag"])[0] == 304
        status, headers, _ = served.get("/" + blob.removeprefix("log/"))
        assert status == 200 and headers["cache-control"] == IMMUTABLE
        assert headers["content-type"] == "application/json"
        assert served.get("/tile/0/000.p/3")[1]["cache-control"] == "no-cache"
        # an object's own Cache-Control and Content-Type, not what its suffix suggests
        status, headers, body = served.get("/notes.txt")
        assert (status, body, headers["cache-control"]) == (200, b"hello\n", "max-age=7")
        for target in ("/.toolpin.lock", "/../secret.txt", "/%2e%2e/secret.txt", "/missing"):
            assert served.get(target)[0] == 404, target
        assert served.request("PUT", "/checkpoint", body=b"x")[0] == 405
        s3.put_object(Bucket=bucket, Key="log/huge.html", Body=b"x" * (64 << 20 | 1))
        assert served.get("/huge.html")[0] == 503  # over the cap: not served, not "absent"

        home = tmp_path / "home"
        first = toolpin(home, "log", "monitor", "--log", served.url, "--vkey", log_key.vkey)
        assert first.returncode == 0, first.stdout + first.stderr
        assert first.stdout.startswith("ok: ")
        s3.delete_object(Bucket=bucket, Key="log/.toolpin.lock")  # this test's own
        crawl(url, log_key, config(tmp_path, 3, version="b"))  # the bucket's log grows to 6
        second = toolpin(
            home, "log", "monitor", "--log", served.url, "--vkey", log_key.vkey, "--json"
        )
        assert second.returncode == 0, second.stdout + second.stderr
        passed = json.loads(second.stdout.splitlines()[-1])
        assert passed["event"] == "pass" and passed["size"] == 6, passed


def test_a_bucket_without_a_log_is_refused_at_start(tmp_path: Path, bucket: str) -> None:
    for where in (f"s3://{bucket}/nothing", "s3://no-such-bucket-here/log"):
        done = toolpin(tmp_path / "home", "log", "serve", "--dir", where)
        assert done.returncode == 2, done.stderr
        assert "holds no checkpoint" in done.stderr and "Traceback" not in done.stderr


def test_prove_and_verify_proof_from_a_bucket(
    tmp_path: Path, log_key: LogKey, bucket: str, s3: Any
) -> None:
    url = f"s3://{bucket}/log"
    crawl(url, log_key, config(tmp_path, 3))
    proof = run("log", "prove", "--log", url, "--entry", "1", "--vkey", log_key.vkey)
    assert proof.exit_code == 0, proof.output
    proof_file = tmp_path / "1.tlog-proof"
    proof_file.write_text(proof.stdout)
    kept = tmp_path / "kept-checkpoint"
    kept.write_bytes(s3.get_object(Bucket=bucket, Key="log/checkpoint")["Body"].read())
    args = ("log", "verify-proof", "--vkey", log_key.vkey, "--proof", str(proof_file))
    ok = run(*args, "--log", url)
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.startswith("ok: entry 1 is in ") and "at tree size 3" in ok.stdout

    crawl(url, log_key, config(tmp_path, 3, version="b"))
    grown = run(*args, "--log", url)
    assert grown.exit_code == 0, grown.output
    assert "at tree size 3, consistent with the current checkpoint 6" in grown.stdout
    since = run("log", "prove", "--log", url, "--since", str(kept), "--vkey", log_key.vkey)
    assert since.exit_code == 0, since.output
    consistency = tmp_path / "3-6.proof"
    consistency.write_text(since.stdout)
    checked = run(
        "log", "verify-proof", "--vkey", log_key.vkey, "--proof", str(consistency),
        "--since", str(kept),
    )  # fmt: skip
    assert checked.exit_code == 0, checked.output
    assert "at tree size 6 is consistent with tree size 3" in checked.stdout

    # a proof of another entry's bytes does not pass; a tampered bucket is refused
    other = run("log", "prove", "--log", url, "--entry", "4", "--vkey", log_key.vkey)
    lines = other.stdout.splitlines()
    swapped = tmp_path / "swapped.tlog-proof"
    swapped.write_text("\n".join([*lines[:2], *proof.stdout.splitlines()[2:]]) + "\n")
    assert run("log", "verify-proof", "--vkey", log_key.vkey, "--proof", str(swapped),
               "--log", url).exit_code in (1, 2)  # fmt: skip
    s3.put_object(Bucket=bucket, Key="log/checkpoint", Body=b"not a checkpoint\n")
    refused = run(*args, "--log", url)
    assert refused.exit_code != 0 and not refused.stdout.startswith("ok")
    missing = run(*args, "--log", "s3://no-such-bucket-here/log")
    assert missing.exit_code == 2 and "Traceback" not in missing.output


@pytest.mark.slow  # the site is ~4,100 objects, all sent once to the loopback server
def test_every_reader_against_a_served_bucket_site(tmp_path: Path, bucket: str, s3: Any) -> None:
    writer, _ = proxy_log(tmp_path)
    site_url = f"s3://{bucket}/site"
    built = run(
        "log", "site", "--log", str(tmp_path / "log"), "--vkey", writer.vkey,
        "--out", site_url, "--now", NOW,
    )  # fmt: skip
    assert built.exit_code == 0, built.output
    servers = json.loads(
        s3.get_object(Bucket=bucket, Key="site/api/v1/servers.json")["Body"].read()
    )["servers"]
    calc = next(s for s in servers if s["untrusted"]["name"] == "calc")
    api = json.loads(
        s3.get_object(Bucket=bucket, Key=f"site/api/v1/servers/{calc['id']}.json")["Body"].read()
    )
    surface = api["versions"][0]["digests"]["surface"]
    home = tmp_path / "home"
    with log_serve(site_url) as served:
        status, headers, _ = served.get("/")
        assert status == 200 and headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in headers["content-security-policy"]  # from _headers
        assert served.get("/checkpoint")[1]["cache-control"] == "no-cache"

        stderr = first_pin_against(home, tmp_path, served.url, writer.vkey)
        lines = [x for x in stderr.splitlines() if "publicly recorded" in x]
        assert len(lines) == 1 and "since 2026-11-20" in lines[0], stderr

        found = toolpin(
            home, "log", "lookup", surface, "--log", served.url, "--vkey", writer.vkey, "--json"
        )
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["checkpoint_size"] == 2
        monitor = toolpin(home, "log", "monitor", "--log", served.url, "--vkey", writer.vkey)
        assert monitor.returncode == 0 and monitor.stdout.startswith("ok: "), monitor.stdout

        from tests.pages import chromium

        with chromium() as browser:
            verdict, status_class, problems, violations = browser_verdict(
                browser, served.url + f"servers/{calc['id']}.html"
            )
        assert "verified against checkpoint 2" in verdict, verdict
        assert status_class == "ok" and problems == [] and violations == []
