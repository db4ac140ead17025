"""``toolpin skills pin``, ``check``, ``review`` and ``approve`` as library calls.

:func:`survey` reads every skill folder asked for and compares each with its pin; a
folder that cannot be read stops everything with its one-line reason (exit 2) before
anything is written. :func:`pin` records the skills that have no pin yet (a changed
skill is never re-pinned by ``pin``: that is :func:`approve`'s, after a review).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from toolpin.core.labels import Label
from toolpin.errors import InputError
from toolpin.skills.diff import SkillSide, labels
from toolpin.skills.locate import SkillRef
from toolpin.skills.store import SkillPin, SkillStore
from toolpin.skills.tree import SkillTree, read_tree

Status = Literal["match", "changed", "new", "pinned", "approved"]
"""``match`` (as pinned), ``changed``, ``new`` (no pin yet), ``pinned`` (by ``pin``
now), ``approved`` (by ``approve`` now)."""
NOT_OK: Final[frozenset[Status]] = frozenset({"changed", "new"})


@dataclass(frozen=True)
class SkillOutcome:
    """One skill compared with its pin."""

    ref: SkillRef
    status: Status
    tree: SkillTree
    pin: SkillPin | None
    labels: tuple[Label, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status not in NOT_OK


def side(tree: SkillTree) -> SkillSide:
    """What :mod:`toolpin.skills.diff` compares."""
    return SkillSide(tree.files, tree.texts, tree.document)


def compare(ref: SkillRef, tree: SkillTree, pin: SkillPin | None) -> SkillOutcome:
    """One skill's outcome."""
    if pin is None:
        return SkillOutcome(ref, "new", tree, None, labels(None, side(tree)))
    if pin.tree.digest == tree.digest:
        return SkillOutcome(ref, "match", tree, pin)
    return SkillOutcome(ref, "changed", tree, pin, labels(side(pin.tree), side(tree)))


def survey(refs: Sequence[SkillRef], store: SkillStore) -> list[SkillOutcome]:
    """Every skill of ``refs`` read and compared with its pin."""
    trees = [(ref, read_tree(ref.path, name=ref.name)) for ref in refs]
    return [compare(ref, tree, store.read(ref.key)) for ref, tree in trees]


def pin(refs: Sequence[SkillRef], store: SkillStore) -> list[SkillOutcome]:
    """Pin every skill of ``refs`` that has no pin; the others are compared."""
    out: list[SkillOutcome] = []
    with store.locked():
        for outcome in survey(refs, store):
            if outcome.status == "new":
                _record(store, outcome, "skill-pin")
                outcome = SkillOutcome(outcome.ref, "pinned", outcome.tree, None, outcome.labels)
            out.append(outcome)
    return out


def approve(
    refs: Sequence[SkillRef], store: SkillStore, *, expect: str | None = None
) -> list[SkillOutcome]:
    """Record the current state of every new or changed skill of ``refs``.

    ``expect`` (a prefix of 8+ hex of the tree digest ``review`` printed) approves only
    when exactly that state is on disk now, so what is approved is what was reviewed."""
    out: list[SkillOutcome] = []
    with store.locked():
        outcomes = survey(refs, store)
        if expect is not None:
            waiting = [o for o in outcomes if not o.ok]
            wanted = expect.lower()
            if (
                len(wanted) < 8
                or len(waiting) != 1
                or not waiting[0].tree.digest.startswith(wanted)
            ):
                found = ", ".join(o.tree.digest[:16] for o in waiting) or "nothing to approve"
                raise ChangedSinceReview(
                    f"the skill on disk is not the one you reviewed (expected {expect[:16]}, "
                    f"found {found})",
                    advice="Review it again: toolpin skills review",
                )
        for outcome in outcomes:
            if outcome.ok:
                out.append(outcome)
                continue
            _record(store, outcome, "skill-approve")
            out.append(
                SkillOutcome(outcome.ref, "approved", outcome.tree, outcome.pin, outcome.labels)
            )
    return out


class ChangedSinceReview(InputError):
    """``approve --expect`` found another state than the one reviewed (exit 2)."""


def _record(store: SkillStore, outcome: SkillOutcome, event: str) -> None:
    fields: dict[str, object] = {
        "tree": outcome.tree.digest,
        "labels": [lab.key for lab in outcome.labels],
    }
    if outcome.pin is not None:
        fields["previous"] = outcome.pin.tree.digest
    store.write(outcome.ref.key, outcome.ref.name, outcome.tree, event=event, fields=fields)
