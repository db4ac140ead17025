"""The local pin store: what this user approved, one file per server.

Layout under :func:`toolpin.util.fs.toolpin_home` (directory 0700, files 0600)::

    pins/<id>.json      the pin, and a pending observation waiting for review
    pins/<id>.lock      the per-server cross-process lock
    audit.log           the hash-chained audit log (toolpin.pins.audit)

A pin file holds the approved snapshot in the lockfile's entry form (readable
definitions, hashes that verify themselves) plus, after a drift, the observation that was
blocked. Every write is temp file + fsync + rename under the server's lock, and the audit
entry is appended first. A pin file that cannot be read or does not match its own hashes
stops everything that needs it (:class:`StoreError`): toolpin fails closed and never
re-pins over it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolpin.core.canonical import parse_json
from toolpin.core.snapshot import Snapshot
from toolpin.errors import (
    InputError,
    JSONError,
    LockfileError,
    StoreError,
    StoreWriteError,
    ToolpinError,
)
from toolpin.lockfile.native import (
    LockEntry,
    bytes_intact,
    dumps_with_digest,
    entry_from_json,
    entry_json,
)
from toolpin.pins import audit
from toolpin.util.fs import atomic_write, ensure_private_dir, locked, read_input, toolpin_home

if TYPE_CHECKING:
    from toolpin.core.argvdiff import ArgvDiff
    from toolpin.core.drift import Drift

FORMAT_KEY: Final = "toolpinPin"
MIN_PREFIX: Final = 4
"""The shortest id prefix ``show``, ``review``, ``approve`` and ``forget`` accept."""
_HEX_DIGITS: Final = frozenset("0123456789abcdef")


def _shown(text: str) -> str:
    from toolpin.core.render import clip, visible

    return repr(clip(visible(text), 40))


@dataclass(frozen=True)
class Command:
    """The server command a pin was made with: its id (a hash of the argv), its label
    (base name and argument count) and, from this version on, the argv as
    :func:`toolpin.core.redact.redact_argv` writes it (every value that looks like a
    secret replaced). The argv itself is never stored: it may hold keys. Two commands are
    the same command when their id and label are (the redacted argv is what is shown)."""

    id: str
    label: str
    argv: tuple[str, ...] | None = field(default=None, compare=False)
    """The redacted argv; ``None`` in pins made by an older toolpin."""

    @classmethod
    def for_argv(cls, command_id: str, argv: Sequence[str]) -> Command:
        """The command of ``argv`` (whose id is ``command_id``), its argv redacted."""
        from toolpin.core.redact import redact_argv
        from toolpin.pins.serverid import default_label

        return cls(command_id, default_label(argv), tuple(redact_argv(argv)))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "label": self.label}
        if self.argv is not None:
            out["argv"] = list(self.argv)
        return out

    @classmethod
    def from_json(cls, value: Any) -> Command | None:
        if value is None:
            return None
        if not (
            isinstance(value, dict)
            and isinstance(value.get("id"), str)
            and isinstance(value.get("label"), str)
        ):
            raise ValueError("malformed command")
        argv = value.get("argv")
        if argv is not None and not (
            isinstance(argv, list) and all(isinstance(x, str) for x in argv)
        ):
            raise ValueError("malformed command argv")
        return cls(value["id"], value["label"], tuple(argv) if argv is not None else None)


def command_diff(approved: Command | None, now: Command) -> ArgvDiff:
    """The word diff of the approved command and ``now`` (redacted argvs). With no
    recorded earlier argv (an older toolpin) it says so and shows only the new one."""
    from toolpin.core.argvdiff import argv_diff

    before = approved.argv if approved is not None else None
    return argv_diff(before, now.argv or ())


@dataclass(frozen=True)
class Pending:
    """An observation that differed from the pin and waits for review."""

    observed_at: str
    snapshot: Snapshot
    mid_session: bool = False
    command: Command | None = None
    """The command the observation was made with, when it differs from the pin's."""

    @property
    def digest(self) -> str:
        """The surface hash of the observation (what ``approve --expect`` names)."""
        return self.snapshot.surface_hash()


@dataclass(frozen=True)
class PinRecord:
    """One pinned server."""

    id: str
    label: str
    pinned_at: str
    snapshot: Snapshot
    pending: Pending | None = None
    command: Command | None = None
    """The approved command (pins made by ``--name``; ``None`` for pins keyed by argv)."""


class PinStore:
    """Pins under a state directory (default: ``$TOOLPIN_HOME`` or the user data dir)."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = home if home is not None else toolpin_home()
        self.pins_dir = self.home / "pins"
        self.audit_path = self.home / "audit.log"

    def ensure(self) -> None:
        """Create the directories (0700)."""
        try:
            ensure_private_dir(self.home)
            ensure_private_dir(self.pins_dir)
        except OSError as exc:
            raise StoreWriteError(
                f"cannot create the pin store at {self.home}: {exc.strerror or exc}"
            ) from None

    def path_for(self, server_id: str) -> Path:
        """The pin file of a server."""
        return self.pins_dir / f"{server_id}.json"

    @contextlib.contextmanager
    def lock(self, server_id: str) -> Iterator[None]:
        """Hold the server's cross-process lock (read-modify-write sections)."""
        self.ensure()
        path = self.pins_dir / f"{server_id}.lock"
        try:
            held = locked(path, timeout=30.0)
            held.__enter__()
        except OSError as exc:  # the lock file is opened for writing (and created)
            raise unusable(path, exc, writing=True) from None
        try:
            yield
        finally:
            held.__exit__(None, None, None)

    # ------------------------------------------------------------------------------- read

    def load(self, server_id: str) -> PinRecord | None:
        """The pin of a server, ``None`` when there is none; :class:`StoreError` when corrupt."""
        path = self.path_for(server_id)
        if not os.path.lexists(path):
            return None
        try:  # the operating system's refusal (permission, ...) is not corruption
            os.close(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)))
        except OSError as exc:
            raise unusable(path, exc) from None
        try:
            data = read_input(path, error=StoreError)
        except StoreError as exc:
            raise self._corrupt(path, exc.message.rpartition(": ")[2]) from None
        try:
            return self._decode(path, data, server_id)
        except StoreError:
            raise
        except Exception as exc:  # anything else a damaged file provokes: still corrupt
            raise self._corrupt(path, f"unreadable ({type(exc).__name__})") from None

    def _corrupt(self, path: Path, why: str) -> StoreError:
        return StoreError(
            f"corrupt pin store: {path} ({why})",
            advice="toolpin will not start this server until the file is readable. Restore it "
            "from a backup, or remove it with `toolpin forget <id>` to pin again from scratch.",
        )

    def _decode(self, path: Path, data: bytes, server_id: str) -> PinRecord:
        trusted = bytes_intact(data)
        try:
            doc = json.loads(data) if trusted else parse_json(data)
        except RecursionError:
            raise self._corrupt(path, "nested too deeply to be a pin file") from None
        except (JSONError, ValueError) as exc:
            raise self._corrupt(path, f"not valid JSON: {getattr(exc, 'message', exc)}") from None
        try:
            if not isinstance(doc, dict) or doc.get(FORMAT_KEY) != 1:
                raise self._corrupt(path, "not a toolpin pin file")
            if doc.get("id") != server_id:
                raise self._corrupt(path, "the file belongs to another server id")
            label, pinned_at = doc.get("label"), doc.get("pinnedAt")
            if not isinstance(label, str) or not isinstance(pinned_at, str):
                raise self._corrupt(path, "label or pinnedAt missing")
            entry = entry_from_json(doc.get("pin"), path=path, name=server_id, trusted=trusted)
            pending = None
            raw_pending = doc.get("pending")
            if raw_pending is not None:
                if not isinstance(raw_pending, dict) or not isinstance(
                    raw_pending.get("observedAt"), str
                ):
                    raise self._corrupt(path, "malformed pending observation")
                observed = entry_from_json(
                    raw_pending.get("observation"), path=path, name=server_id, trusted=trusted
                )
                pending = Pending(
                    observed_at=raw_pending["observedAt"],
                    snapshot=observed.snapshot,
                    mid_session=raw_pending.get("midSession") is True,
                    command=Command.from_json(raw_pending.get("command")),
                )
            command = Command.from_json(doc.get("command"))
        except LockfileError as exc:
            raise self._corrupt(path, exc.message) from None
        except (KeyError, TypeError, AttributeError, ValueError):
            raise self._corrupt(path, "malformed pin file") from None
        return PinRecord(
            id=server_id,
            label=label,
            pinned_at=pinned_at,
            snapshot=entry.snapshot,
            pending=pending,
            command=command,
        )

    def all(self) -> list[PinRecord | tuple[str, StoreError]]:
        """Every pin (corrupt ones as ``(id, error)``), sorted by label then id."""
        out: list[PinRecord | tuple[str, StoreError]] = []
        try:
            names = sorted(p.name for p in self.pins_dir.iterdir() if p.suffix == ".json")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot read {self.pins_dir}: {exc.strerror or exc}") from None
        for name in names:
            server_id = name[: -len(".json")]
            try:
                record = self.load(server_id)
            except StoreError as exc:
                out.append((server_id, exc))  # only this server is unreadable
                continue
            if record is not None:
                out.append(record)
        return sorted(
            out, key=lambda r: (r.label, r.id) if isinstance(r, PinRecord) else ("", r[0])
        )

    def ids(self) -> list[str]:
        """The ids of every pin file, sorted (readable or not)."""
        try:
            return sorted(p.name[: -len(".json")] for p in self.pins_dir.glob("*.json"))
        except OSError as exc:
            raise StoreError(f"cannot read {self.pins_dir}: {exc.strerror or exc}") from None

    def resolve(self, text: str | None = None, *, name: str | None = None) -> str:
        """The id a person means: a full id, a unique prefix of one (at least
        :data:`MIN_PREFIX` hex characters), or ``name``, the server's ``--name``.

        :class:`InputError` (exit 2, one line) when nothing matches or more than one pin
        does; the candidates are listed by id only (labels are the user's own text, but
        ids are what the commands take).
        """
        from toolpin.pins.serverid import ID_LENGTH, name_id

        if (text is None) == (name is None):
            raise InputError("give one server: an ID (or a prefix of one) or --name NAME")
        if name is not None:
            found = []
            for server_id in self.ids():
                if server_id == name_id(name):
                    found.append(server_id)
                    continue
                with contextlib.suppress(StoreError):
                    record = self.load(server_id)
                    if record is not None and record.label == name:
                        found.append(server_id)  # a pin keyed by its argv, labelled --name
            return self._one(found, f"no pinned server is named {_shown(name)}", name=name)
        assert text is not None
        wanted = text.lower()
        if not (MIN_PREFIX <= len(wanted) <= ID_LENGTH and set(wanted) <= _HEX_DIGITS):
            raise InputError(
                f"{_shown(text)} is not a server id or a prefix of one (at least {MIN_PREFIX} "
                f"of its {ID_LENGTH} hex characters; see `toolpin list`)"
            )
        if len(wanted) == ID_LENGTH:
            return wanted
        found = [i for i in self.ids() if i.startswith(wanted)]
        return self._one(found, f"no pinned server id starts with {wanted}", prefix=wanted)

    @staticmethod
    def _one(found: list[str], none: str, *, name: str | None = None, prefix: str = "") -> str:
        if len(found) == 1:
            return found[0]
        if not found:
            raise InputError(f"{none} (see `toolpin list`)")
        what = f"the name {_shown(name)}" if name is not None else f"the id prefix {prefix}"
        raise InputError(
            f"{what} matches {len(found)} pinned servers: {', '.join(found)} (give more of the id)"
        )

    # ------------------------------------------------------------------------------ write

    def _write(self, record: PinRecord) -> None:
        doc: dict[str, Any] = {
            FORMAT_KEY: 1,
            "id": record.id,
            "label": record.label,
            "pinnedAt": record.pinned_at,
            "pin": entry_json(LockEntry(snapshot=record.snapshot)),
        }
        if record.command is not None:
            doc["command"] = record.command.to_json()
        if record.pending is not None:
            doc["pending"] = {
                "observedAt": record.pending.observed_at,
                "midSession": record.pending.mid_session,
                "digest": record.pending.digest,
                "observation": entry_json(LockEntry(snapshot=record.pending.snapshot)),
            }
            if record.pending.command is not None:
                doc["pending"]["command"] = record.pending.command.to_json()
        try:
            atomic_write(self.path_for(record.id), dumps_with_digest(doc), mode=0o600)
        except OSError as exc:
            raise unusable(self.path_for(record.id), exc, writing=True) from None

    def _audit(self, event: str, fields: dict[str, Any]) -> None:
        try:
            audit.append(self.audit_path, event, fields)
        except OSError as exc:
            raise unusable(self.audit_path, exc, writing=True) from None
        except (ValueError, KeyError, TypeError) as exc:  # a hand-edited entry
            raise StoreError(
                f"the audit log {self.audit_path} has a damaged entry ({type(exc).__name__})",
                advice="toolpin records nothing until the audit log is repaired: "
                "toolpin verify --repair. The pins themselves are unchanged.",
            ) from None

    def pin_first(
        self, server_id: str, label: str, snapshot: Snapshot, command: Command | None = None
    ) -> tuple[PinRecord, bool]:
        """Trust on first use: pin ``snapshot`` unless another process pinned first.

        Returns the pin in force and whether this call created it.
        """
        with self.lock(server_id):
            existing = self.load(server_id)
            if existing is not None:
                return existing, False
            record = PinRecord(
                id=server_id,
                label=label,
                pinned_at=audit.now_iso(),
                snapshot=snapshot,
                command=command,
            )
            self._audit(
                "pin",
                {
                    "server": server_id,
                    "label": label,
                    "surface": snapshot.surface_hash(),
                    "counts": snapshot.counts(),
                },
            )
            self._write(record)
            return record, True

    def record_drift(
        self,
        server_id: str,
        observed: Snapshot,
        drift: Drift,
        *,
        mid_session: bool = False,
        command: Command | None = None,
    ) -> None:
        """Store a blocked observation as pending (the approved pin is unchanged)."""
        from toolpin.core.drift import change_keys  # the drift path only

        with self.lock(server_id):
            current = self.load(server_id)
            if current is None:
                return
            self._audit(
                "drift",
                {
                    "server": server_id,
                    "label": current.label,
                    "pinned": current.snapshot.surface_hash(),
                    "observed": observed.surface_hash(),
                    "midSession": mid_session,
                    "changes": change_keys(drift),
                    **({"command": command.id} if command != current.command and command else {}),
                },
            )
            pending = Pending(
                observed_at=audit.now_iso(),
                snapshot=observed,
                mid_session=mid_session,
                command=command if command != current.command else None,
            )
            self._write(replace(current, pending=pending))

    def approve(self, server_id: str, *, expect: str | None = None) -> PinRecord:
        """Make the pending observation the pin. ``expect`` must prefix its digest if given."""
        with self.lock(server_id):
            current = self.require(server_id)
            if current.pending is None:
                raise NothingPending(f"nothing is waiting for review for {current.label}")
            digest = current.pending.digest
            if expect is not None and not (len(expect) >= 8 and digest.startswith(expect.lower())):
                raise ChangedSinceReview(
                    "the observation waiting for review is not the one you reviewed "
                    f"(expected {expect[:16]}, found {digest[:16]})",
                    advice=f"Review it again: toolpin review {server_id}",
                )
            self._audit(
                "approve",
                {
                    "server": server_id,
                    "label": current.label,
                    "previous": current.snapshot.surface_hash(),
                    "surface": digest,
                },
            )
            record = PinRecord(
                id=server_id,
                label=current.label,
                pinned_at=audit.now_iso(),
                snapshot=current.pending.snapshot,
                command=current.pending.command or current.command,
            )
            self._write(record)
            return record

    def accept_recorded(
        self, server_id: str, observed: Snapshot, drift: Drift, log: Mapping[str, Any]
    ) -> PinRecord | None:
        """Make ``observed`` the pin without a person: the ``accept-public-after`` policy
        found it publicly recorded long enough, its changes aimed at nothing the model
        reads. The audit log records a ``drift`` and an ``approve`` naming the policy and
        the log's entry (``log``: label keys and numbers only). ``None`` when the pin
        moved meanwhile (another process), so the caller blocks as usual."""
        from toolpin.core.drift import change_keys

        with self.lock(server_id):
            current = self.load(server_id)
            if current is None or current.pending is not None:
                return None
            previous = current.snapshot.surface_hash()
            surface = observed.surface_hash()
            self._audit(
                "drift",
                {
                    "server": server_id,
                    "label": current.label,
                    "pinned": previous,
                    "observed": surface,
                    "midSession": False,
                    "changes": change_keys(drift),
                },
            )
            self._audit(
                "approve",
                {
                    "server": server_id,
                    "label": current.label,
                    "previous": previous,
                    "surface": surface,
                    "by": "accept-public-after",
                    "log": dict(log),
                },
            )
            record = PinRecord(
                id=server_id,
                label=current.label,
                pinned_at=audit.now_iso(),
                snapshot=observed,
                command=current.command,
            )
            self._write(record)
            return record

    def require(self, server_id: str) -> PinRecord:
        """The pin of a server; :class:`InputError` (exit 2) when there is none."""
        record = self.load(server_id)
        if record is None:
            raise InputError(f"unknown server id {server_id} (see `toolpin list`)")
        return record

    def forget(self, server_id: str) -> bool:
        """Delete a pin (its next connect pins again). False when there was none."""
        with self.lock(server_id):
            path = self.path_for(server_id)
            if not path.exists():
                return False
            label = "?"
            with contextlib.suppress(StoreError):
                record = self.load(server_id)
                if record is not None:
                    label = record.label
            self._audit("forget", {"server": server_id, "label": label})
            try:
                os.unlink(path)
            except OSError as exc:
                raise StoreWriteError(f"cannot remove {path}: {exc.strerror or exc}") from None
            return True


def unusable(path: Path, exc: OSError, *, writing: bool = False) -> StoreError:
    """A store file the operating system refused: named for what it is (permission, a
    read-only file system, a full disk), never called corrupt. ``writing``: the refusal
    came while writing (the lock, an audit entry, a pin file), so it is a
    :class:`StoreWriteError` and what was read before stays valid."""
    import errno

    why = exc.strerror or type(exc).__name__
    if exc.errno in (errno.EACCES, errno.EPERM):
        advice = (
            f"Give this user read and write access to {path.parent} (or set TOOLPIN_HOME "
            "to a store it owns). The pins were not changed."
        )
    elif exc.errno == errno.EROFS:
        advice = "The store is on a read-only file system: remount it writable or set TOOLPIN_HOME."
    elif exc.errno == errno.ENOSPC:
        advice = "The disk is full: free some space. The pins were not changed."
    else:
        advice = "Check the store directory (permissions, disk, mount). The pins were not changed."
    if writing:
        return StoreWriteError(f"cannot write the pin store file {path}: {why}", advice=advice)
    return StoreError(f"cannot read the pin store file {path}: {why}", advice=advice)


class NothingPending(ToolpinError):
    """``approve`` with nothing waiting for review (exit 1: nothing was changed)."""

    exit_code = 1


class ChangedSinceReview(ToolpinError):
    """``approve --expect`` named another observation than the one now pending."""

    exit_code = 1


class StorePinSource:
    """The proxy's pin from the local store: trust on first use, then review/approve.

    Loading happens at construction, before the server is started, so a corrupt store
    stops the proxy (fail closed) and is never re-pinned.
    """

    match_text = "unchanged"
    accepts_subset = False

    def save_report(self, text: str) -> str | None:
        return save_block_report(self.server_id, text, self.store.home)

    def __init__(
        self, store: PinStore, server_id: str, label: str, command: Command | None = None
    ) -> None:
        self.store = store
        self.server_id = server_id
        self.label = label
        self.command = command
        store.ensure()
        self.record = store.load(server_id)

    @property
    def command_change(self) -> tuple[Command, Command] | None:
        """``(approved, now)`` when the pin was made with another command (``--name``)."""
        record, now = self.record, self.command
        if record is None or record.command is None or now is None:
            return None
        return None if record.command.id == now.id else (record.command, now)

    @property
    def command_diff(self) -> ArgvDiff | None:
        """The word diff of the approved command and this one, when they differ."""
        change = self.command_change
        return None if change is None else command_diff(*change)

    def _quoted(self) -> str:
        from toolpin.core.render import visible

        return json.dumps(visible(self.label), ensure_ascii=False)

    def pinned(self) -> Snapshot | None:
        """The approved snapshot, ``None`` before the first pin."""
        return self.record.snapshot if self.record is not None else None

    def pin_first(self, snapshot: Snapshot) -> tuple[Snapshot, bool]:
        """Pin on first use (another proxy of the same server may have won the race)."""
        record, created = self.store.pin_first(self.server_id, self.label, snapshot, self.command)
        self.record = record
        return record.snapshot, created

    def accept_recorded(self, snapshot: Snapshot, drift: Drift, log: Mapping[str, Any]) -> bool:
        """Make a publicly recorded change the pin (the ``accept-public-after`` policy);
        False when it cannot be (a changed command, or the pin moved meanwhile)."""
        if self.command_change is not None:
            return False
        record = self.store.accept_recorded(self.server_id, snapshot, drift, log)
        if record is None:
            return False
        self.record = record
        return True

    def record_drift(self, snapshot: Snapshot, drift: Drift, *, mid_session: bool) -> None:
        """Keep the blocked observation as pending for ``toolpin review``."""
        self.store.record_drift(
            self.server_id, snapshot, drift, mid_session=mid_session, command=self.command
        )

    def block_message(self, *, mid_session: bool) -> str:
        """The -31042 message: the label and the review command, never server text."""
        if mid_session:
            return (
                f"toolpin blocked {self._quoted()}: a definition changed during this session, "
                "so the response was not forwarded. Review the change with: toolpin review "
                f"{self.server_id} (after approving it, restart the server to use it)"
            )
        what = (
            "its command changed since you approved it"
            if self.command_change is not None
            else "its definitions changed since you approved them"
        )
        return (
            f"toolpin blocked {self._quoted()}: {what}, so nothing was forwarded. Review the "
            f"change in a terminal with: toolpin review {self.server_id}"
        )

    def review_hint(self) -> str:
        """The review command."""
        return f"toolpin review {self.server_id}"

    def advice(self, *, mid_session: bool) -> list[str]:
        """Closing lines of the stderr report."""
        lines = ["This session is blocked. Nothing queued was forwarded to the server."]
        if mid_session:
            lines.append(
                "The server showed the approved definitions when it connected and changed "
                "them afterwards."
            )
        lines += [
            f"Review the diff. If you accept it:  toolpin approve {self.server_id}",
            "Otherwise, do nothing and the pin stands.",
        ]
        return lines

    def describe_pin(self) -> str:
        """``pinned: <time>`` for the report."""
        return f"pinned: {self.record.pinned_at}" if self.record is not None else "pinned: (now)"


def save_block_report(server_id: str, text: str, home: Path | None = None) -> str:
    """Write the latest block report of a server to ``<home>/reports/<id>.txt`` (private,
    atomic) and return its path. The text is what stderr showed, with unsafe characters
    already made visible; ``toolpin review ID`` stays the way to read the change."""
    directory = (home if home is not None else toolpin_home()) / "reports"
    ensure_private_dir(directory)
    path = directory / f"{server_id}.txt"
    atomic_write(path, text.encode("utf-8", "backslashreplace"))
    return str(path)
