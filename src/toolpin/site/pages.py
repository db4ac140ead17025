"""The page model: what the pages of one server need, computed once by the build and read
by every output (the HTML pages, the API files and the feeds)."""

from __future__ import annotations

from dataclasses import dataclass, field

from toolpin.site.badge import Badge
from toolpin.site.changes import ChangeSummary
from toolpin.site.model import ServerHistory, Version


@dataclass
class ServerPage:
    """What the pages of one server need (computed once, used by every output)."""

    history: ServerHistory
    badge: Badge
    changes: list[tuple[Version, ChangeSummary | None]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.history.id
