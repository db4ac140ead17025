"""Fixed rules that label a change for triage. Labels never decide anything.

Every change blocks (the decision is a hash comparison). Labels only help a person see
at a glance what kind of change it is: a new tool, a new field, a new instruction aimed at
the model, text about secrets, a new link, hidden characters, a flipped permission hint,
or wording only. Each label has a stable ``key`` (the only part ever sent to an MCP
client), a ``severity`` (high, medium, low) and a human ``text`` for terminals (already
passed through :func:`toolpin.core.render.visible`).

The text signals compare *counts* of matches in the old and the new text: a signal fires
when the new text has more matches than the old one, so replacing one URL with another is
not a "new link". They run over the canonical JSON of the whole definition (descriptions at
any depth, titles, enums, parameter descriptions) or over the instructions text.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from toolpin.core.canonical import JSONValue
from toolpin.core.render import clip, visible

if TYPE_CHECKING:
    from toolpin.core.schemadiff import SchemaFinding

HIGH: Final = "high"
MEDIUM: Final = "medium"
LOW: Final = "low"
_RANK: Final = {HIGH: 0, MEDIUM: 1, LOW: 2}


@dataclass(frozen=True, slots=True)
class Label:
    """One triage label."""

    key: str
    severity: str
    text: str


def sort_labels(labels: Iterable[Label]) -> tuple[Label, ...]:
    """Stable sort by severity (high first); keeps the rule order within a severity."""
    unique: dict[str, Label] = {}
    for label in labels:
        unique.setdefault(label.key, label)
    return tuple(sorted(unique.values(), key=lambda lab: _RANK[lab.severity]))


def level(labels: Sequence[Label]) -> str:
    """The severity of an item: that of its first (most severe) label."""
    return labels[0].severity if labels else LOW


# --------------------------------------------------------------------------- text signals

_VERBS = r"(?:pass|send|forward|upload|include|attach|post)"
_OBJECTS = (
    r"(?:contents?|file|notes|conversation|history|context|messages?|keys?|tokens?|credentials?)"
)
_INSTRUCTION: Final = re.compile(
    r"\b(?:"
    r"ignore (?:all|any|the|previous)"
    r"|before (?:calling|using|running|you)"
    r"|you (?:must|should|need to)"
    r"|must (?:always|never|first|include|read|send|pass)"
    r"|always (?:include|send|pass|read|call|attach)"
    r"|never (?:tell|mention|reveal|ask)"
    r"|do not (?:tell|mention|inform|reveal|ask)"
    r"|don'?t (?:tell|mention|reveal|ask)"
    r"|without (?:telling|asking|informing)"
    r"|system prompt"
    r"|instead of the user"
    rf"|{_VERBS}\b[^.]{{0,60}}?\b{_OBJECTS}\b"
    r")"
    r"|</?important>",
    re.IGNORECASE,
)
_SECRETS: Final = re.compile(
    r"~/|\$HOME|%USERPROFILE%|/home/[a-z_]"
    r"|\.ssh\b|\bid_rsa\b|\bid_ed25519\b|\.env\b|\.aws\b|\.kube\b|\.npmrc|\.netrc"
    r"|\bcredentials?\b|\bpasswords?\b|\bpasswd\b|\bsecret|\bprivate key"
    r"|\bapi[_\- ]?keys?\b|\baccess[_\- ]?tokens?\b"
    r"|\bbearer\b|\bseed phrase\b|\bwallet\b",
    re.IGNORECASE,
)
_LINK: Final = re.compile(
    r"https?://[^\s\"'<>\\]+"
    r"|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b"
    r"|\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b",
    re.IGNORECASE,
)
_HIDDEN: Final = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u061c\u007f-\u009f\u00ad"
    "\ufe00-\ufe0f\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
    # a control character as canonical JSON escapes it, not preceded by an escaped backslash
    r"|(?<!\\)(?:\\\\)*\\u00[01][0-9a-fA-F]"
    r"|<!--"
    r"|[A-Za-z0-9+/]{48,}={0,2}"
)

_SIGNALS: Final = (
    (_INSTRUCTION, Label("instruction", HIGH, "New instruction to the model")),
    (_SECRETS, Label("secrets", HIGH, "Mentions secrets or private files")),
    (_LINK, Label("link", HIGH, "New link or address")),
    (_HIDDEN, Label("hidden", HIGH, "Hidden or unusual characters")),
)


# Each signal's gate: a test every match needs, run on a text that is all ASCII (in an
# ASCII text a case-blind match of an ASCII pattern is a match of the lower-cased text).
# A closed gate means no match, so the pattern does not run; an open one runs it. A text
# with other characters always runs every pattern (case folding maps some of them onto
# ASCII letters: "ſ" matches "s", "K" matches "k").
_INSTRUCTION_NEEDLES: Final = (
    "ignore ", "before ", "you ", "must ", "always ", "never ", "do not ", "don",
    "without ", "system prompt", "instead of the user",
    "pass", "send", "forward", "upload", "include", "attach", "post", "important>",
)  # fmt: skip
_SECRETS_NEEDLES: Final = (
    "~/", "$home", "%userprofile%", "/home/", ".ssh", "id_rsa", "id_ed25519", ".env",
    ".aws", ".kube", ".npmrc", ".netrc", "credential", "password", "passwd", "secret",
    "private key", "api", "access", "bearer", "seed phrase", "wallet",
)  # fmt: skip
_DIGIT_DOT: Final = re.compile(r"[0-9]\.[0-9]")
_ASCII_CONTROL: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BASE64_RUN: Final = b"A" * 48
_BASE64_CHARS: Final = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
)
_BASE64_MARK: Final = bytes(0x41 if c in _BASE64_CHARS else 0x2E for c in range(256))
"""A table for :meth:`bytes.translate`: "A" for a base64 character, "." for any other."""


def _gates(text: str) -> tuple[bool, ...]:
    """Which signals can match the ASCII ``text`` (see the gates above)."""
    low = text.lower()
    return (
        any(map(low.__contains__, _INSTRUCTION_NEEDLES)),
        any(map(low.__contains__, _SECRETS_NEEDLES)),
        "@" in text or "http" in low or _DIGIT_DOT.search(text) is not None,
        "\\u00" in text
        or "<!--" in text
        or _ASCII_CONTROL.search(text) is not None
        or _BASE64_RUN in text.encode("ascii").translate(_BASE64_MARK),
    )


@functools.lru_cache(maxsize=256)
def _signal_counts(text: str) -> tuple[int, ...]:
    """How often each text signal matches ``text`` (kept for the texts seen last: a
    definition is the new side of one change and the old side of the next)."""
    if not text.isascii():
        return tuple(len(pattern.findall(text)) for pattern, _ in _SIGNALS)
    return tuple(
        len(pattern.findall(text)) if gate else 0
        for (pattern, _), gate in zip(_SIGNALS, _gates(text), strict=True)
    )


def text_signals(old: str, new: str) -> list[Label]:
    """The text labels that fire: more matches in ``new`` than in ``old``."""
    before, after = _signal_counts(old), _signal_counts(new)
    return [label for (_, label), a, b in zip(_SIGNALS, before, after, strict=True) if b > a]


# ----------------------------------------------------------------------------- structure

HINTS: Final = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _names(names: Iterable[str], limit: int = 6) -> str:
    shown = [clip(visible(n), 40) for n in names]
    if len(shown) > limit:
        return ", ".join(shown[:limit]) + f", … ({len(shown) - limit} more)"
    return ", ".join(shown)


def _hint(value: JSONValue) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "other"


def hint_changes(old: Mapping[str, JSONValue], new: Mapping[str, JSONValue]) -> list[str]:
    """``"readOnlyHint false to true"`` for each permission hint that differs."""
    old_ann = old.get("annotations")
    new_ann = new.get("annotations")
    old_ann = old_ann if isinstance(old_ann, dict) else {}
    new_ann = new_ann if isinstance(new_ann, dict) else {}
    out = []
    for hint in HINTS:
        a, b = old_ann.get(hint), new_ann.get(hint)
        if a != b or type(a) is not type(b):
            out.append(f"{hint} {_hint(a)} to {_hint(b)}")
    return out


def naming_label(key: str, severity: str, what: str, names: Sequence[str]) -> list[Label]:
    """``[Label(key, severity, "<what>: <names>")]`` (names made visible, clipped, at most
    six shown), or ``[]`` when ``names`` is empty."""
    return [Label(key, severity, f"{what}: {_names(names)}")] if names else []


def structural_labels(
    *,
    fields_added: Sequence[str] = (),
    fields_type_changed: Sequence[str] = (),
    fields_removed: Sequence[str] = (),
    arguments_added: Sequence[str] = (),
    output_changed: bool = False,
    hints: Sequence[str] = (),
) -> list[Label]:
    """Labels from the structural facts of a changed definition, in rule order."""
    labels = [
        *naming_label("new-field", HIGH, "New field", fields_added),
        *naming_label("field-type", MEDIUM, "Field type changed", fields_type_changed),
        *naming_label("field-removed", LOW, "Field removed", fields_removed),
        *naming_label("new-argument", HIGH, "New argument", arguments_added),
    ]
    if output_changed:
        labels.append(Label("output-schema", MEDIUM, "Output schema changed"))
    if hints:
        labels.append(Label("hints", HIGH, "Permission hint changed: " + ", ".join(hints)))
    return labels


WORDING_KEYWORDS: Final = frozenset({"description", "title"})
"""The members that hold human-language text: changing only these is "wording only"."""

_TIGHTENING: Final = frozenset(
    {
        "schema-required-added",
        "schema-enum-narrowed",
        "schema-enum-added",
        "schema-type-narrowed",
        "schema-constraint-tightened",
        "schema-additional-props-closed",
        "schema-branch-removed",
    }
)


def is_wording(finding: SchemaFinding) -> bool:
    """A schema finding that only changes human-language text (a description or title)."""
    return finding.kind == "keyword_changed" and finding.detail in WORDING_KEYWORDS


def schema_labels(findings: Sequence[SchemaFinding]) -> list[Label]:
    """Labels for the schema findings no field label covers, by effect.

    A finding that widens the schema is "Schema widened"; one whose class tightens it is
    "Schema tightened"; every other non-wording finding (reorders, annotations such as
    ``default`` or ``examples``, ``$schema``, ``$ref``, definitions, an undecidable
    change) is "Schema changed". Only description and title changes get no label here.
    """
    widened: list[str] = []
    tightened: list[str] = []
    other: list[str] = []
    for finding in findings:
        if is_wording(finding):
            continue
        place = finding.path or "(root)"
        if finding.kind.startswith("required_") and finding.detail:
            place = f"required {finding.detail}"
        if finding.widened:
            widened.append(place)
        elif finding.cls in _TIGHTENING:
            tightened.append(place)
        else:
            other.append(f"{place} ({finding.kind})")
    labels = []
    if widened:
        labels.append(Label("schema-widened", MEDIUM, f"Schema widened: {_names(widened)}"))
    if tightened:
        labels.append(Label("schema-tightened", LOW, f"Schema tightened: {_names(tightened)}"))
    if other:
        labels.append(Label("schema-changed", MEDIUM, f"Schema changed: {_names(other)}"))
    return labels


def member_label(members: Sequence[str]) -> Label:
    """Members other than the wording ones differ (``annotations``, ``_meta``, ``icons``...)."""
    return Label("member-changed", MEDIUM, f"Definition changed: {_names(members)}")


WORDING: Final = Label("wording", LOW, "Wording only")
REMOVED: Final = Label("removed", LOW, "Removed")
_NEW: Final = {
    "tool": Label("new-tool", HIGH, "New tool"),
    "prompt": Label("new-prompt", HIGH, "New prompt"),
    "resource": Label("new-resource", HIGH, "New resource"),
    "resource_template": Label("new-resource-template", HIGH, "New resource template"),
}


def added_label(kind: str) -> Label:
    """The label of a definition that was not in the pin."""
    return _NEW[kind]


def changed_labels(old_text: str, new_text: str, structural: Sequence[Label]) -> tuple[Label, ...]:
    """All labels of a changed item: text signals, then structure, else "wording only"."""
    labels = text_signals(old_text, new_text) + list(structural)
    return sort_labels(labels or [WORDING])


def rename_label(other: str) -> Label:
    """A removed and an added definition that are near-identical."""
    return Label("possible-rename", MEDIUM, f"Possible rename: {clip(visible(other), 60)}")


RENAME_SIMILARITY: Final = 0.9


def similar(old_text: str, new_text: str) -> bool:
    """True when two canonical definitions (names removed) are near-identical."""
    if old_text == new_text:
        return True
    longest = max(len(old_text), len(new_text))
    if longest == 0 or abs(len(old_text) - len(new_text)) / longest > 1 - RENAME_SIMILARITY:
        return False
    matcher = difflib.SequenceMatcher(a=old_text, b=new_text, autojunk=False)
    return matcher.quick_ratio() >= RENAME_SIMILARITY and matcher.ratio() >= RENAME_SIMILARITY
