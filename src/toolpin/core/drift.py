"""What changed between a pinned snapshot and an observed one, explained.

The verdict is a hash comparison: a definition is unchanged if and only if its hash
matches. Everything else here explains a difference to a person: a description diff,
schema findings (:mod:`toolpin.core.schemadiff`), member changes, identity notes and
triage labels (:mod:`toolpin.core.labels`). A hash difference is never left unexplained:
if no rule says more, the item reports which members differ.

Pure core: no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Literal

from toolpin.core import labels as lab
from toolpin.core.canonical import JSONValue, canonical_json
from toolpin.core.labels import Label
from toolpin.core.render import clip, visible
from toolpin.core.snapshot import KINDS, Definition, Identity, Kind, Listing, Snapshot

if TYPE_CHECKING:
    from toolpin.core.schemadiff import SchemaFinding

Status = Literal["added", "removed", "changed"]
"""What happened to a definition (or a member, or the whole outputSchema)."""

ADDED: Final = "added"
REMOVED: Final = "removed"
CHANGED: Final = "changed"

# Members with their own detailed rules; every other member gets a MemberChange.
_DETAILED: Final = {
    Kind.TOOL: ("description", "inputSchema", "outputSchema", "annotations"),
    Kind.PROMPT: ("description", "arguments"),
    Kind.RESOURCE: ("description",),
    Kind.TEMPLATE: ("description",),
}


@dataclass(frozen=True, slots=True)
class MemberChange:
    """A member of a definition that was added, removed or changed.

    ``detail`` is a short human text, already made visible (safe for a terminal).
    """

    member: str
    change: Status
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One definition added, removed or changed."""

    kind: Kind
    key: str
    status: Status
    old: Definition | None = None
    new: Definition | None = None
    description_diff: tuple[str, ...] = ()
    input_findings: tuple[SchemaFinding, ...] = ()
    output_findings: tuple[SchemaFinding, ...] = ()
    output_event: Literal["added", "removed"] | None = None
    """``"added"`` / ``"removed"`` when the whole outputSchema appeared or disappeared."""
    annotations_changed: bool = False
    members: tuple[MemberChange, ...] = ()
    labels: tuple[Label, ...] = ()

    @property
    def description_changed(self) -> bool:
        """True when the description text differs."""
        return bool(self.description_diff)

    @property
    def widened(self) -> bool:
        """The input schema now accepts more than the pin."""
        return any(f.widened for f in self.input_findings)

    @property
    def output_widened(self) -> bool:
        """The output schema may now produce more than the pin."""
        return any(f.widened for f in self.output_findings)

    @property
    def level(self) -> str:
        """Severity of the item: its most severe label."""
        return lab.level(self.labels)

    @property
    def label_keys(self) -> list[str]:
        """The label keys (the only part of a change ever sent to an MCP client)."""
        return [x.key for x in self.labels]

    @property
    def display_name(self) -> str:
        """``weather``, ``prompt summarise``, ``resource file:///a`` (raw, not escaped)."""
        if self.kind is Kind.TOOL:
            return self.key
        return f"{self.kind.value.replace('_', ' ')} {self.key}"


@dataclass(frozen=True, slots=True)
class InstructionsChange:
    """The server's instructions differ from the pinned ones (``None``: no instructions)."""

    old: str | None
    new: str | None
    labels: tuple[Label, ...]


@dataclass(frozen=True, slots=True)
class IdentityReport:
    """Server identity, compared as mcp-tool-pin-check does: only a new name is drift."""

    pinned: Identity | None
    current: Identity | None

    @property
    def pinned_known(self) -> bool:
        """Whether the pin recorded an identity at all."""
        return self.pinned is not None

    @property
    def identity_added(self) -> bool:
        """No identity was pinned and the listing has one (information)."""
        return self.pinned is None and self.current is not None

    @property
    def identity_removed(self) -> bool:
        """An identity was pinned and the listing has none (information)."""
        return self.pinned is not None and self.current is None

    def _both(self) -> tuple[Identity, Identity] | None:
        """The pinned and current identity, when there are both."""
        if self.pinned is None or self.current is None:
            return None
        return self.pinned, self.current

    @property
    def name_changed(self) -> bool:
        """A different ``serverInfo.name`` behind the same pin: drift."""
        both = self._both()
        return both is not None and both[0].name != both[1].name

    @property
    def version_changed(self) -> bool:
        """A new server version (information)."""
        both = self._both()
        return both is not None and both[0].version != both[1].version

    @property
    def protocol_changed(self) -> bool:
        """A different (or added, or dropped) protocol version (information)."""
        both = self._both()
        return both is not None and both[0].protocol_version != both[1].protocol_version


@dataclass(frozen=True, slots=True)
class Drift:
    """Everything that differs between a pin and an observation."""

    changes: tuple[ItemChange, ...]
    unchanged: Mapping[Kind, tuple[str, ...]]
    instructions: InstructionsChange | None
    identity: IdentityReport
    not_checked: tuple[str, ...] = ()
    """Parts the pin has but the observation lacks (or the reverse), so not compared."""
    compared: tuple[Kind, ...] = field(default=KINDS)

    @property
    def ok(self) -> bool:
        """No definition, instruction or server-name change."""
        return not self.changes and self.instructions is None and not self.identity.name_changed

    def of_kind(self, kind: Kind, status: Status | None = None) -> list[ItemChange]:
        """Changes of one kind, optionally of one status."""
        return [
            c for c in self.changes if c.kind is kind and (status is None or c.status == status)
        ]

    def summary_items(self) -> list[tuple[str, tuple[Label, ...]]]:
        """``(display name, labels)`` per changed thing, most severe first."""
        items: list[tuple[str, tuple[Label, ...]]] = [
            (c.display_name, c.labels) for c in self.changes
        ]
        if self.instructions is not None:
            items.append(("server instructions", self.instructions.labels))
        if self.identity.name_changed:
            items.append(("server name", (Label("server-name", lab.HIGH, "Server name changed"),)))
        return sorted(items, key=lambda item: lab._RANK[lab.level(item[1])])


# ------------------------------------------------------------------------------- comparing


def compare(pinned: Snapshot, observed: Snapshot) -> Drift:
    """Compare an observation with the pin. Listings unknown on either side are skipped."""
    changes: list[ItemChange] = []
    unchanged: dict[Kind, tuple[str, ...]] = {}
    not_checked: list[str] = []
    compared: list[Kind] = []
    for kind in KINDS:
        old, new = pinned.listing(kind), observed.listing(kind)
        if old is None and new is None:
            continue
        if old is None or new is None:
            side = "pinned" if new is None else "observed"
            not_checked.append(f"{kind.plural} (only {side})")
            continue
        compared.append(kind)
        kind_changes, same = compare_listings(kind, old, new)
        changes.extend(kind_changes)
        unchanged[kind] = same
    instructions = None
    if pinned.instructions_known and observed.instructions_known:
        if pinned.instructions != observed.instructions:
            instructions = instructions_change(pinned.instructions, observed.instructions)
    elif pinned.instructions_known != observed.instructions_known:
        side = "pinned" if pinned.instructions_known else "observed"
        not_checked.append(f"instructions (only {side})")
    return Drift(
        changes=tuple(changes),
        unchanged=unchanged,
        instructions=instructions,
        identity=IdentityReport(pinned=pinned.identity, current=observed.identity),
        not_checked=tuple(not_checked),
        compared=tuple(compared),
    )


def compare_listings(
    kind: Kind, old: Listing | Mapping[str, Definition], new: Listing | Mapping[str, Definition]
) -> tuple[list[ItemChange], tuple[str, ...]]:
    """Changes of one kind (added, removed, changed, each sorted by key) and the unchanged keys."""
    if old is new and isinstance(new, Listing):  # one listing against itself
        return [], tuple(sorted(d.key for d in new.items))
    old_map = old.by_key() if isinstance(old, Listing) else dict(old)
    new_map = new.by_key() if isinstance(new, Listing) else dict(new)
    added = sorted(k for k in new_map if k not in old_map)
    removed = sorted(k for k in old_map if k not in new_map)
    changed = sorted(k for k in new_map if k in old_map and new_map[k].hash != old_map[k].hash)
    same = tuple(sorted(k for k in new_map if k in old_map and new_map[k].hash == old_map[k].hash))
    renames = _renames(kind, [old_map[k] for k in removed], [new_map[k] for k in added])
    out: list[ItemChange] = []
    whole: tuple[tuple[Status, list[str]], ...] = ((ADDED, added), (REMOVED, removed))
    for status, keys in whole:
        for key in keys:
            if status == ADDED:
                # Every text rule runs over the whole new definition (as against nothing).
                signals = lab.text_signals("", _text_of(new_map[key]))
                first: tuple[Label, ...] = (lab.added_label(kind.value), *signals)
            else:
                first = (lab.REMOVED,)
            extra = (lab.rename_label(renames[key]),) if key in renames else ()
            out.append(
                ItemChange(
                    kind=kind,
                    key=key,
                    status=status,
                    old=old_map.get(key),  # None for an added key
                    new=new_map.get(key),  # None for a removed one
                    labels=lab.sort_labels((*first, *extra)),
                )
            )
    out.extend(explain_change(kind, old_map[key], new_map[key]) for key in changed)
    return out, same


_TEXTS: dict[tuple[int, Kind | None], tuple[Definition, str]] = {}
_TEXTS_KEPT: Final = 1024


def _memo(definition: Definition, without_key_of: Kind | None) -> str:
    """The canonical text of ``definition``'s value (or of it without ``without_key_of``'s
    key member), kept by identity for the definitions compared last: a version of a
    definition is the new side of one change and the old side of the next. The entry
    holds the definition, so its identity is not reused while kept; nothing is assumed of
    its hash (a legacy lockfile's digest is not of this text)."""
    slot = (id(definition), without_key_of)
    found = _TEXTS.get(slot)
    if found is not None and found[0] is definition:
        return found[1]
    value: JSONValue = definition.value
    if without_key_of is not None:
        key = without_key_of.key_member
        value = {k: v for k, v in definition.value.items() if k != key}
    text = canonical_json(value)
    if len(_TEXTS) >= _TEXTS_KEPT:
        _TEXTS.clear()
    _TEXTS[slot] = (definition, text)
    return text


def _text_of(definition: Definition) -> str:
    return _memo(definition, None)


def _without_key(kind: Kind, definition: Definition) -> str:
    return _memo(definition, kind)


def _renames(
    kind: Kind, removed: Sequence[Definition], added: Sequence[Definition]
) -> dict[str, str]:
    """Pairs of a removed and an added definition that look like a rename (both directions)."""
    if not removed or not added or len(removed) * len(added) > 2500:
        return {}
    out: dict[str, str] = {}
    added_texts = [(d, _without_key(kind, d)) for d in added]
    for old in removed:
        old_text = _without_key(kind, old)
        for new, new_text in added_texts:
            if new.key in out:
                continue
            if lab.similar(old_text, new_text):
                out[old.key] = new.key
                out[new.key] = old.key
                break
    return out


def _text(value: JSONValue) -> str:
    return value if isinstance(value, str) else ("" if value is None else canonical_json(value))


_DESCRIPTION_FILES: Final = ("description (pinned)", "description (current)")


def description_diff(old: JSONValue, new: JSONValue) -> tuple[str, ...]:
    """mcp-tool-pin-check's description diff: unified, one line of context (raw text)."""
    a, b = _text(old), _text(new)
    if a == b:
        return ()
    if "\n" not in a and "\n" not in b:  # one line each (most descriptions): one hunk
        pinned, current = _DESCRIPTION_FILES
        return (f"--- {pinned}", f"+++ {current}", "@@ -1 +1 @@", f"-{a}", f"+{b}")
    # Split on "\n" only: str.splitlines() also splits on U+2028, U+2029, U+0085 and
    # friends, which would hide a change between two of them.
    return tuple(
        difflib.unified_diff(
            a.split("\n"),
            b.split("\n"),
            *_DESCRIPTION_FILES,
            n=1,
            lineterm="",
        )
    )


def _schema(value: JSONValue) -> JSONValue:
    return {} if value is None else value


def _differ(old: JSONValue, new: JSONValue) -> bool:
    """``canonical_json(old) != canonical_json(new)``, without encoding the common cases
    (the same object, two strings, exactly one null)."""
    if old is new:
        return False
    if type(old) is str and type(new) is str:
        return old != new
    if old is None or new is None:  # only null encodes as null
        return True
    return canonical_json(old) != canonical_json(new)


def explain_change(kind: Kind, old: Definition, new: Definition) -> ItemChange:
    """Explain why two definitions with the same key have different hashes."""
    from toolpin.core.schemadiff import diff_schema  # only when something changed

    a, b = old.value, new.value
    desc = description_diff(a.get("description"), b.get("description"))
    input_findings: tuple[SchemaFinding, ...] = ()
    output_findings: tuple[SchemaFinding, ...] = ()
    output_event: Literal["added", "removed"] | None = None
    annotations_changed = False
    members: list[MemberChange] = []
    fields_added: list[str] = []
    fields_type: list[str] = []
    fields_removed: list[str] = []
    arguments_added: list[str] = []
    hints: list[str] = []
    other_findings: list[SchemaFinding] = []
    if kind is Kind.TOOL:
        if _differ(_schema(a.get("inputSchema")), _schema(b.get("inputSchema"))):
            input_findings = tuple(
                diff_schema(_schema(a.get("inputSchema")), _schema(b.get("inputSchema")))
            )
        old_out, new_out = a.get("outputSchema"), b.get("outputSchema")
        if old_out is None and new_out is not None:
            output_event = ADDED
        elif old_out is not None and new_out is None:
            output_event = REMOVED
        elif old_out is not None and _differ(old_out, new_out):
            output_findings = tuple(diff_schema(old_out, new_out, direction="output"))
        annotations_changed = _differ(a.get("annotations"), b.get("annotations"))
        hints = lab.hint_changes(a, b)
        for finding in input_findings:
            name = _property_name(finding.path)
            if finding.kind == "property_added" and name:
                fields_added.append(name)
            elif finding.kind == "property_removed" and name:
                fields_removed.append(name)
            elif finding.kind.startswith("type_") and finding.kind != "type_restated" and name:
                fields_type.append(name)
            else:
                other_findings.append(finding)
    elif kind is Kind.PROMPT:
        args_members, arguments_added = _argument_changes(a.get("arguments"), b.get("arguments"))
        members.extend(args_members)
    for member in sorted(set(a) | set(b)):
        if member == kind.key_member or member in _DETAILED[kind]:
            continue
        if member not in a:
            members.append(MemberChange(member, ADDED))
        elif member not in b:
            members.append(MemberChange(member, REMOVED))
        elif _differ(a[member], b[member]):
            members.append(MemberChange(member, CHANGED))
    explained = {
        "description": bool(desc),
        "inputSchema": bool(input_findings),
        "outputSchema": bool(output_findings) or output_event is not None,
        "annotations": annotations_changed,
        "arguments": any(m.member == "arguments" for m in members),
    }
    # e.g. "inputSchema": {} versus none, a null description versus "": no rule above
    # fired, yet the hash differs; say which member and how.
    for member in _DETAILED[kind]:
        if explained[member]:
            continue
        if (member in a) != (member in b):
            members.append(MemberChange(member, ADDED if member in b else REMOVED))
        elif member in a and _differ(a[member], b[member]):
            members.append(MemberChange(member, CHANGED, _shape_change(a[member], b[member])))
    old_text, new_text = _text_of(old), _text_of(new)
    structural = lab.structural_labels(
        fields_added=fields_added,
        fields_type_changed=fields_type,
        fields_removed=fields_removed,
        arguments_added=arguments_added,
        output_changed=output_event is not None
        or any(not lab.is_wording(f) for f in output_findings),
        hints=hints,
    )
    structural += lab.schema_labels(other_findings)
    non_wording = _non_wording_members(kind, a, b, members, annotations_changed)
    if non_wording:
        structural.append(lab.member_label(non_wording))
    change = ItemChange(
        kind=kind,
        key=new.key,
        status=CHANGED,
        old=old,
        new=new,
        description_diff=desc,
        input_findings=input_findings,
        output_findings=output_findings,
        output_event=output_event,
        annotations_changed=annotations_changed,
        members=tuple(members),
        labels=lab.changed_labels(old_text, new_text, structural),
    )
    if not (
        desc or input_findings or output_findings or output_event or annotations_changed or members
    ):
        # Same members, no rule fired: still say something (never an unexplained change).
        change = _replace_members(change, (MemberChange("definition", CHANGED, "representation"),))
    return change


def _without_wording(value: JSONValue) -> JSONValue:
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in lab.WORDING_KEYWORDS}
    return value


def _non_wording_members(
    kind: Kind,
    a: Mapping[str, JSONValue],
    b: Mapping[str, JSONValue],
    members: Sequence[MemberChange],
    annotations_changed: bool,
) -> list[str]:
    """Members that differ in more than human-language text (and have no label of their own).

    The schemas have their own rules; a tool's ``title``, an annotation ``title`` and a
    prompt argument's ``description``/``title`` are wording; permission hints and new
    arguments are labelled elsewhere. Anything else that differs is named.
    """
    out: list[str] = []
    if annotations_changed:
        old_ann, new_ann = a.get("annotations"), b.get("annotations")
        rest_old = {k: v for k, v in _mapping(old_ann).items() if k not in lab.HINTS}
        rest_new = {k: v for k, v in _mapping(new_ann).items() if k not in lab.HINTS}
        shape_changed = isinstance(old_ann, dict) != isinstance(new_ann, dict)
        if shape_changed or canonical_json(_without_wording(rest_old)) != canonical_json(
            _without_wording(rest_new)
        ):
            out.append("annotations")
    for member in members:
        if member.member in lab.WORDING_KEYWORDS:
            continue
        if member.member == "arguments" and kind is Kind.PROMPT:
            if member.change == ADDED and member.detail:
                continue  # "New argument"
            if member.change == CHANGED and member.detail:
                old_arg = _argument(a.get("arguments"), member.detail)
                new_arg = _argument(b.get("arguments"), member.detail)
                if canonical_json(_without_wording(old_arg)) == canonical_json(
                    _without_wording(new_arg)
                ):
                    continue
        if member.member not in out:
            out.append(member.member)
    return out


def _mapping(value: JSONValue) -> dict[str, JSONValue]:
    return value if isinstance(value, dict) else {}


def _argument(arguments: JSONValue, name: str) -> JSONValue:
    if isinstance(arguments, list):
        for arg in arguments:
            if isinstance(arg, dict) and visible(str(arg.get("name"))) == name:
                return arg
    return None


def _json_type(value: JSONValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "empty string" if value == "" else "string"
    return "array" if isinstance(value, list) else "object"


def _shape_change(old: JSONValue, new: JSONValue) -> str:
    before, after = _json_type(old), _json_type(new)
    return f"{before} -> {after}" if before != after else f"{before} value"


def _replace_members(change: ItemChange, members: tuple[MemberChange, ...]) -> ItemChange:
    return replace(change, members=members)


def _property_name(path: str) -> str | None:
    # "properties.limit" -> "limit"; nested "properties.a.properties.b" -> "a.b"
    parts = path.split(".")
    names = [parts[i + 1] for i, part in enumerate(parts[:-1]) if part == "properties"]
    return ".".join(names) if names else None


def _argument_changes(old: JSONValue, new: JSONValue) -> tuple[list[MemberChange], list[str]]:
    def index(value: JSONValue) -> dict[str, JSONValue] | None:
        if value is None:
            return {}
        if not isinstance(value, list):
            return None
        out: dict[str, JSONValue] = {}
        for arg in value:
            if not isinstance(arg, dict) or not isinstance(arg.get("name"), str):
                return None
            out[arg["name"]] = arg
        return out

    a, b = index(old), index(new)
    if a is None or b is None:
        changed = canonical_json(old) != canonical_json(new)
        return ([MemberChange("arguments", CHANGED)] if changed else []), []
    members: list[MemberChange] = []
    added = sorted(n for n in b if n not in a)
    for name in added:
        arg = b[name]
        req = isinstance(arg, dict) and arg.get("required") is True
        members.append(
            MemberChange("arguments", ADDED, visible(name) + (" (required)" if req else ""))
        )
    members.extend(
        MemberChange("arguments", REMOVED, visible(name)) for name in sorted(set(a) - set(b))
    )
    members.extend(
        MemberChange("arguments", CHANGED, visible(name))
        for name in sorted(n for n in a if n in b)
        if canonical_json(a[name]) != canonical_json(b[name])
    )
    if not members and canonical_json(old) != canonical_json(new):
        members.append(MemberChange("arguments", CHANGED, "order"))
    return members, added


def instructions_change(old: str | None, new: str | None) -> InstructionsChange:
    """Label a change of the server's instructions."""
    labels = lab.sort_labels(lab.text_signals(old or "", new or "") or [lab.WORDING])
    return InstructionsChange(old=old, new=new, labels=labels)


def change_keys(drift: Drift) -> list[dict[str, Any]]:
    """``[{name, kinds}]`` with label keys only: the part of a drift safe to store or send.

    Names are made visible (escapes for control, bidi and tag characters) and clipped,
    since a name is the one piece of server text a client is shown.
    """
    out: list[dict[str, Any]] = [
        {"name": clip(visible(c.display_name), 128), "kinds": c.label_keys} for c in drift.changes
    ]
    if drift.instructions is not None:
        out.append(
            {"name": "server instructions", "kinds": [x.key for x in drift.instructions.labels]}
        )
    if drift.identity.name_changed:
        out.append({"name": "server name", "kinds": ["server-name"]})
    return out
