"""Shards of a crawl and the observations they hand to the one sequencer.

``toolpin log crawl --shard K/N`` probes only the candidates whose identity hashes to
its shard (:meth:`Shard.owns`: the first 8 bytes of SHA-256 of the candidate id, modulo
``N``; stable across runs and machines) and writes what it saw, not log entries: an
*observations* file (JSON Lines). The first line is the header::

    {"format": "toolpin-observations", "v": 1, "shard": "2/4", "ranAt": "..."}

then one line per candidate: its public identity (``id``, ``name``, ``source``,
``transport``, ``url``, ``package`` — never a config's environment), how the probe went
(``reason``, ``skipped``, ``seconds``, ``probedAt``, ``hint``, ``note``) and, when it
succeeded, the observation (``era``, ``protocol``, ``observedAt``, ``suppliedEnv``,
``placeholders``, ``package`` and ``definitions``: the lockfile-entry form of the whole
snapshot, as in the log's blobs). ``toolpin log append --from`` reads these files
strictly (a snapshot is re-hashed against its ``surfaceHash``, limits checked again) and
appends what changed, in candidate-id order, so the same observations give the same log.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolpin.crawl.candidates import SOURCES, Candidate, PackageCoords
from toolpin.crawl.record import Observation, definitions_blob
from toolpin.errors import InputError, JSONError, LockfileError, ToolpinError

FORMAT: Final = "toolpin-observations"
VERSION: Final = 1
MAX_LINE_BYTES: Final = 32 << 20
MAX_FILE_BYTES: Final = 2 << 30
_TIME: Final = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_SHARD: Final = re.compile(r"([1-9][0-9]{0,5})/([1-9][0-9]{0,5})")
_TRANSPORTS: Final = ("stdio", "streamable-http", "unknown")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _SHARD.fullmatch(text.strip())
        if match is None or not 1 <= int(match[1]) <= int(match[2]):
            raise InputError("--shard is K/N with 1 <= K <= N (for example 2/4)")
        return cls(int(match[1]), int(match[2]))

    def owns(self, candidate_id: str) -> bool:
        digest = hashlib.sha256(candidate_id.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def file_name(self) -> str:
        width = len(str(self.count))
        return f"shard-{self.index:0{width}d}-of-{self.count}.jsonl"


@dataclass(frozen=True)
class Outcome:
    """What probing one candidate gave (from a crawl, or read back from a shard's file)."""

    candidate: Candidate
    observation: Observation | None
    reason: str | None
    skipped: bool
    seconds: float
    probed_at: str | None = None
    hint: str | None = None
    package: PackageCoords | None = None
    note: str | None = None


def _observation_json(obs: Observation) -> dict[str, Any]:
    from toolpin.core.canonical import parse_json

    return {
        "era": obs.era,
        "protocol": obs.protocol_version,
        "observedAt": obs.observed_at,
        "suppliedEnv": list(obs.supplied_env) if obs.supplied_env is not None else None,
        "placeholders": list(obs.placeholders),
        "package": obs.package.to_json() if obs.package is not None else None,
        "definitions": parse_json(definitions_blob(obs.snapshot)),
    }


def _by_id(outcome: Outcome) -> str:
    return outcome.candidate.id


def _outcome_json(out: Outcome) -> dict[str, Any]:
    return {
        "candidate": out.candidate.identity(),
        "reason": out.reason,
        "skipped": out.skipped,
        "seconds": round(out.seconds, 3),
        "probedAt": out.probed_at,
        "hint": out.hint,
        "note": out.note,
        "package": out.package.to_json() if out.package is not None else None,
        "observation": _observation_json(out.observation) if out.observation else None,
    }


def encode_observations(shard: Shard | None, ran_at: str, outcomes: Iterable[Outcome]) -> bytes:
    """The observations file of one shard's run."""
    from toolpin.core.canonical import canonical_bytes

    header = {"format": FORMAT, "v": VERSION, "shard": str(shard) if shard else None}
    lines = [canonical_bytes({**header, "ranAt": ran_at})]
    lines.extend(canonical_bytes(_outcome_json(out)) for out in sorted(outcomes, key=_by_id))
    return b"\n".join(lines) + b"\n"


class _Bad(Exception):
    pass


def _text(doc: dict[str, Any], key: str, *, optional: bool = True, limit: int = 4096) -> Any:
    value = doc.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise _Bad(key)
    return value


def _time(doc: dict[str, Any], key: str, *, optional: bool = True) -> str | None:
    value = _text(doc, key, optional=optional)
    if value is not None and not _TIME.fullmatch(value):
        raise _Bad(key)
    return value  # type: ignore[no-any-return]


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and len(v) < 256 for v in value):
        raise _Bad("variable names")
    return tuple(value)


def _package(value: Any) -> PackageCoords | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Bad("package")
    return PackageCoords.from_json(value)


def _read_candidate(raw: Any) -> Candidate:
    if not isinstance(raw, dict):
        raise _Bad("candidate")
    source, transport = raw.get("source"), raw.get("transport")
    if source not in SOURCES or transport not in _TRANSPORTS:
        raise _Bad("candidate")
    return Candidate(
        id=_text(raw, "id", optional=False, limit=1024),
        name=_text(raw, "name", optional=False),
        source=source,
        transport=transport,
        url=_text(raw, "url"),
        package=_package(raw.get("package")),
    )


def _read_observation(raw: Any, where: str, server: str) -> Observation:
    from toolpin.crawl.limits import check_limits
    from toolpin.lockfile.native import entry_from_json

    if not isinstance(raw, dict) or raw.get("era") not in ("modern", "handshake"):
        raise _Bad("observation")
    supplied = raw.get("suppliedEnv")
    snapshot = entry_from_json(raw.get("definitions"), path=Path(where), name=server).snapshot
    check_limits(snapshot)
    return Observation(
        snapshot=snapshot,
        era=raw["era"],
        protocol_version=_text(raw, "protocol", limit=64),
        observed_at=_time(raw, "observedAt", optional=False) or "",
        supplied_env=_names(supplied) if supplied is not None else None,
        placeholders=_names(raw.get("placeholders", [])),
        package=_package(raw.get("package")),
    )


def _lines(data: bytes) -> Iterator[bytes]:
    for line in data.split(b"\n"):
        if line.strip():
            yield line


def decode_observations(data: bytes, where: str) -> list[Outcome]:
    """The outcomes of an observations file; refuses (exit 2) anything malformed."""
    from toolpin.core.canonical import parse_json

    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"{where} is larger than an observations file may be")
    out: list[Outcome] = []
    header = False
    for number, line in enumerate(_lines(data), start=1):
        if len(line) > MAX_LINE_BYTES:
            raise InputError(f"{where}: line {number} is too long for an observation")
        try:
            doc = parse_json(line)
            if not isinstance(doc, dict):
                raise _Bad("line")
            if number == 1:
                if doc.get("format") != FORMAT or doc.get("v") != VERSION:
                    raise InputError(f"{where} is not a toolpin observations file (version 1)")
                header = True
                continue
            candidate = _read_candidate(doc.get("candidate"))
            raw_obs = doc.get("observation")
            obs = None if raw_obs is None else _read_observation(raw_obs, where, candidate.id)
            seconds = doc.get("seconds")
            if not isinstance(seconds, int | float) or not 0 <= seconds < 1e7:
                raise _Bad("seconds")
            if not isinstance(doc.get("skipped"), bool):
                raise _Bad("skipped")
            if obs is None and not isinstance(doc.get("reason"), str):
                raise _Bad("reason")
            out.append(
                Outcome(
                    candidate,
                    obs,
                    _text(doc, "reason", limit=1024),
                    doc["skipped"],
                    float(seconds),
                    _time(doc, "probedAt"),
                    _text(doc, "hint", limit=1024),
                    _package(doc.get("package")),
                    _text(doc, "note", limit=1024),
                )
            )
        except _Bad as exc:
            raise InputError(f"{where}: line {number} has a bad {exc}") from None
        except (JSONError, LockfileError) as exc:  # not a lock's advice: say which line
            raise InputError(f"{where}: line {number}: {exc.message}") from None
        except InputError:
            raise
        except ToolpinError as exc:
            raise InputError(f"{where}: line {number}: {exc.message}") from None
    if not header:
        raise InputError(f"{where} is empty (not an observations file)")
    return out


__all__ = ["Outcome", "Shard", "decode_observations", "encode_observations"]
