"""Where a log and a site live: a local folder or an S3-compatible bucket.

* :mod:`toolpin.storage.url`: ``s3://bucket/prefix`` parsed and checked.
* :mod:`toolpin.storage.s3`: one bucket prefix through boto3 (credentials, region and
  endpoint from the standard AWS variables and files), bounded reads, conditional writes.
* :mod:`toolpin.storage.folder`: the files of a local folder with their digests.
* :mod:`toolpin.storage.sync`: a folder mirrored from a bucket (``pull``) or published to
  one (``push``: immutable objects first with a long ``Cache-Control``, then the mutable
  ones with ``no-cache``, the checkpoint last; an unchanged object is never uploaded).
* :mod:`toolpin.storage.lock`: the one-writer lock object (``If-None-Match: *``).
* :mod:`toolpin.storage.workspace`: a log opened for reading or writing wherever it lives.

boto3 is imported only when a bucket is used: nothing on the proxy's path imports this.
"""

from __future__ import annotations

from toolpin.storage.url import S3Location, is_bucket_url, parse_bucket_url

__all__ = ["S3Location", "is_bucket_url", "parse_bucket_url"]
