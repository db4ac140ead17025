"""``toolpin log serve --dir SITE``: the built site served read-only, as a subprocess, and
the real readers against it (``log lookup``, ``log monitor``, ``toolpin run --log``, the
in-browser verifier in Chromium); the headers ``_headers`` names, ETags and 304, and every
request outside the site's own names refused."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.site.serve_helpers import (
    LOOPBACK,
    browser_verdict,
    env_with_src,
    first_pin_against,
    log_serve,
    proxy_log,
    surface_v1,
)
from toolpin.site.render import CSP

IMMUTABLE = "public, max-age=31536000, immutable"


@pytest.fixture
def site_copy(sample_site: dict[str, Any], tmp_path: Path) -> Path:
    out = tmp_path / "site"
    shutil.copytree(sample_site["out"], out)
    return out


def toolpin(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolpin", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=env_with_src({**os.environ, **LOOPBACK, **(env or {})}),
    )


def test_headers_etag_and_conditional_requests(site_copy: Path) -> None:
    partial = next((site_copy / "tile" / "0").glob("*.p/*"))
    full = site_copy / "tile" / "0" / "000"  # a full tile's name (its bytes do not matter)
    shutil.copyfile(partial, full)
    blob = next((site_copy / "blob" / "sha256").iterdir())
    with log_serve(site_copy) as served:
        status, headers, body = served.get("/")
        assert status == 200 and body == (site_copy / "index.html").read_bytes()
        assert headers["content-type"] == "text/html; charset=utf-8"
        assert headers["content-security-policy"] == CSP
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["etag"] == '"' + hashlib.sha256(body).hexdigest() + '"'

        status, headers, body = served.get("/checkpoint")
        assert status == 200 and body == (site_copy / "checkpoint").read_bytes()
        assert headers["cache-control"] == "no-cache"
        assert headers["content-type"] == "text/plain; charset=utf-8"
        assert headers["access-control-allow-origin"] == "*"

        rel = partial.relative_to(site_copy).as_posix()
        assert served.get("/" + rel)[1]["cache-control"] == "no-cache"  # partial: revalidate
        assert served.get("/tile/0/000")[1]["cache-control"] == IMMUTABLE
        status, headers, _ = served.get(f"/blob/sha256/{blob.name}")
        assert status == 200 and headers["cache-control"] == IMMUTABLE
        assert headers["content-type"] == "application/json"
        assert served.get("/feed.atom")[1]["content-type"] == "application/atom+xml; charset=utf-8"
        assert served.get("/static/site.css")[1]["content-type"] == "text/css; charset=utf-8"
        assert served.get("/servers/")[2] == (site_copy / "servers" / "index.html").read_bytes()
        assert served.get("/api/v1/log.json?x=1")[0] == 200  # a query is ignored

        etag = served.get("/checkpoint")[1]["etag"]
        status, headers, body = served.get("/checkpoint", If_None_Match=etag)
        assert (status, body) == (304, b"") and headers["etag"] == etag
        assert headers["cache-control"] == "no-cache"
        assert served.get("/checkpoint", If_None_Match=f'"x", W/{etag}')[0] == 304
        assert served.get("/checkpoint", If_None_Match='"other"')[0] == 200

        status, headers, body = served.request("HEAD", "/checkpoint")
        assert status == 200 and body == b""
        assert headers["content-length"] == str((site_copy / "checkpoint").stat().st_size)

        # the site is rebuilt while served: the new bytes, a new ETag
        (site_copy / "checkpoint").write_bytes(b"replaced\n")
        status, headers, body = served.get("/checkpoint", If_None_Match=etag)
        assert (status, body) == (200, b"replaced\n") and headers["etag"] != etag


def test_everything_outside_the_sites_names_is_refused(site_copy: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the web\n")
    (site_copy / "outside.txt").symlink_to(secret)
    (site_copy / "inside.html").symlink_to(site_copy / "index.html")
    (site_copy / "linked").symlink_to(tmp_path, target_is_directory=True)
    (site_copy / ".toolpin.lock").write_text("{}")
    (site_copy / "empty").mkdir()
    with log_serve(site_copy) as served:
        for target in (
            "/../secret.txt",
            "/servers/../../secret.txt",
            "/%2e%2e/secret.txt",
            "/servers%2findex.html",
            "/servers%2Findex.html",
            "/index.html%00",
            "/index.html\\",
            "/outside.txt",
            "/inside.html",
            "/linked/secret.txt",
            "/linked/",
            "/.toolpin.lock",
            "/_headers",
            "/empty/",
            "/empty",
            "/servers",
            "//etc/passwd",
            "/./index.html",
            "/no-such-file",
            "http://127.0.0.1/index.html",
        ):
            status, headers, body = served.get(target)
            assert status == 404, target
            assert b"not for the web" not in body and headers["x-content-type-options"] == "nosniff"
        status, headers, _ = served.request("POST", "/index.html", body=b"x")
        assert status == 405 and headers["allow"] == "GET, HEAD"
        assert served.request("DELETE", "/index.html")[0] == 405
        assert served.get("/index.html", Host="attacker.example")[0] == 403
        assert served.get("/index.html", Host=f"attacker.example:{served.port}")[0] == 403
        assert served.get("/index.html", Host=f"localhost:{served.port}")[0] == 200
        assert served.request("GET", "/index.html", body=b"smuggled")[0] == 400
        assert served.get("/index.html")[0] == 200  # still serving after all that
    assert served.proc.stderr is not None


def test_a_public_address_needs_public_and_a_missing_folder_is_refused(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    refused = toolpin("log", "serve", "--dir", str(site), "--host", "0.0.0.0")
    assert refused.returncode == 2
    assert "not a loopback address" in refused.stderr and "--public" in refused.stderr
    missing = toolpin("log", "serve", "--dir", str(tmp_path / "none"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert "Traceback" not in refused.stderr + missing.stderr


def test_lookup_monitor_and_verify_against_the_served_site(
    sample_site: dict[str, Any], site_copy: Path, tmp_path: Path
) -> None:
    vkey = sample_site["vkey"]
    api = site_copy / "api" / "v1" / "servers" / f"{sample_site['ids']['stable']}.json"
    surface = json.loads(api.read_text())["versions"][0]["digests"]["surface"]
    with log_serve(site_copy) as served:
        found = toolpin(
            "log", "lookup", surface, "--log", served.url, "--vkey", vkey, "--json",
            env={"TOOLPIN_HOME": str(tmp_path / "home")},
        )  # fmt: skip
        assert found.returncode == 0, found.stderr
        answer = json.loads(found.stdout)
        assert answer["entry_index"] == 0 and answer["checkpoint_size"] == 5, answer
        missing = toolpin(
            "log", "lookup", "0" * 64, "--log", served.url, "--vkey", vkey,
            env={"TOOLPIN_HOME": str(tmp_path / "home")},
        )  # fmt: skip
        assert missing.returncode == 1, missing.stderr
        monitor = toolpin(
            "log", "monitor", "--log", served.url, "--vkey", vkey,
            env={"TOOLPIN_HOME": str(tmp_path / "home")},
        )  # fmt: skip
        assert monitor.returncode == 0, monitor.stdout + monitor.stderr
        assert monitor.stdout.startswith("ok: ")


def test_toolpin_run_against_the_served_site(tmp_path: Path) -> None:
    writer, out = proxy_log(tmp_path)
    home = tmp_path / "home"
    with log_serve(out) as served:
        stderr = first_pin_against(home, tmp_path, served.url, writer.vkey)
    lines = [x for x in stderr.splitlines() if "publicly recorded" in x]
    assert len(lines) == 1, stderr
    assert "since 2026-11-20" in lines[0]
    assert surface_v1()  # the surface the log recorded is the one the proxy took


def test_the_in_browser_verifier_against_the_served_site(
    sample_site: dict[str, Any], site_copy: Path, browser: Any
) -> None:
    with log_serve(site_copy) as served:
        for key in ("stable", "changed", "new"):
            verdict, status, problems, violations = browser_verdict(
                browser, served.url + f"servers/{sample_site['ids'][key]}.html"
            )
            assert "verified against checkpoint 5" in verdict, verdict
            assert status == "ok"
            assert problems == [] and violations == []
        # a tampered tile, served with the same headers: the page says so
        tile = next((site_copy / "tile" / "0").glob("*.p/*"))
        data = bytearray(tile.read_bytes())
        data[0] ^= 1
        tile.write_bytes(bytes(data))
        verdict, status, _, violations = browser_verdict(
            browser, served.url + f"servers/{sample_site['ids']['stable']}.html"
        )
        assert status != "ok" and "does not verify" in verdict, verdict
        assert violations == []
