"""A real S3-compatible server for the storage tests: moto's server mode, started on a free
loopback port as a subprocess (one per test session worker), and a fresh bucket per test."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "crawl"))

MOTO = Path(sys.executable).parent / "moto_server"


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not MOTO.exists():
        pytest.fail("moto_server is missing: install the test extras (moto[server])")
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "wb") as sink:  # a file, not a pipe: its request log never blocks it
        proc = subprocess.Popen(
            [str(MOTO), "-H", "127.0.0.1", "-p", "0"], stdout=sink, stderr=subprocess.STDOUT
        )
    endpoint = None
    deadline = time.monotonic() + 60
    while endpoint is None and time.monotonic() < deadline and proc.poll() is None:
        match = re.search(r"Running on (http://127\.0\.0\.1:\d+)", log.read_text("utf-8"))
        endpoint = match[1] if match else None
        time.sleep(0.05)
    if endpoint is None:
        proc.kill()
        pytest.fail("moto_server did not start")
    try:
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def aws_env(s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The standard AWS variables pointing at the loopback server, a private TOOLPIN_HOME."""
    values = {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws-credentials"),
        "TOOLPIN_HOME": str(tmp_path / "toolpin-home"),
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return values


@pytest.fixture
def s3(aws_env: dict[str, str]) -> Any:
    import boto3

    return boto3.client("s3")


@pytest.fixture
def bucket(s3: Any) -> str:
    name = f"tp-{uuid.uuid4().hex[:20]}"
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture
def log_key(tmp_path: Path) -> Any:
    from crawl_helpers import ORIGIN, LogKey

    from toolpin.publog.keys import generate_key, load_signer

    keys = tmp_path / "keys"
    keys.mkdir()
    path = keys / "log.key"
    vkey = generate_key(ORIGIN, path)
    return LogKey(path, vkey, load_signer(path))
