"""The five lookup tools: their definitions (input and output schemas, annotations) and
their answers, as plain JSON values in closed vocabulary.

``lookup_server``, ``server_history``, ``check_definitions`` and ``log_status`` answer
from the verified public log (:class:`~toolpin.lookup.source.LogSource`);
``pending_reviews`` from the local pin store, and only on stdio (:class:`Lookup` built
with ``local=False`` for HTTP has no such tool). Every answer names the checkpoint it
comes from, and says so, with a fixed reason key, when there is no verified log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from toolpin.core.render import counted
from toolpin.lookup.history import Observation, ServerHistory
from toolpin.lookup.source import LogSource, LogState
from toolpin.lookup.vocab import HEX16, HEX64, check_closed, safe_name

MAX_QUERY_CHARS: Final = 512
MAX_DEFINITIONS: Final = 2000
MAX_MATCHES: Final = 10
MAX_HISTORY: Final = 200
STALE_AFTER_SECONDS: Final = 2 * 24 * 3600
"""A checkpoint older than this is reported as stale (the crawler runs daily)."""


class ToolInputError(Exception):
    """Arguments a tool cannot use (fixed text: never the arguments themselves)."""


# ------------------------------------------------------------------------------- schemas

_STR: Final = {"type": "string"}
_NSTR: Final = {"type": ["string", "null"]}
_INT: Final = {"type": "integer", "minimum": 0}
_NINT: Final = {"type": ["integer", "null"], "minimum": 0}
_BOOL: Final = {"type": "boolean"}
_KEYS: Final = {"type": "array", "items": _STR}


def _obj(props: Mapping[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(props),
        "required": list(props) if required is None else required,
        "additionalProperties": False,
    }


def _nobj(props: Mapping[str, Any]) -> dict[str, Any]:
    schema = _obj(props)
    schema["type"] = ["object", "null"]
    return schema


CHECKPOINT_SCHEMA: Final = _nobj(
    {"origin": _STR, "size": _INT, "root": _STR, "checkedAt": _NSTR, "modifiedAt": _NSTR}
)
LOG_SCHEMA: Final = _obj(
    {
        "status": _STR,
        "source": _NSTR,
        "checkpoint": CHECKPOINT_SCHEMA,
        "stale": {"type": ["boolean", "null"]},
    }
)
MATCH_SCHEMA: Final = _obj({"id": _STR, "name": _STR, "package": _NSTR, "host": _NSTR})
WINDOW_SCHEMA: Final = _obj({"after": _STR, "before": _STR})
ITEM_SCHEMA: Final = _obj({"kind": _STR, "name": _STR, "status": _STR, "labels": _KEYS})
DIGESTS_SCHEMA: Final = _obj(
    dict.fromkeys(("surface", "tools", "prompts", "resources", "resourceTemplates"), _NSTR)
)
COUNTS_SCHEMA: Final = {"type": "object", "additionalProperties": _INT}
CHANGE_SCHEMA: Final = _obj(
    {
        "entry": _INT,
        "at": _STR,
        "window": WINDOW_SCHEMA,
        "surface": _STR,
        "labels": _KEYS,
        "labelsVerified": _BOOL,
    }
)
SERVER_SCHEMA: Final = _nobj(
    {
        "id": _STR,
        "name": _STR,
        "package": _NSTR,
        "host": _NSTR,
        "firstSeen": _STR,
        "lastSeen": _STR,
        "observations": _INT,
        "changes": _INT,
        "lastChange": {"anyOf": [CHANGE_SCHEMA, {"type": "null"}]},
        "changeLabels": {"type": "array", "items": CHANGE_SCHEMA},
        "surface": _STR,
        "digests": DIGESTS_SCHEMA,
        "counts": COUNTS_SCHEMA,
    }
)
HISTORY_ITEM_SCHEMA: Final = _obj(
    {
        "entry": _INT,
        "observedAt": _STR,
        "event": _STR,
        "window": {"anyOf": [WINDOW_SCHEMA, {"type": "null"}]},
        "surface": _STR,
        "digests": DIGESTS_SCHEMA,
        "counts": COUNTS_SCHEMA,
        "labels": _KEYS,
        "labelsVerified": _BOOL,
        "items": {"type": "array", "items": ITEM_SCHEMA},
        "itemCount": _INT,
    }
)
_LOOKUP_BASE: Final = {"status": _STR, "log": LOG_SCHEMA, "summary": _STR}


@dataclass(frozen=True)
class ToolSpec:
    """One tool's definition (all our own text; nothing from a server)."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    uses_log: bool


_SERVER_ARG: Final = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_QUERY_CHARS,
    "description": "A server's log id (16 hex), name, package (npm:@scope/name) or host.",
}

SPECS: Final = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "lookup_server",
            "Look up a public MCP server",
            "Whether the public log has seen a server and whether its definitions ever "
            "changed: first and last seen, number of changes, the last change's date, window "
            "and label keys, the current hashes, and the signed checkpoint the answer comes "
            "from. Call it before installing or trusting a public MCP server. Never returns "
            "text a server wrote.",
            _obj({"server": _SERVER_ARG}),
            _obj(
                {
                    **_LOOKUP_BASE,
                    "server": SERVER_SCHEMA,
                    "matches": {"type": "array", "items": MATCH_SCHEMA},
                }
            ),
            True,
        ),
        ToolSpec(
            "server_history",
            "History of a public MCP server",
            "The dated list of a server's observations in the public log: each change with "
            "its window, label keys, the changed definitions' names and the hashes.",
            _obj(
                {
                    "server": _SERVER_ARG,
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HISTORY},
                },
                required=["server"],
            ),
            _obj(
                {
                    **_LOOKUP_BASE,
                    "server": {"anyOf": [MATCH_SCHEMA, {"type": "null"}]},
                    "history": {"type": "array", "items": HISTORY_ITEM_SCHEMA},
                    "total": _INT,
                    "matches": {"type": "array", "items": MATCH_SCHEMA},
                }
            ),
            True,
        ),
        ToolSpec(
            "check_definitions",
            "Check definitions against the public log",
            "Given a set hash (surface or tools), or the per-tool definition hashes a client "
            "computed (tool definition hash v1), whether the public log has seen exactly this "
            "surface for that server, when, and whether it is the server's current one.",
            _obj(
                {
                    "server": _SERVER_ARG,
                    "hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                    "definitions": {
                        "type": "array",
                        "maxItems": MAX_DEFINITIONS,
                        "items": _obj(
                            {
                                "name": {"type": "string", "maxLength": 1024},
                                "hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                            }
                        ),
                    },
                },
                required=["server"],
            ),
            _obj(
                {
                    **_LOOKUP_BASE,
                    "server": {"anyOf": [MATCH_SCHEMA, {"type": "null"}]},
                    "hash": _NSTR,
                    "matchedAs": _NSTR,
                    "current": _BOOL,
                    "firstSeen": _NSTR,
                    "lastSeen": _NSTR,
                    "entries": {"type": "array", "items": _INT},
                    "matches": {"type": "array", "items": MATCH_SCHEMA},
                }
            ),
            True,
        ),
        ToolSpec(
            "pending_reviews",
            "Local servers waiting for review",
            "Local MCP servers whose last session toolpin blocked because their definitions "
            "changed: ids, times, hashes, label keys and the `toolpin review ID` command a "
            "person runs in a terminal. Never the changed text; this tool approves nothing.",
            _obj({}),
            _obj(
                {
                    "status": _STR,
                    "count": _INT,
                    "reviews": {
                        "type": "array",
                        "items": _obj(
                            {
                                "id": _STR,
                                "name": _STR,
                                "pinnedAt": _NSTR,
                                "blockedAt": _NSTR,
                                "midSession": _BOOL,
                                "pinnedSurface": _STR,
                                "blockedSurface": _STR,
                                "changes": _INT,
                                "labels": _KEYS,
                                "review": _STR,
                            }
                        ),
                    },
                    "unreadable": {"type": "array", "items": _STR},
                    "summary": _STR,
                }
            ),
            False,
        ),
        ToolSpec(
            "log_status",
            "Public log status",
            "The public log's checkpoint (origin, size, root), whether it verified against "
            "the pinned key, when it was written and checked, how old it is.",
            _obj({}),
            _obj(
                {
                    "status": _STR,
                    "source": _NSTR,
                    "verified": _BOOL,
                    "checkpoint": CHECKPOINT_SCHEMA,
                    "checkedAt": _NSTR,
                    "modifiedAt": _NSTR,
                    "ageSeconds": _NINT,
                    "stale": {"type": ["boolean", "null"]},
                    "newestEntryAt": _NSTR,
                    "servers": _INT,
                    "summary": _STR,
                }
            ),
            True,
        ),
    )
}

INSTRUCTIONS: Final = (
    "toolpin lookup is read-only. Before installing or trusting a public MCP server, call "
    "lookup_server; check_definitions tells whether exact definitions were seen before. "
    "After toolpin blocked a local server, pending_reviews lists it with its review command. "
    "Answers hold only ids, reduced names, dates, counts, hashes and fixed label keys, never "
    "text a server wrote. Approving a change is for a person in a terminal (toolpin review, "
    "then toolpin approve); never run toolpin approve yourself."
)


# ------------------------------------------------------------------------------- answers


def _parse_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None


class Lookup:
    """The tools over one log source and one pin store.

    ``local=False`` (HTTP) leaves out every tool that reads this machine's pin store.
    """

    def __init__(
        self,
        source: LogSource,
        *,
        local: bool = True,
        home: Path | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.source = source
        self.local = local
        self.home = home
        self._now = now or (lambda: datetime.now(UTC))

    def specs(self) -> list[ToolSpec]:
        return [s for s in SPECS.values() if self.local or s.uses_log]

    def open_world(self) -> bool:
        """True when the log tools reach the network (a log URL)."""
        return self.source.is_url

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """The structured answer of tool ``name`` (checked against the alphabet)."""
        spec = SPECS.get(name)
        if spec is None or (not self.local and not spec.uses_log):
            raise ToolInputError("unknown tool")
        args = dict(arguments or {})
        allowed = set(spec.input_schema["properties"])
        if set(args) - allowed:
            raise ToolInputError("unknown argument")
        handler = getattr(self, "_" + name)
        answer: dict[str, Any] = handler(args)
        check_closed(answer)
        return answer

    # -------------------------------------------------------------------- shared parts

    @staticmethod
    def _query(args: Mapping[str, Any]) -> str:
        value = args.get("server")
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_QUERY_CHARS:
            raise ToolInputError(
                f"server must be a non-empty string of at most {MAX_QUERY_CHARS} characters"
            )
        return value.strip()

    @staticmethod
    def _checkpoint(state: LogState) -> dict[str, Any] | None:
        cp = state.checkpoint
        if cp is None or not state.verified:
            return None
        return {
            "origin": safe_name(cp.origin),
            "size": cp.size,
            "root": cp.root_b64,
            "checkedAt": state.checked_at,
            "modifiedAt": state.modified_at,
        }

    def _age(self, state: LogState) -> tuple[int | None, bool | None]:
        """Seconds since the checkpoint was written, and whether that is stale."""
        if not state.verified or state.modified_at is None:
            return None, None
        moment = _parse_time(state.modified_at)
        if moment is None:
            return None, None
        age = max(0, int((self._now() - moment).total_seconds()))
        return age, age > STALE_AFTER_SECONDS

    def _log(self, state: LogState) -> dict[str, Any]:
        return {
            "status": state.reason,
            "source": state.kind,
            "checkpoint": self._checkpoint(state),
            "stale": self._age(state)[1],
        }

    @staticmethod
    def _as_of(state: LogState) -> str:
        cp = state.checkpoint
        assert cp is not None
        return f"as of checkpoint {cp.size} of {safe_name(cp.origin)}, verified {state.checked_at}"

    @staticmethod
    def _no_log(state: LogState) -> str:
        return f"no verified log ({state.reason}), so nothing is answered from it"

    @staticmethod
    def _match(history: ServerHistory) -> dict[str, Any]:
        last = history.observations[-1]
        return {
            "id": history.server_id,
            "name": last.name,
            "package": last.package,
            "host": last.url_host,
        }

    @staticmethod
    def _find(state: LogState, query: str) -> list[ServerHistory]:
        if HEX16.fullmatch(query.lower()):
            found = state.servers.get(query.lower())
            if found is not None:
                return [found]
        # Compared reduced, case-folded and without leading or trailing "_" (what
        # surrounding spaces and control characters reduce to).
        wanted = safe_name(query).lower().strip("_")
        host = (
            safe_name(query.split("://", 1)[1].split("/", 1)[0]).lower() if "://" in query else None
        )
        out = []
        for history in state.servers.values():
            last = history.observations[-1]
            names = {last.name.lower()}
            if last.package is not None:
                names.add(last.package.lower())
                names.add(last.package.split(":", 1)[-1].lower())
            if last.url_host is not None:
                names.add(last.url_host.lower())
            names = {n.strip("_") for n in names}
            if wanted in names or (host is not None and host == (last.url_host or "").lower()):
                out.append(history)
        return sorted(out, key=lambda h: h.server_id)

    def _resolve(
        self, args: Mapping[str, Any], base: dict[str, Any]
    ) -> tuple[LogState, ServerHistory | None]:
        """The state and the one server the query names; fills ``base`` otherwise."""
        query = self._query(args)
        state = self.source.state()
        base["log"] = self._log(state)
        base["matches"] = []
        if not state.verified:
            base["status"] = "no-log"
            base["summary"] = self._no_log(state)
            return state, None
        found = self._find(state, query)
        if not found:
            base["status"] = "not-found"
            base["summary"] = f"the log has no server by that name or id, {self._as_of(state)}"
            return state, None
        if len(found) > 1:
            base["status"] = "ambiguous"
            base["matches"] = [self._match(h) for h in found[:MAX_MATCHES]]
            base["summary"] = (
                f"{len(found)} servers match, ask again with one id, {self._as_of(state)}"
            )
            return state, None
        return state, found[0]

    def _change(self, state: LogState, before: Observation, after: Observation) -> dict[str, Any]:
        assert state.labeller is not None
        labels = state.labeller.labels(before, after)
        return {
            "entry": after.index,
            "at": after.observed_at,
            "window": {"after": before.observed_at, "before": after.observed_at},
            "surface": after.surface,
            "labels": labels.labels,
            "labelsVerified": labels.verified,
        }

    # ----------------------------------------------------------------------- the tools

    def _lookup_server(self, args: Mapping[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = {"server": None}
        state, history = self._resolve(args, answer)
        if history is None:
            return answer
        obs = history.observations
        changes = [self._change(state, a, b) for a, b in history.changes()]
        last = obs[-1]
        answer["status"] = "found"
        answer["server"] = {
            **self._match(history),
            "firstSeen": obs[0].observed_at,
            "lastSeen": last.observed_at,
            "observations": len(obs),
            "changes": len(changes),
            "lastChange": changes[-1] if changes else None,
            "changeLabels": changes[-20:],
            "surface": last.surface,
            "digests": last.digests,
            "counts": last.counts,
        }
        if changes:
            summary = (
                f"seen since {obs[0].observed_at}, changed {counted(len(changes), 'time')}, "
                f"last between {changes[-1]['window']['after']} and {changes[-1]['at']}"
            )
        else:
            summary = f"seen since {obs[0].observed_at}, never changed"
        answer["summary"] = f"{summary}, {self._as_of(state)}"
        return answer

    def _server_history(self, args: Mapping[str, Any]) -> dict[str, Any]:
        limit = args.get("limit", MAX_HISTORY)
        if type(limit) is not int or not 1 <= limit <= MAX_HISTORY:
            raise ToolInputError(f"limit must be an integer from 1 to {MAX_HISTORY}")
        answer: dict[str, Any] = {"server": None, "history": [], "total": 0}
        state, history = self._resolve(args, answer)
        if history is None:
            return answer
        assert state.labeller is not None
        items: list[dict[str, Any]] = []
        previous: Observation | None = None
        for obs in history.observations:
            entry: dict[str, Any] = {
                "entry": obs.index,
                "observedAt": obs.observed_at,
                "event": "first",
                "window": None,
                "surface": obs.surface,
                "digests": obs.digests,
                "counts": obs.counts,
                "labels": [],
                "labelsVerified": True,
                "items": [],
                "itemCount": 0,
            }
            if previous is not None:
                if previous.surface == obs.surface:
                    entry["event"] = "same"
                else:
                    labels = state.labeller.labels(previous, obs)
                    entry.update(
                        event="change",
                        window={"after": previous.observed_at, "before": obs.observed_at},
                        labels=labels.labels,
                        labelsVerified=labels.verified,
                        items=labels.items,
                        itemCount=labels.item_count,
                    )
            items.append(entry)
            previous = obs
        answer["status"] = "found"
        answer["server"] = self._match(history)
        answer["total"] = len(items)
        answer["history"] = items[-limit:]
        answer["summary"] = f"{len(items)} observations, {self._as_of(state)}"
        return answer

    def _check_definitions(self, args: Mapping[str, Any]) -> dict[str, Any]:
        digest = self._wanted_hash(args)
        answer: dict[str, Any] = {
            "server": None,
            "hash": digest,
            "matchedAs": None,
            "current": False,
            "firstSeen": None,
            "lastSeen": None,
            "entries": [],
        }
        state, history = self._resolve(args, answer)
        if history is None:
            return answer
        answer["server"] = self._match(history)
        matched_as = None
        hits: list[Observation] = []
        for obs in history.observations:
            for key in ("surface", "tools", "prompts", "resources", "resourceTemplates"):
                if obs.digests.get(key) == digest:
                    hits.append(obs)
                    matched_as = matched_as or key
                    break
        if not hits:
            answer["status"] = "not-seen"
            answer["summary"] = (
                f"the log never saw these definitions for this server, {self._as_of(state)}"
            )
            return answer
        current = hits[-1].index == history.observations[-1].index
        answer.update(
            status="seen",
            matchedAs=matched_as,
            current=current,
            firstSeen=hits[0].observed_at,
            lastSeen=hits[-1].observed_at,
            entries=[o.index for o in hits],
        )
        now_word = "they are the current ones" if current else "they are not the current ones"
        answer["summary"] = (
            f"seen as the {matched_as} of this server since {hits[0].observed_at}, {now_word}, "
            f"{self._as_of(state)}"
        )
        return answer

    @staticmethod
    def _wanted_hash(args: Mapping[str, Any]) -> str:
        given, definitions = args.get("hash"), args.get("definitions")
        if (given is None) == (definitions is None):
            raise ToolInputError("give exactly one of hash or definitions")
        if given is not None:
            if not isinstance(given, str) or not HEX64.fullmatch(given):
                raise ToolInputError("hash must be 64 lower-case hex characters")
            return given
        if not isinstance(definitions, list) or len(definitions) > MAX_DEFINITIONS:
            raise ToolInputError(f"definitions must be a list of at most {MAX_DEFINITIONS}")
        pairs = []
        for item in definitions:
            if not isinstance(item, dict) or set(item) != {"name", "hash"}:
                raise ToolInputError("each definition is an object with name and hash")
            name, digest = item["name"], item["hash"]
            if (
                not isinstance(name, str)
                or not isinstance(digest, str)
                or not HEX64.fullmatch(digest)
            ):
                raise ToolInputError("each definition has a string name and a 64-hex hash")
            pairs.append((name, digest))
        from toolpin.core.canonical import set_hash

        return set_hash(pairs)

    def _pending_reviews(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from toolpin.lookup.reviews import pending_reviews

        answer = pending_reviews(self.home)
        status = answer.pop("store", "ok")
        count = answer["count"]
        if count:
            waits = "waits" if count == 1 else "wait"
            summary = (
                f"{counted(count, 'local server')} {waits} for review, run the review command "
                "in a terminal"
            )
        else:
            summary = "no local server waits for review"
        return {"status": status, **answer, "summary": summary}

    def _log_status(self, args: Mapping[str, Any]) -> dict[str, Any]:
        state = self.source.state()
        age, stale = self._age(state)
        answer = {
            "status": state.reason,
            "source": state.kind,
            "verified": state.verified,
            "checkpoint": self._checkpoint(state),
            "checkedAt": state.checked_at,
            "modifiedAt": state.modified_at if state.verified else None,
            "ageSeconds": age,
            "stale": stale,
            "newestEntryAt": state.newest_entry_at if state.verified else None,
            "servers": len(state.servers) if state.verified else 0,
        }
        if state.verified:
            answer["summary"] = f"verified against the pinned key, {self._as_of(state)}"
        else:
            answer["summary"] = self._no_log(state)
        return answer
