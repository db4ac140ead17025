"""The digest index's prefix rule: how many hex digits name a bucket, chosen from the log.

The private lookup index (``api/v1/digests/<prefix>.json``, written by
:mod:`toolpin.site.digests`, read by :mod:`toolpin.evidence.lookup`) splits the log's
records -- one per distinct ``(digest, kind)`` pair -- into ``16**d`` buckets by the first
``d`` hex digits of the digest. ``d`` is the smallest of :data:`MIN_DIGITS` ...
:data:`MAX_DIGITS` for which the records, spread evenly, fill a bucket with at most
:data:`RECORDS_PER_BUCKET` on average. So once a log holds more than 16 times that many
records, a bucket holds between 64 and 1,024 of them on average (k-anonymity: a lookup
names one bucket of several hundred digests, as Have I Been Pwned's range API does with
its ~1,000 hashes per 5-digit range), about 100 bytes each: a bucket of at most ~100 KB on
average, 10 times under the reader's 1 MiB cap. A smaller log gets 16 buckets of all its
records. The rule depends only on the log, so two builds of one log agree on ``d``; a
log only grows, so ``d`` never shrinks.

A site built before the rule (no ``api/v1/digests/index.json``) used
:data:`LEGACY_DIGITS` for every log.

Pure: no I/O.
"""

from __future__ import annotations

from typing import Final

RECORDS_PER_BUCKET: Final = 1024
"""The most records a bucket holds on average at the chosen length."""
MIN_DIGITS: Final = 1
MAX_DIGITS: Final = 5
LEGACY_DIGITS: Final = 3
"""The prefix length of every site built before the rule (no index file)."""
KINDS_PER_ENTRY: Final = 2
"""An entry puts at most this many records in the index (its surface and tools digests)."""


def prefix_digits(records: int, per_bucket: int | None = None) -> int:
    """The smallest ``d`` in ``MIN_DIGITS..MAX_DIGITS`` with ``records / 16**d <=
    per_bucket`` (``MAX_DIGITS`` when none is); ``per_bucket`` defaults to
    :data:`RECORDS_PER_BUCKET`."""
    if per_bucket is None:
        per_bucket = RECORDS_PER_BUCKET
    digits = MIN_DIGITS
    while digits < MAX_DIGITS and records > per_bucket * 16**digits:
        digits += 1
    return digits


def most_digits(size: int) -> int:
    """The longest prefix a reader accepts for a log of ``size`` entries: what the rule
    gives for the most records such a log can hold, and never less than the old layout's
    :data:`LEGACY_DIGITS`. A host that publishes a longer one would learn more of the
    digest a lookup asks for than the rule lets it; it is refused."""
    return max(LEGACY_DIGITS, prefix_digits(KINDS_PER_ENTRY * max(size, 0)))


def prefixes(digits: int) -> list[str]:
    """Every bucket's prefix at ``digits`` hex digits, ``0...0`` to ``f...f``."""
    return [f"{n:0{digits}x}" for n in range(16**digits)]


__all__ = [
    "LEGACY_DIGITS",
    "MAX_DIGITS",
    "MIN_DIGITS",
    "RECORDS_PER_BUCKET",
    "most_digits",
    "prefix_digits",
    "prefixes",
]
