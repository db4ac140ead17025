"""The log in a bucket: crawl into it, verify from it, publish to it, one writer at a time,
against a real S3 server on loopback (moto's server mode)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crawl_helpers import LogKey
from storage_helpers import config, objects, run

IMMUTABLE = "public, max-age=31536000, immutable"


def test_crawl_into_a_bucket_and_verify_from_it(
    tmp_path: Path, log_key: LogKey, bucket: str, s3: Any
) -> None:
    url = f"s3://{bucket}/log"
    servers = config(tmp_path, 3)
    crawl = run(
        "log",
        "crawl",
        "--log",
        url,
        "--key",
        str(log_key.path),
        "--servers",
        str(servers),
        "--json",
    )
    assert crawl.exit_code == 0, crawl.output
    assert json.loads(crawl.stdout)["new"] == 3

    stored = objects(s3, bucket, "log/")
    assert "checkpoint" in stored and ".toolpin.lock" not in stored  # the lock is released
    assert stored["checkpoint"]["CacheControl"] == "no-cache"
    blobs = [k for k in stored if k.startswith("blob/sha256/")]
    assert len(blobs) == 3
    for key in blobs:
        assert stored[key]["CacheControl"] == IMMUTABLE
        assert stored[key]["Metadata"]["sha256"] == key.rsplit("/", 1)[1]
    assert stored["tile/0/000.p/3"]["CacheControl"] == "no-cache"

    verify = run("log", "verify", "--log", url, "--vkey", log_key.vkey, "--json")
    assert verify.exit_code == 0, verify.output
    assert json.loads(verify.stdout)["size"] == 3

    # a second crawl that sees nothing new changes nothing in the bucket
    before = {k: v["ETag"] for k, v in stored.items()}
    again = run(
        "log",
        "crawl",
        "--log",
        url,
        "--key",
        str(log_key.path),
        "--servers",
        str(servers),
        "--json",
    )
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["unchanged"] == 3
    assert {k: v["ETag"] for k, v in objects(s3, bucket, "log/").items()} == before


def _local_log(tmp_path: Path, log_key: LogKey, count: int, name: str = "log") -> Path:
    log_dir = tmp_path / name
    servers = config(tmp_path, count, version=name)
    result = run(
        "log",
        "crawl",
        "--log",
        str(log_dir),
        "--key",
        str(log_key.path),
        "--servers",
        str(servers),
        "--state",
        str(tmp_path / f"{name}.state"),
    )
    assert result.exit_code == 0, result.output
    return log_dir


def test_publish_sends_only_what_changed_and_verify_catches_a_tampered_object(
    tmp_path: Path, log_key: LogKey, bucket: str, s3: Any
) -> None:
    log_dir = _local_log(tmp_path, log_key, 4)
    url = f"s3://{bucket}/pub"
    first = run(
        "log", "publish", "--log", str(log_dir), "--vkey", log_key.vkey, "--to", url, "--json"
    )
    assert first.exit_code == 0, first.output
    sent = json.loads(first.stdout)
    assert sent["ok"] and sent["uploaded"] == 4 + 2 + 1 and sent["unchanged"] == 0

    second = run(
        "log", "publish", "--log", str(log_dir), "--vkey", log_key.vkey, "--to", url, "--json"
    )
    assert second.exit_code == 0, second.output
    again = json.loads(second.stdout)
    assert again["ok"] and (again["uploaded"], again["unchanged"], again["bytes"]) == (0, 7, 0)

    blob = next(k for k in objects(s3, bucket, "pub/") if k.startswith("blob/"))
    s3.put_object(Bucket=bucket, Key=f"pub/{blob}", Body=b'{"tampered": true}')
    verify = run("log", "verify", "--log", url, "--vkey", log_key.vkey)
    assert verify.exit_code == 1, verify.output
    assert verify.output.startswith("FAILED:") and "does not match its digest" in verify.output


def test_publish_refuses_a_log_that_does_not_extend_the_bucket_s(
    tmp_path: Path, log_key: LogKey, bucket: str, s3: Any
) -> None:
    url = f"s3://{bucket}/fork"
    longer = _local_log(tmp_path, log_key, 3, "longer")
    other = _local_log(tmp_path, log_key, 2, "other")  # same key, other entries: a fork
    assert (
        run("log", "publish", "--log", str(longer), "--vkey", log_key.vkey, "--to", url).exit_code
        == 0
    )
    before = s3.get_object(Bucket=bucket, Key="fork/checkpoint")["Body"].read()

    refused = run("log", "publish", "--log", str(other), "--vkey", log_key.vkey, "--to", url)
    assert refused.exit_code == 1, refused.output
    assert refused.output.startswith("FAILED:")
    assert s3.get_object(Bucket=bucket, Key="fork/checkpoint")["Body"].read() == before


def test_a_second_writer_is_refused_and_an_expired_lock_is_taken_over(
    tmp_path: Path, log_key: LogKey, bucket: str, s3: Any
) -> None:
    from toolpin.errors import LogError
    from toolpin.storage.lock import BucketLock
    from toolpin.storage.s3 import Bucket
    from toolpin.storage.url import parse_bucket_url

    url = f"s3://{bucket}/locked"
    holder = BucketLock(Bucket(parse_bucket_url(url)))
    holder.acquire()
    servers = config(tmp_path, 1)
    crawl = run("log", "crawl", "--log", url, "--key", str(log_key.path), "--servers", str(servers))
    assert crawl.exit_code == 2, crawl.output
    assert "another writer holds the lock" in crawl.output
    assert "checkpoint" not in objects(s3, bucket, "locked/")
    second = BucketLock(Bucket(parse_bucket_url(url)))
    try:
        second.acquire()
        raise AssertionError("two writers held the lock")
    except LogError as exc:
        assert "another writer" in exc.message
    holder.release()
    assert (
        run(
            "log", "crawl", "--log", url, "--key", str(log_key.path), "--servers", str(servers)
        ).exit_code
        == 0
    )

    stale = BucketLock(Bucket(parse_bucket_url(url)), ttl=-1.0)  # already expired
    stale.acquire()
    taker = BucketLock(Bucket(parse_bucket_url(url)))
    taker.acquire()  # a lock past its expiry is taken over
    assert taker.still_held() and not stale.still_held()
    stale.release()  # the old holder's release does not free the new holder's lock
    assert taker.still_held()
    taker.release()
    assert ".toolpin.lock" not in objects(s3, bucket, "locked/")


def test_a_checkpoint_replaced_meanwhile_is_never_overwritten(
    tmp_path: Path, log_key: LogKey, bucket: str, s3: Any
) -> None:
    from toolpin.errors import LogError
    from toolpin.storage.workspace import writable_log

    url = f"s3://{bucket}/cas"
    log_dir = _local_log(tmp_path, log_key, 2)
    assert (
        run("log", "publish", "--log", str(log_dir), "--vkey", log_key.vkey, "--to", url).exit_code
        == 0
    )
    with writable_log(url) as target:
        from toolpin.publog.tiles import TileLog

        TileLog.open(target.path).append([], log_key.signer)  # re-signs: a new checkpoint
        s3.put_object(Bucket=bucket, Key="cas/checkpoint", Body=b"someone else's")
        try:
            target.publish()
            raise AssertionError("the checkpoint was overwritten")
        except LogError as exc:
            assert "changed since this writer read it" in exc.message
    assert s3.get_object(Bucket=bucket, Key="cas/checkpoint")["Body"].read() == b"someone else's"
