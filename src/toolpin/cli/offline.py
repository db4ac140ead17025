"""Offline commands: ``toolpin pin``, ``toolpin check``, ``toolpin hash``."""

from __future__ import annotations
