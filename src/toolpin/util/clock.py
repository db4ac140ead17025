"""The one way toolpin writes the current time: UTC, ISO 8601, ``Z``."""

from __future__ import annotations


def utc_now(*, millis: bool = False) -> str:
    """``2026-11-30T12:00:00Z``, or ``2026-11-30T12:00:00.000Z`` with ``millis``."""
    import datetime as _dt  # only when a time is written (not on the proxy's start path)

    moment = _dt.datetime.now(_dt.UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{moment.microsecond // 1000:03d}Z" if millis else f"{text}Z"
