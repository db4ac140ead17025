"""The interface between the proxy and wherever its pin comes from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolpin.core.drift import Drift
    from toolpin.core.snapshot import Snapshot


class PinSource(Protocol):
    """Where the proxy's pin comes from (the local store, or a team lock).

    This is everything the proxy knows of pins: it never imports the store or the team
    lock, and a new source (a remote server's pins) needs only these members.
    """

    @property
    def match_text(self) -> str:
        """The words of the stderr note when everything matches (``unchanged``)."""

    @property
    def accepts_subset(self) -> bool:
        """True for a team lock: a client offered only some of the approved definitions
        (servers offer less to clients that declare fewer capabilities) passes; additions
        and changes still block."""

    def pinned(self) -> Snapshot | None:
        """The approved snapshot, or ``None`` to pin on first use."""

    def pin_first(self, snapshot: Snapshot) -> tuple[Snapshot, bool]:
        """Pin ``snapshot`` unless another process did first; returns (pin, created)."""

    def record_drift(self, snapshot: Snapshot, drift: Drift, *, mid_session: bool) -> None:
        """Store the blocked observation for review."""

    def accept_recorded(self, snapshot: Snapshot, drift: Drift, log: Mapping[str, Any]) -> bool:
        """Make a change the public log recorded long enough the pin, without a person
        (``accept-public-after``), with an audit record; False when this source never
        does (a team lock changes in a pull request) or cannot now."""

    def block_message(self, *, mid_session: bool) -> str:
        """The one-line message sent to the client with -31042."""

    def review_hint(self) -> str:
        """The command a person runs to review (``toolpin review <id>``)."""

    def advice(self, *, mid_session: bool) -> list[str]:
        """Closing lines of the stderr block report."""

    def describe_pin(self) -> str:
        """Where the pin came from, for the stderr report (``pinned <time>``)."""

    def save_report(self, text: str) -> str | None:
        """Keep the block report (plain text) where a person can read it, for clients that
        hide the server's stderr; returns its path, which the client's error names."""
