"""A team lock's public-log proofs: recorded by ``lock --log``, verified by ``lock --check``.

``toolpin lock --log URL --vkey FILE`` looks each server's locked ``surfaceHash`` up in the
log (:func:`toolpin.pins.publiclog.evidence_each`); for each one the log recorded, the
lock entry gets a ``publicLog`` member (:class:`toolpin.evidence.proofs.LogProof`): the
signed checkpoint, the entry's bytes and leaf hash, and its inclusion proof.

``toolpin lock --check`` verifies every ``publicLog`` member before anything is started:
offline, with the log's key (the signature, the inclusion proof, the digest in the entry;
without a configured log, everything but the signature). A proof that does not verify
makes the lock unusable (:class:`~toolpin.errors.LockfileError`, exit 2), as a lock whose
hashes do not match is. With the log reachable, the log's current checkpoint must extend
each recorded one; a log that contradicts a recorded checkpoint (a fork, a rollback) makes
the lock unusable too, naming it. A log that cannot be reached leaves the offline
verification, said in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolpin.errors import LockfileError
from toolpin.lockfile.native import PUBLIC_LOG, LockEntry
from toolpin.pins.publiclog import DEFAULT_TIMEOUT, Evidence, evidence_each, settings

if TYPE_CHECKING:
    from toolpin.evidence.proofs import Verified


class Recorder:
    """``LockOptions.annotate`` for ``lock --log``: adds each recorded entry's proof.

    After the call, :attr:`evidence` holds the log's answer per server (the ``log:`` lines)
    and :attr:`problem` why proofs could not be fetched (one line, or ``None``)."""

    def __init__(
        self, home: Path, *, url: str | None, vkey: str | None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.home = home
        self.url = url
        self.vkey = vkey
        self.timeout = timeout
        self.evidence: dict[str, Evidence] | None = None
        self.problem: str | None = None
        self.recorded: dict[str, str] = {}
        """The ``proof:`` line of each server whose proof was recorded."""

    def __call__(self, entries: Mapping[str, LockEntry]) -> dict[str, LockEntry]:
        digests = {name: entry.snapshot.surface_hash() for name, entry in entries.items()}
        self.evidence = evidence_each(
            self.home, digests, url=self.url, vkey=self.vkey, timeout=self.timeout
        )
        out = dict(entries)
        if not self.evidence:
            return out
        indices: dict[str, int] = {}
        for name, found in self.evidence.items():
            index = getattr(found.found, "entry_index", None) if found.recorded else None
            if isinstance(index, int):
                indices[name] = index
        if not indices:
            return out
        from toolpin.evidence import LogProblem
        from toolpin.evidence.proofs import prove

        log = next(iter(self.evidence.values())).settings
        try:
            proofs = prove(log.ref(), indices, home=self.home, timeout=self.timeout)
        except LogProblem as exc:
            from toolpin.core.render import visible

            self.problem = f"no proof was recorded: {visible(exc.message)}"
            return out
        from toolpin.core.render import visible

        for name, proof in proofs.items():
            cp = proof.head()  # just verified by prove()
            self.recorded[name] = (
                f"proof: recorded in the lock (entry {proof.entry_index} in checkpoint "
                f"{cp.size} of {visible(cp.origin)})"
            )
            entry = out[name]
            out[name] = replace(entry, extra={**entry.extra, PUBLIC_LOG: proof.to_json()})
        return out


@dataclass(frozen=True)
class ProofCheck:
    """One server's ``publicLog`` proof, verified."""

    name: str
    verified: Verified
    consistent: int | None = None
    """The size of the log's current checkpoint proven to extend the recorded one."""
    online: str | None = None
    """Why consistency was not proven (the log could not be reached, or none is set)."""

    def line(self) -> str:
        from toolpin.core.render import visible

        cp = self.verified.checkpoint
        what = f"entry {self.verified.entry_index} in checkpoint {cp.size} of {visible(cp.origin)}"
        if not self.verified.signed:
            return (
                f"proof: {what} includes the locked definitions; "
                "its signature is checked with the log's key (--log URL --vkey FILE)"
            )
        text = f"proof: {what}, verified offline"
        if self.consistent is not None:
            return f"{text}; the log's checkpoint {self.consistent} extends it"
        return f"{text}; {self.online}" if self.online else text

    def to_json(self) -> dict[str, Any]:
        cp = self.verified.checkpoint
        return {
            "origin": cp.origin,
            "checkpoint_size": cp.size,
            "entry_index": self.verified.entry_index,
            "recorded_at": self.verified.recorded_at,
            "signature_checked": self.verified.signed,
            "consistent_with": self.consistent,
            "online": self.online,
        }


def check_proofs(
    entries: Mapping[str, LockEntry],
    home: Path,
    *,
    url: str | None = None,
    vkey: str | None = None,
    lock_path: Path,
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[str, ProofCheck]:
    """Verify every ``publicLog`` member of ``entries`` (``lock --check``).

    Raises :class:`LockfileError` (exit 2, one line naming the server) for a proof that
    does not verify or that the log contradicts."""
    from toolpin.core.render import visible
    from toolpin.evidence import LogProblem
    from toolpin.evidence.lookup import policy_of
    from toolpin.evidence.proofs import LogProof, consistent_now, verify_offline

    log = settings(home, url=url, vkey=vkey)
    key = log.key_text() if log is not None else None
    policy = policy_of(log.ref()) if log is not None else None
    proofs: dict[str, LogProof] = {}
    verified: dict[str, Verified] = {}
    for name, entry in sorted(entries.items()):
        if PUBLIC_LOG not in entry.extra:
            continue
        try:
            proof = LogProof.from_json(entry.extra[PUBLIC_LOG])
            verified[name] = verify_offline(
                proof, entry.snapshot.surface_hash(), vkey=key, policy=policy
            )
        except LogProblem as exc:
            raise _unusable(lock_path, name, exc.message) from None
        proofs[name] = proof
    if not proofs:
        return {}
    if log is None:
        return {name: ProofCheck(name, v) for name, v in verified.items()}
    try:
        current = consistent_now(
            log.ref(), [p.checkpoint for p in proofs.values()], home=home, timeout=timeout
        )
    except LogProblem as exc:
        if exc.kind in ("fork", "rollback", "distrusted"):
            names = ", ".join(repr(visible(n)) for n in proofs)
            what = "cannot vouch for" if exc.kind == "distrusted" else "contradicts"
            raise LockfileError(
                f"{lock_path}: the public log {what} the proofs of {names}: {visible(exc.message)}",
                advice=exc.advice,
            ) from None
        why = f"consistency with the log not proven: {visible(exc.message)}"
        return {name: ProofCheck(name, v, online=why) for name, v in verified.items()}
    return {name: ProofCheck(name, v, consistent=current.size) for name, v in verified.items()}


def _unusable(lock_path: Path, name: str, why: str) -> LockfileError:
    from toolpin.core.render import visible

    return LockfileError(
        f"{lock_path}: server {visible(name)!r}: {visible(why)}",
        advice="The lock is unusable; re-create it with `toolpin lock --log URL --vkey FILE`.",
    )


__all__ = ["ProofCheck", "Recorder", "check_proofs"]
