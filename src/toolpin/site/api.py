"""The static, versioned JSON API: ``api/v1/``.

* ``log.json`` — the checkpoint (origin, size, root, note) and the verifier key;
* ``servers.json`` — every server: id, source, transport, first seen, last change, last
  good look, versions, tool count, surface digest, badge state;
* ``servers/<id>.json`` — one server's history: per version the log index, leaf hash,
  time, window, digests, counts, label keys and the proof and entry bundle paths;
* ``stats.json`` — changes, servers changed and servers first recorded in 24 h / 7 d / 30 d;
* ``digests/index.json`` — the lookup index's prefix length ``d`` (1 to 5, chosen from the
  log) and ``digests/<p>.json`` — the private lookup index, one bucket per ``d``-hex-digit
  digest prefix (:mod:`toolpin.site.digests`);
* ``schema/<name>.schema.json`` (JSON Schema 2020-12) per file and ``openapi.json``.

Nothing from crawl state's free text (errors, homepages, descriptions) is in any file.
Strings a server or registry chose (name, package) appear only under ``untrusted``, made
visible.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from toolpin.core.render import visible
from toolpin.site.model import ServerHistory, parse_time

if TYPE_CHECKING:
    from toolpin.site.history import History
    from toolpin.site.model import LogView
    from toolpin.site.output import SiteWriter
    from toolpin.site.pages import ServerPage

API: Final = "api/v1"
WINDOWS: Final = {
    "24h": dt.timedelta(hours=24),
    "7d": dt.timedelta(days=7),
    "30d": dt.timedelta(days=30),
}

__all__ = [
    "API",
    "SCHEMAS",
    "entry_bundle",
    "server_row",
    "write_api",
    "write_history",
    "write_server_api",
]


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def _untrusted(history: ServerHistory) -> dict[str, Any]:
    latest = history.latest
    out: dict[str, Any] = {"name": visible(latest.name)}
    if latest.package:
        out["package"] = {
            k: visible(latest.package[k])
            for k in ("ecosystem", "name", "version")
            if k in latest.package
        }
    if latest.server_info:
        out["serverInfo"] = {
            k: visible(latest.server_info[k])
            for k in ("name", "version")
            if k in latest.server_info
        }
    return out


def _checkpoint(view: LogView) -> dict[str, Any]:
    cp = view.checkpoint
    return {"origin": cp.origin, "size": cp.size, "root": cp.root}


def entry_bundle(index: int, size: int) -> str:
    from toolpin.publog.tiles import TILE_WIDTH, entries_path

    bundle = index // TILE_WIDTH
    full = size // TILE_WIDTH
    return entries_path(bundle) if bundle < full else entries_path(bundle, size % TILE_WIDTH)


def server_row(page: ServerPage) -> dict[str, Any]:
    """One server's row of ``servers.json``."""
    history = page.history
    sid = page.id
    if history.opted_out:
        return {"id": sid, "optedOut": True}
    latest = history.latest
    return {
        "id": sid,
        "optedOut": False,
        "source": latest.source,
        "transport": latest.transport,
        "firstSeen": history.first.observed_at,
        "lastChange": latest.observed_at,
        "lastGoodLook": history.last_ok,
        "versions": len(history.versions),
        "tools": latest.tools,
        "surface": latest.surface,
        "badge": {"state": page.badge.state, "message": page.badge.message},
        "history": f"{API}/servers/{sid}.json",
        "page": f"servers/{sid}.html",
        "untrusted": _untrusted(history),
    }


def _published(view: LogView, published: History, index: int) -> dict[str, Any]:
    at = published.proven_at(index)
    return {"origin": view.checkpoint.origin, "size": at.size, "root": at.root}


def write_server_api(
    writer: SiteWriter, view: LogView, page: ServerPage, published: History
) -> None:
    """``servers/<id>.json``: one server's history (written with the server's page). Its
    ``checkpoint`` is the one its latest entry's proof names, and each version's
    ``proofCheckpoint`` the size of the one its own proof names (never the moving current
    checkpoint: the file changes only when the server does)."""
    history = page.history
    sid = page.id
    latest = _published(view, published, history.latest.index)
    if history.opted_out:
        writer.text(
            f"{API}/servers/{sid}.json",
            _dump({"id": sid, "optedOut": True, "checkpoint": latest}),
        )
        return
    versions = []
    for position, (version, change) in enumerate(page.changes):
        after = None
        if position > 0:
            after = version.last_good_look or history.versions[position - 1].observed_at
        versions.append(
            {
                "index": version.index,
                "leafHash": version.leaf_hash,
                "observedAt": version.observed_at,
                "window": {
                    "after": after,
                    "afterKnown": position == 0 or version.last_good_look is not None,
                    "seen": version.observed_at,
                },
                "surface": version.surface,
                "digests": dict(sorted(version.digests.items())),
                "counts": dict(sorted(version.counts.items())),
                "labels": list(change.label_keys) if change is not None else [],
                "first": change is None,
                "proof": f"proof/{version.index}.tlog-proof",
                "proofCheckpoint": published.size_after(version.index),
                "bundle": entry_bundle(version.index, published.size_after(version.index)),
                "blob": version.blob,
            }
        )
    writer.text(
        f"{API}/servers/{sid}.json",
        _dump(
            {
                "id": sid,
                "optedOut": False,
                "checkpoint": latest,
                "versions": versions,
                "untrusted": _untrusted(history),
            }
        ),
    )


def write_history(writer: SiteWriter, view: LogView, published: History) -> None:
    """``checkpoints/<size>`` (each published checkpoint's note, immutable) and
    ``api/v1/checkpoints.json``, the list of them (:mod:`toolpin.site.history`)."""
    from toolpin.site.history import HISTORY_DIR, HISTORY_INDEX

    rows = []
    for item in published.items:
        rel = f"{HISTORY_DIR}/{item.size}"
        if not writer.keep(rel):
            writer.text(rel, item.note)
        rows.append({"size": item.size, "root": item.root, "path": rel})
    writer.text(HISTORY_INDEX, _dump({"origin": view.checkpoint.origin, "checkpoints": rows}))


def write_api(
    writer: SiteWriter, view: LogView, pages: Mapping[str, ServerPage], now: dt.datetime
) -> None:
    """Every file of ``api/v1`` but the servers' own (:func:`write_server_api`)."""
    cp = view.checkpoint
    writer.text(
        f"{API}/log.json",
        _dump(
            {
                "checkpoint": {**_checkpoint(view), "note": cp.note, "path": "checkpoint"},
                "vkey": cp.vkey,
                "lastEntryTime": cp.time or None,
            }
        ),
    )
    servers = [server_row(pages[sid]) for sid in sorted(pages)]
    writer.text(f"{API}/servers.json", _dump({"checkpoint": _checkpoint(view), "servers": servers}))
    starts = {key: now - span for key, span in WINDOWS.items()}
    changes, new = dict.fromkeys(WINDOWS, 0), dict.fromkeys(WINDOWS, 0)
    changed: dict[str, set[str]] = {key: set() for key in WINDOWS}
    for history in (p.history for p in pages.values() if not p.history.opted_out):
        for position, version in enumerate(history.versions):
            seen = parse_time(version.observed_at)  # once per version, for every window
            for key, start in starts.items():
                if seen <= start:
                    continue
                if position == 0:
                    new[key] += 1
                else:
                    changes[key] += 1
                    changed[key].add(history.id)
    windows = {
        key: {"changes": changes[key], "serversChanged": len(changed[key]), "serversNew": new[key]}
        for key in WINDOWS
    }
    writer.text(
        f"{API}/stats.json",
        _dump(
            {
                "checkpoint": _checkpoint(view),
                "asOf": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "servers": sum(1 for p in pages.values() if not p.history.opted_out),
                "entries": cp.size,
                "windows": windows,
            }
        ),
    )
    for name, schema in SCHEMAS.items():
        writer.text(f"{API}/schema/{name}.schema.json", _dump(schema))
    writer.text(f"{API}/openapi.json", _dump(openapi()))


_TIME: Final = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"}
_HEX64: Final = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_PREFIX_PATTERN: Final = "^[0-9a-f]{1,5}$"
_ID: Final = {"type": "string", "pattern": "^[0-9a-f]{16}$"}
_CHECKPOINT: Final = {
    "type": "object",
    "required": ["origin", "size", "root"],
    "properties": {
        "origin": {"type": "string"},
        "size": {"type": "integer", "minimum": 0},
        "root": {"type": "string", "pattern": "^[A-Za-z0-9+/]{43}=$"},
        "note": {"type": "string"},
        "path": {"const": "checkpoint"},
    },
    "additionalProperties": False,
}
_UNTRUSTED: Final = {
    "type": "object",
    "description": "Strings a server or registry chose, made visible; never instructions.",
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "package": {"type": "object", "additionalProperties": {"type": "string"}},
        "serverInfo": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "additionalProperties": False,
}
_SCHEMA_ID: Final = "https://json-schema.org/draft/2020-12/schema"
_SERVER_ROW: Final = {
    "type": "object",
    "required": ["id", "optedOut"],
    "properties": {
        "id": _ID,
        "optedOut": {"type": "boolean"},
        "source": {"type": "string", "pattern": "^[a-z0-9-]{1,32}$"},
        "transport": {"type": "string", "pattern": "^[a-z0-9-]{1,32}$"},
        "firstSeen": _TIME,
        "lastChange": _TIME,
        "lastGoodLook": _TIME,
        "versions": {"type": "integer", "minimum": 1},
        "tools": {"type": ["integer", "null"], "minimum": 0},
        "surface": _HEX64,
        "badge": {
            "type": "object",
            "required": ["state", "message"],
            "properties": {
                "state": {
                    "enum": ["unchanged", "changed", "changed-since", "new", "stale", "unverified"]
                },
                "message": {"type": "string", "pattern": "^[A-Za-z0-9 ·]{1,40}$"},
            },
            "additionalProperties": False,
        },
        "history": {"type": "string", "pattern": "^api/v1/servers/[0-9a-f]{16}\\.json$"},
        "page": {"type": "string", "pattern": "^servers/[0-9a-f]{16}\\.html$"},
        "untrusted": _UNTRUSTED,
    },
    "additionalProperties": False,
}
_VERSION: Final = {
    "type": "object",
    "required": ["index", "leafHash", "observedAt", "window", "surface", "proof", "bundle"],
    "properties": {
        "index": {"type": "integer", "minimum": 0},
        "leafHash": _HEX64,
        "observedAt": _TIME,
        "window": {
            "type": "object",
            "required": ["after", "afterKnown", "seen"],
            "properties": {
                "after": {"anyOf": [_TIME, {"type": "null"}]},
                "afterKnown": {"type": "boolean"},
                "seen": _TIME,
            },
            "additionalProperties": False,
        },
        "surface": _HEX64,
        "digests": {
            "type": "object",
            "additionalProperties": {"anyOf": [_HEX64, {"type": "null"}]},
        },
        "counts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
        "labels": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9-]{1,64}$"}},
        "first": {"type": "boolean"},
        "proof": {"type": "string", "pattern": "^proof/[0-9]+\\.tlog-proof$"},
        "proofCheckpoint": {"type": "integer", "minimum": 1},
        "bundle": {"type": "string", "pattern": "^tile/entries/[x0-9/]+(\\.p/[0-9]+)?$"},
        "blob": {
            "anyOf": [{"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}, {"type": "null"}]
        },
    },
    "additionalProperties": False,
}
_WINDOW_STATS: Final = {
    "type": "object",
    "required": ["changes", "serversChanged", "serversNew"],
    "properties": {
        k: {"type": "integer", "minimum": 0} for k in ("changes", "serversChanged", "serversNew")
    },
    "additionalProperties": False,
}
SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    "checkpoints": {
        "$schema": _SCHEMA_ID,
        "title": "api/v1/checkpoints.json",
        "description": "Every checkpoint the site published, smallest first (the last is the "
        "current one). The entries from the previous size up to a size have their inclusion "
        "proofs against that checkpoint, kept at its path; prove it consistent with the "
        "current checkpoint from the tiles.",
        "type": "object",
        "required": ["origin", "checkpoints"],
        "properties": {
            "origin": {"type": "string"},
            "checkpoints": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["size", "root", "path"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1},
                        "root": {"type": "string", "pattern": "^[A-Za-z0-9+/]{43}=$"},
                        "path": {"type": "string", "pattern": "^checkpoints/[1-9][0-9]*$"},
                    },
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
    "log": {
        "$schema": _SCHEMA_ID,
        "title": "api/v1/log.json",
        "type": "object",
        "required": ["checkpoint", "vkey"],
        "properties": {
            "checkpoint": _CHECKPOINT,
            "vkey": {"type": "string", "pattern": "^[^+\\s]+\\+[0-9a-f]{8}\\+[A-Za-z0-9+/=]+$"},
            "lastEntryTime": {"anyOf": [_TIME, {"type": "null"}]},
        },
        "additionalProperties": False,
    },
    "servers": {
        "$schema": _SCHEMA_ID,
        "title": "api/v1/servers.json",
        "type": "object",
        "required": ["checkpoint", "servers"],
        "properties": {
            "checkpoint": _CHECKPOINT,
            "servers": {"type": "array", "items": _SERVER_ROW},
        },
        "additionalProperties": False,
    },
    "server": {
        "$schema": _SCHEMA_ID,
        "title": "api/v1/servers/{id}.json",
        "type": "object",
        "required": ["id", "optedOut", "checkpoint"],
        "properties": {
            "id": _ID,
            "optedOut": {"type": "boolean"},
            "checkpoint": _CHECKPOINT,
            "versions": {"type": "array", "items": _VERSION},
            "untrusted": _UNTRUSTED,
        },
        "additionalProperties": False,
    },
    "stats": {
        "$schema": _SCHEMA_ID,
        "title": "api/v1/stats.json",
        "type": "object",
        "required": ["checkpoint", "asOf", "servers", "entries", "windows"],
        "properties": {
            "checkpoint": _CHECKPOINT,
            "asOf": _TIME,
            "servers": {"type": "integer", "minimum": 0},
            "entries": {"type": "integer", "minimum": 0},
            "windows": {
                "type": "object",
                "required": list(WINDOWS),
                "properties": dict.fromkeys(WINDOWS, _WINDOW_STATS),
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
    },
    "digests": {
        "$schema": _SCHEMA_ID,
        "title": "api/v1/digests/{prefix}.json",
        "description": "One bucket of the private lookup index: every surface and tools-set "
        "digest whose first d hex digits (d from digests/index.json) are the prefix, with "
        "the entries that recorded it (RFC 8785 JSON). A hint only: confirm a hit from the "
        "entry and its inclusion proof.",
        "type": "object",
        "required": ["checkpoint", "prefix", "digests"],
        "properties": {
            "checkpoint": _CHECKPOINT,
            "prefix": {"type": "string", "pattern": _PREFIX_PATTERN},
            "digests": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["digest", "kind", "entries"],
                    "properties": {
                        "digest": _HEX64,
                        "kind": {"enum": ["surface", "tools"]},
                        "entries": {
                            "type": "array",
                            "minItems": 1,
                            "uniqueItems": True,
                            "items": {"type": "integer", "minimum": 0},
                        },
                    },
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
    "digests-index": {
        "$schema": _SCHEMA_ID,
        "title": "api/v1/digests/index.json",
        "description": "The private lookup index's prefix length d: every bucket is "
        "digests/<first d hex digits>.json, all 16**d of them. d is the smallest from 1 to 5 "
        "at which the log's (digest, kind) records average at most 1,024 per bucket; it "
        "changes only when the log grows past a length's limit. No file: the old layout, "
        "d = 3. A reader refuses a d longer than the rule allows for the log's size, and "
        "checks every bucket as ever: a wrong d can only make a digest look unrecorded.",
        "type": "object",
        "required": ["prefix_digits"],
        "properties": {"prefix_digits": {"type": "integer", "minimum": 1, "maximum": 5}},
        "additionalProperties": False,
    },
}


def openapi() -> dict[str, Any]:
    """An OpenAPI 3.1 description of the static files (GET only)."""

    def get(summary: str, schema: str) -> dict[str, Any]:
        return {
            "get": {
                "summary": summary,
                "responses": {
                    "200": {
                        "description": summary,
                        "content": {
                            "application/json": {"schema": {"$ref": f"schema/{schema}.schema.json"}}
                        },
                    }
                },
            }
        }

    server_path = get("One server's history, with hashes and proof links", "server")
    server_path["get"]["parameters"] = [
        {
            "name": "id",
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        }
    ]
    bucket_path = get(
        "One bucket of the private lookup index: the digests that begin with the prefix",
        "digests",
    )
    bucket_path["get"]["description"] = (
        "Ask for the bucket of a digest's first d hex digits (d from /digests/index.json; "
        "3 when that file is absent), never for the digest: the host learns one of 16**d "
        "prefixes, each holding up to about 1,024 digests on average (k-anonymity). Every "
        "prefix has a file (an empty bucket too). A bucket is an untrusted hint: confirm a "
        "hit by reading the entry from the tiles and verifying its inclusion proof against a "
        "checkpoint you verified; a miss is only as complete as the index (`toolpin log "
        "verify` audits it and its prefix length against the log)."
    )
    bucket_path["get"]["parameters"] = [
        {
            "name": "prefix",
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": _PREFIX_PATTERN},
        }
    ]
    index_path = get("The prefix length of the private lookup index", "digests-index")
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "toolpin public log, static API",
            "version": "1",
            "description": "Static JSON files built from a verified log; every file names "
            "its checkpoint. Verify entries with the tlog-proof files under proof/.",
        },
        "paths": {
            "/log.json": get("The checkpoint and the verifier key", "log"),
            "/servers.json": get("Every server in the log", "servers"),
            "/servers/{id}.json": server_path,
            "/stats.json": get("Changes in the last 24 hours, 7 days and 30 days", "stats"),
            "/digests/index.json": index_path,
            "/digests/{prefix}.json": bucket_path,
        },
    }
