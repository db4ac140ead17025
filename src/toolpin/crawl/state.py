"""Crawl state in SQLite: what the crawler knows about each server between runs.

One row per server: where it was found (and a descriptor to probe it again without
re-discovering it), ``first_seen``, ``last_probe`` (any attempt), ``last_ok`` (the last good
look), ``last_change`` and ``last_change_after`` (the last good look *before* the change:
a change noticed after a gap is dated as the window between the two), ``last_error`` (fixed
text) and ``last_hint`` (the sanitised stderr tail of that failure, never logged), the
current ``surface_hash`` and tool count, ``package`` (the release last logged, JSON, so a
new release with the same surface is noticed), and ``last_entry`` (the log index of its
latest entry, the next entry's continuity link). Schema 2 added ``package`` and
``last_hint``; a schema-1 file is upgraded in place when opened. A ``meta`` table keeps
the log origin the state belongs to, the log size it has seen and the registry's
``updated_since`` mark; ``runs`` keeps each run's summary.

The log is the source of truth: :func:`reconcile` replays entries the state has not seen
(a crawl killed between the append and the state commit), and refuses a log that is
*shorter* than the state remembers (rolled back). Times are UTC ``YYYY-MM-DDTHH:MM:SSZ``.
The file lives outside the served log directory; its writes are SQLite transactions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolpin.core.render import counted
from toolpin.crawl.candidates import Candidate, PackageCoords
from toolpin.errors import LogError, StoreError
from toolpin.util.closing import Closing

if TYPE_CHECKING:
    from toolpin.crawl.record import LoggedObservation
    from toolpin.publog.tiles import TileLog

SCHEMA_VERSION: Final = "2"
_UPGRADES: Final = {
    "1": (
        "ALTER TABLE servers ADD COLUMN package TEXT",
        "ALTER TABLE servers ADD COLUMN last_hint TEXT",
    ),
}
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS servers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  transport TEXT NOT NULL,
  descriptor TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active',
  first_seen TEXT NOT NULL,
  last_probe TEXT,
  last_ok TEXT,
  last_change TEXT,
  last_change_after TEXT,
  last_error TEXT,
  surface_hash TEXT,
  tool_count INTEGER,
  last_entry INTEGER,
  package TEXT,
  last_hint TEXT
);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ran_at TEXT NOT NULL,
  summary TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class ServerState:
    """One server's row."""

    id: str
    name: str
    source: str
    transport: str
    status: str
    first_seen: str
    last_probe: str | None
    last_ok: str | None
    last_change: str | None
    last_change_after: str | None
    last_error: str | None
    surface_hash: str | None
    tool_count: int | None
    last_entry: int | None
    descriptor: str
    package_json: str | None = None
    last_hint: str | None = None

    @property
    def package(self) -> PackageCoords | None:
        """The release last logged for this server, when one was."""
        if self.package_json is None:
            return None
        try:
            data = json.loads(self.package_json)
        except ValueError:
            return None
        return PackageCoords.from_json(data) if isinstance(data, dict) else None


_COLUMNS: Final = (
    "id, name, source, transport, status, first_seen, last_probe, last_ok, last_change, "
    "last_change_after, last_error, surface_hash, tool_count, last_entry, descriptor, "
    "package, last_hint"
)


class CrawlState(Closing):
    """An open crawl state file (use from one thread)."""

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self._db = db

    @classmethod
    def open(cls, path: str | Path) -> CrawlState:
        target = Path(path)
        if not target.parent.is_dir():
            raise StoreError(f"the directory of the crawl state {target} does not exist")
        try:
            db = sqlite3.connect(target, isolation_level=None, timeout=30.0)
            db.execute("PRAGMA busy_timeout = 30000")
            db.executescript(_SCHEMA)
            state = cls(target, db)
            version = state.get_meta("schema")
            if version is None:
                state.set_meta("schema", SCHEMA_VERSION)
            elif version in _UPGRADES:
                with state.transaction():
                    for statement in _UPGRADES[version]:
                        db.execute(statement)
                    state.set_meta("schema", SCHEMA_VERSION)
            elif version != SCHEMA_VERSION:
                raise StoreError(f"the crawl state {target} has an unknown schema ({version})")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"the crawl state {target} is not usable ({exc})") from None
        return state

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write (BEGIN IMMEDIATE ... COMMIT, rolled back on error)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- meta ----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def bind_origin(self, origin: str) -> None:
        """Tie the state to one log; refuse a state written for another log."""
        known = self.get_meta("origin")
        if known is None:
            self.set_meta("origin", origin)
        elif known != origin:
            raise LogError(
                f"the crawl state {self.path} belongs to another log",
                advice="Give each log its own state file with --state FILE.",
            )

    @property
    def log_size(self) -> int:
        value = self.get_meta("log_size")
        return int(value) if value is not None and value.isdigit() else 0

    # -- servers -------------------------------------------------------------------------

    def get(self, server_id: str) -> ServerState | None:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM servers WHERE id = ?", (server_id,)
        ).fetchone()
        return ServerState(*row) if row else None

    def servers(self) -> list[ServerState]:
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM servers ORDER BY first_seen, id")
        return [ServerState(*row) for row in rows]

    def known_candidates(self, source: str) -> list[Candidate]:
        """Active servers of ``source`` kept from earlier runs, as candidates."""
        out: list[Candidate] = []
        rows = self._db.execute(
            "SELECT descriptor FROM servers WHERE source = ? AND status = 'active' "
            "ORDER BY first_seen, id",
            (source,),
        )
        for (descriptor,) in rows:
            try:
                data = json.loads(descriptor)
            except ValueError:
                continue
            candidate = Candidate.from_descriptor(data) if isinstance(data, dict) else None
            if candidate is not None:
                out.append(candidate)
        return out

    def seen(self, candidate: Candidate, when: str) -> None:
        """Insert the server on first sight; refresh its name and descriptor."""
        descriptor = json.dumps(candidate.descriptor(), sort_keys=True)
        self._db.execute(
            "INSERT INTO servers(id, name, source, transport, descriptor, first_seen) "
            "VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET name = excluded.name, "
            "transport = excluded.transport, descriptor = excluded.descriptor, "
            "status = 'active'",
            (candidate.id, candidate.name, candidate.source, candidate.transport, descriptor, when),
        )

    def record_failure(
        self, server_id: str, when: str, reason: str, hint: str | None = None
    ) -> None:
        self._db.execute(
            "UPDATE servers SET last_probe = ?, last_error = ?, last_hint = ? WHERE id = ?",
            (when, reason, hint, server_id),
        )

    def record_skip(self, server_id: str, reason: str) -> None:
        """Recorded but not probed (``last_probe`` is left alone)."""
        self._db.execute(
            "UPDATE servers SET last_error = ?, last_hint = NULL WHERE id = ?", (reason, server_id)
        )

    def record_look(self, server_id: str, when: str, tool_count: int | None) -> None:
        """A good look that found the surface unchanged."""
        self._db.execute(
            "UPDATE servers SET last_probe = ?, last_ok = ?, last_error = NULL, "
            "last_hint = NULL, tool_count = ? WHERE id = ?",
            (when, when, tool_count, server_id),
        )

    def record_change(
        self,
        server_id: str,
        when: str,
        surface: str,
        entry: int,
        tool_count: int | None,
        package: PackageCoords | None = None,
    ) -> None:
        """A good look that found a new surface or release, logged at ``entry``."""
        package_json = json.dumps(package.to_json(), sort_keys=True) if package else None
        self._db.execute(
            "UPDATE servers SET last_change_after = CASE WHEN surface_hash IS NULL "
            "THEN NULL ELSE last_ok END, last_change = ?, last_probe = ?, last_ok = ?, "
            "last_error = NULL, last_hint = NULL, surface_hash = ?, last_entry = ?, "
            "tool_count = ?, package = COALESCE(?, package) WHERE id = ?",
            (when, when, when, surface, entry, tool_count, package_json, server_id),
        )

    def set_status(self, server_ids: Iterable[str], status: str) -> None:
        self._db.executemany(
            "UPDATE servers SET status = ? WHERE id = ?", [(status, i) for i in server_ids]
        )

    def add_run(self, ran_at: str, summary: Mapping[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO runs(ran_at, summary) VALUES(?, ?)",
            (ran_at, json.dumps(dict(summary), sort_keys=True)),
        )

    def runs(self) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT summary FROM runs ORDER BY id")
        return [json.loads(summary) for (summary,) in rows]

    def apply_logged(self, record: LoggedObservation, index: int) -> None:
        """Bring a server's row up to a logged entry the state had not seen."""
        current = self.get(record.server_id)
        if current is None:
            descriptor = json.dumps(
                {
                    "id": record.server_id,
                    "name": record.name,
                    "source": record.source,
                    "transport": record.transport,
                },
                sort_keys=True,
            )
            self._db.execute(
                "INSERT INTO servers(id, name, source, transport, descriptor, first_seen) "
                "VALUES(?, ?, ?, ?, ?, ?)",
                (
                    record.server_id,
                    record.name,
                    record.source,
                    record.transport,
                    descriptor,
                    record.observed_at,
                ),
            )
        elif current.last_entry is not None and current.last_entry >= index:
            return
        self.record_change(
            record.server_id,
            record.observed_at,
            record.surface,
            index,
            record.tool_count,
            record.package,
        )


def reconcile(state: CrawlState, log: TileLog) -> int:
    """Replay log entries the state has not seen; returns how many were replayed."""
    from toolpin.crawl.record import read_record
    from toolpin.publog.entries import decode_entry

    known = state.log_size
    if log.size < known:
        raise LogError(
            f"the log has {counted(log.size, 'entry')} but the crawl state has seen {known}; "
            "was the log rolled back?",
            advice="Restore the log directory from a good copy before crawling again.",
        )
    if log.size == known:
        return 0
    with state.transaction():
        for index, raw in enumerate(log.iter_entries(known, log.size), start=known):
            record = read_record(decode_entry(raw, canonical=False))
            if record is not None:
                state.apply_logged(record, index)
        state.set_meta("log_size", str(log.size))
    return log.size - known
