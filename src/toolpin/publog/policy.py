"""A verifier's witness policy, in the spirit of C2SP tlog-policy: which logs are known,
which witnesses (with their cosignature/v1 keys), how they group, and the quorum a
checkpoint's cosignatures must make before any verifier accepts it.

The file is lines of words; ``#`` starts a comment, blank lines are ignored::

    log <log vkey> [url]                     # a known log (note key, type 0x01)
    witness <name> <witness vkey> [url]      # a witness (cosignature/v1 key, type 0x04)
    group <name> <k|any|all> <member>...     # k of these witnesses or groups
    quorum <group or witness name | none>    # exactly one

A group's members are witnesses or groups defined above it (so there is no cycle); ``any``
is 1 and ``all`` is every member. With ``log`` lines, a checkpoint of any other log is
refused. ``quorum none`` requires no cosignature (the log's signature still counts).

:meth:`Policy.check` opens the checkpoint with the log's key, verifies every cosignature
of a configured witness (a malformed or invalid one refuses the note, as
:func:`toolpin.publog.cosignature.verify_cosignatures` does) and evaluates the quorum; a
refusal names the group, how many it needs and which of its members cosigned.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolpin.errors import LogError
from toolpin.publog.cosignature import WitnessKey, parse_witness_vkey, verify_cosignatures
from toolpin.publog.note import Verifier, valid_key_name

MAX_POLICY_BYTES: Final = 64 << 10
MAX_MEMBERS: Final = 256
NONE: Final = "none"

__all__ = ["Group", "Policy", "PolicyError", "load_policy", "parse_policy"]


class PolicyError(LogError):
    """A policy file that cannot be used, or a checkpoint the policy refuses."""


@dataclass(frozen=True)
class Group:
    name: str
    threshold: int
    members: tuple[str, ...]


@dataclass(frozen=True)
class Witness:
    name: str
    key: WitnessKey
    url: str | None = None


@dataclass(frozen=True)
class Policy:
    logs: tuple[tuple[Verifier, str | None], ...]
    witnesses: Mapping[str, Witness]
    groups: Mapping[str, Group]
    quorum: str
    """A group or witness name, or ``none``."""

    def knows_log(self, verifier: Verifier) -> bool:
        return not self.logs or any(v == verifier for v, _ in self.logs)

    def cosigned(self, note: bytes | str) -> dict[str, int]:
        """``{witness name: timestamp}`` of the configured witnesses whose cosignature on
        ``note`` verifies (raises :class:`PolicyError` for a bad line of a known witness)."""
        raw = note.encode("utf-8") if isinstance(note, str) else note
        found: dict[str, int] = {}
        for name, witness in self.witnesses.items():
            try:
                stamps = verify_cosignatures(raw, [witness.key])
            except LogError as exc:
                raise PolicyError(f"checkpoint refused by the policy: {exc.message}") from None
            if stamps:
                found[name] = next(iter(stamps.values()))
        return found

    def check(self, note: bytes | str, log: Verifier | str) -> None:
        """Refuse (:class:`PolicyError`) a checkpoint note that is not signed by ``log``
        (a known log), or whose cosignatures do not make the quorum."""
        from toolpin.publog.checkpoint import open_checkpoint

        verifier = log if isinstance(log, Verifier) else Verifier.from_text(log)
        if not self.knows_log(verifier):
            raise PolicyError(f"the policy does not know the log {_shown(verifier.name)}")
        try:
            open_checkpoint(note, verifier)
        except LogError as exc:
            raise PolicyError(f"checkpoint refused by the policy: {exc.message}") from None
        if self.quorum == NONE:
            return
        cosigned = set(self.cosigned(note))
        missing = self._missing(self.quorum, cosigned)
        if missing is not None:
            raise PolicyError(f"checkpoint refused by the policy: {missing}")

    def satisfied(self, name: str, cosigned: set[str]) -> bool:
        if name in self.witnesses:
            return name in cosigned
        group = self.groups[name]
        return sum(self.satisfied(m, cosigned) for m in group.members) >= group.threshold

    def _missing(self, name: str, cosigned: set[str]) -> str | None:
        """Why ``name`` is not satisfied (one line), or ``None`` when it is."""
        if self.satisfied(name, cosigned):
            return None
        if name in self.witnesses:
            return f"no valid cosignature from the witness {_shown(name)}, the quorum"
        group = self.groups[name]
        done = [m for m in group.members if self.satisfied(m, cosigned)]
        listed = ", ".join(_shown(m) for m in done) if done else "none"
        return (
            f"the group {_shown(name)} needs {group.threshold} of {len(group.members)} "
            f"({', '.join(_shown(m) for m in group.members)}); {len(done)} cosigned "
            f"({listed}), {group.threshold - len(done)} missing"
        )

    def to_json(self) -> dict[str, Any]:
        """The policy for a page that checks cosignatures itself (stable keys)."""
        return {
            "logs": [v.text for v, _ in self.logs],
            "witnesses": [
                {
                    "name": name,
                    "keyName": w.key.name,
                    "keyId": w.key.key_id.hex(),
                    "publicKey": base64.b64encode(w.key.public).decode("ascii"),
                }
                for name, w in sorted(self.witnesses.items())
            ],
            "groups": [
                {"name": g.name, "threshold": g.threshold, "members": list(g.members)}
                for g in self.groups.values()
            ],
            "quorum": self.quorum,
        }


def _shown(name: str) -> str:
    from toolpin.core.render import clip, visible

    return clip(visible(name), 64)


def _fail(where: str, line: int, why: str) -> PolicyError:
    return PolicyError(f"{where}, line {line}: {why}")


def parse_policy(text: str, *, where: str = "the policy") -> Policy:
    """Parse a policy text (see the module). Raises :class:`PolicyError`."""
    logs: list[tuple[Verifier, str | None]] = []
    witnesses: dict[str, Witness] = {}
    groups: dict[str, Group] = {}
    quorum: str | None = None
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if any(ord(c) < 0x20 and c != "\t" for c in line):
            raise _fail(where, number, "control characters")
        words = line.split()
        keyword, args = words[0], words[1:]
        if keyword == "log":
            if not 1 <= len(args) <= 2:
                raise _fail(where, number, "expected: log <vkey> [url]")
            try:
                verifier = Verifier.from_text(args[0])
            except LogError as exc:
                raise _fail(where, number, exc.message) from None
            logs.append((verifier, args[1] if len(args) > 1 else None))
        elif keyword == "witness":
            if not 2 <= len(args) <= 3:
                raise _fail(where, number, "expected: witness <name> <vkey> [url]")
            name = _new_name(args[0], witnesses, groups, where, number)
            try:
                key = parse_witness_vkey(args[1])
            except LogError as exc:
                raise _fail(where, number, exc.message) from None
            if any(w.key == key for w in witnesses.values()):
                raise _fail(where, number, "this witness key is listed twice")
            witnesses[name] = Witness(name, key, args[2] if len(args) > 2 else None)
        elif keyword == "group":
            if len(args) < 3:
                raise _fail(where, number, "expected: group <name> <k|any|all> <member>...")
            name = _new_name(args[0], witnesses, groups, where, number)
            members = tuple(args[2:])
            if len(members) > MAX_MEMBERS or len(set(members)) != len(members):
                raise _fail(where, number, "a group lists a member twice, or too many")
            for member in members:
                if member not in witnesses and member not in groups:
                    raise _fail(
                        where, number, f"{_shown(member)} is not a witness or group defined above"
                    )
            groups[name] = Group(name, _threshold(args[1], len(members), where, number), members)
        elif keyword == "quorum":
            if len(args) != 1:
                raise _fail(where, number, "expected: quorum <group or witness name | none>")
            if quorum is not None:
                raise _fail(where, number, "a second quorum line")
            if args[0] != NONE and args[0] not in witnesses and args[0] not in groups:
                raise _fail(where, number, f"{_shown(args[0])} is not a witness or group")
            quorum = args[0]
        else:
            raise _fail(where, number, f"unknown keyword {_shown(keyword)}")
    if quorum is None:
        raise PolicyError(f"{where} has no quorum line")
    return Policy(tuple(logs), witnesses, groups, quorum)


def _new_name(
    name: str, witnesses: Mapping[str, Witness], groups: Mapping[str, Group], where: str, n: int
) -> str:
    if not valid_key_name(name) or name == NONE:
        raise _fail(where, n, f"{_shown(name)} is not a usable name")
    if name in witnesses or name in groups:
        raise _fail(where, n, f"{_shown(name)} is defined twice")
    return name


def _threshold(word: str, count: int, where: str, n: int) -> int:
    if word == "any":
        return 1
    if word == "all":
        return count
    if not word.isascii() or not word.isdigit() or word.startswith("0"):
        raise _fail(where, n, "a group's threshold is a number from 1, any or all")
    k = int(word)
    if k > count:
        raise _fail(where, n, f"a group of {count} cannot need {k}")
    return k


def load_policy(path: str | Path) -> Policy:
    """The policy in file ``path`` (UTF-8 text, at most 64 KiB)."""
    from toolpin.util.fs import read_input

    data = read_input(
        path,
        what=f"the policy file {path}",
        cap=MAX_POLICY_BYTES,
        error=PolicyError,
        missing=f"the policy file {path} does not exist",
    )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PolicyError(f"the policy file {path} is not UTF-8 text") from None
    return parse_policy(text, where=f"the policy file {path}")
