"""Put the toolpin proxy in front of every local MCP server of a client config, and back.

A wrapped stdio entry keeps every other key; its command becomes the launcher (the
absolute path of the installed ``toolpin``, or ``uvx toolpin@<version>``) and its
arguments ``run --name <entry>@<client>[:<project>] [--lock F] -- <original command>
<original args>``: a name no other client or project shares
(:mod:`toolpin.clients.naming`), by which the proxy finds the server's pin.

Planning reads and computes everything (nothing is written); :func:`apply` backs each
file up under ``toolpin_home()/backups`` and replaces it atomically, under a lock, and
only when the file still holds the bytes the plan was made from.

Byte-for-byte undo: the edit inserts text and moves the original command token; unwrap
deletes the inserted text and moves the token back. The one thing a file cannot show is
whether ``args`` existed before the wrap added it; that fact is kept in a small journal
(``toolpin_home()/wrap-journal.json``) so unwrap can remove the member again.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from toolpin.clients.documents import ConfigDocument, Entry, open_document, remote_headers
from toolpin.clients.launcher import (
    Launcher,
    check_launcher,
    installed_launcher,
    uvx_launcher,
)
from toolpin.clients.locations import ConfigLocation
from toolpin.clients.naming import wrapped_name
from toolpin.core.render import visible
from toolpin.errors import ConfigError, PackageError
from toolpin.packages.spec import detect_package, runner_name
from toolpin.util.fs import atomic_write, ensure_private_dir, locked, read_input, toolpin_home

MAX_CONFIG_BYTES = 32 * 1024 * 1024
Mode = Literal["wrap", "unwrap"]
Action = Literal["protect", "unprotect", "add-lock", "skip"]

_TOOLPIN_SPEC = re.compile(r"toolpin(@[^\s]+|==[^\s]+)?")
_MCP_PIN_SPEC = re.compile(r"mcp-pin(@.*)?")


# ---- launcher ------------------------------------------------------------------------


def proxy_args(
    name: str, lock: str | None = None, *, only_locked: bool = False, first: str | None = None
) -> list[str]:
    """``run --name <name> [--lock F [--only-locked]]``, then ``--`` unless not needed.

    ``first`` is the server command's first word. toolpin's options end at the first word
    that is not an option, so ``--`` is left out when that word cannot be read as one: some
    clients (the MCP Inspector's config mode) drop or misread a ``--`` argument.
    """
    flags = ["--lock", lock] if lock else []
    if lock and only_locked:
        flags.append("--only-locked")
    separator = [] if first and not first.startswith("-") else ["--"]
    return ["run", "--name", name, *flags, *separator]


RUN_VALUE_OPTIONS: Final = frozenset(
    {
        "--name",
        "--timeout",
        "--lock",
        "--url",
        "--header",
        "--transport",
        "--log",
        "--vkey",
        "--accept-public-after",
    }
)
"""Options of ``toolpin run`` that take a value (the click-free parser in ``__main__``)."""
RUN_FLAGS: Final = frozenset({"--quiet", "--only-locked", "--require-public"})


# ---- recognising wrapped entries -----------------------------------------------------


@dataclass(frozen=True)
class WrappedForm:
    """An entry already behind a proxy: toolpin's own forms, or mcp-pin's."""

    by: Literal["toolpin", "mcp-pin"]
    run_index: int
    options_end: int | None
    """Where the proxy's own options end: the ``--``, or the server command's first word
    (``None`` when the form cannot be read)."""
    inner_start: int | None
    """Where the server's own command starts."""
    flags: tuple[str, ...]

    def flag_value(self, flag: str) -> str | None:
        for i, arg in enumerate(self.flags):
            if arg == flag and i + 1 < len(self.flags):
                return self.flags[i + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
        return None


def _toolpin_options_end(argv: Sequence[str], start: int) -> tuple[int | None, int | None]:
    """``(options_end, inner_start)`` of ``toolpin run`` options from ``argv[start]``,
    read as toolpin's own parser does: ``--`` ends them, else the first word that is not
    an option."""
    i = start
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return i, i + 1
        name = arg.partition("=")[0]
        if name in RUN_VALUE_OPTIONS:
            i += 1 if "=" in arg else 2
        elif arg in RUN_FLAGS:
            i += 1
        elif arg.startswith("-"):
            return None, None  # an option toolpin does not know: not a form we can read
        else:
            return i, i
    return None, None


def recognise_wrap(argv: Sequence[str]) -> WrappedForm | None:
    """How ``argv`` is wrapped, or ``None`` when it runs a server directly."""
    if not argv:
        return None
    runner = runner_name(argv[0])
    run_index: int | None = None
    by: Literal["toolpin", "mcp-pin"] = "toolpin"
    if runner == "toolpin" and len(argv) > 1 and argv[1] == "run":
        run_index = 1
    elif runner.startswith("python") or runner == "py":
        for i in range(1, min(len(argv) - 2, 4)):
            if argv[i] == "-m" and argv[i + 1] == "toolpin" and argv[i + 2] == "run":
                run_index = i + 2
                break
    elif runner in ("uvx", "uv", "pipx"):
        for i in range(1, min(len(argv) - 1, 8)):
            if _TOOLPIN_SPEC.fullmatch(argv[i]) and argv[i + 1] == "run":
                run_index = i + 1
                break
    if run_index is None:
        by = "mcp-pin"
        if runner == "mcp-pin":
            run_index = 0
        else:
            first_dd = argv.index("--") if "--" in argv else len(argv)
            run_index = next(
                (i for i in range(1, first_dd) if _MCP_PIN_SPEC.fullmatch(argv[i])), None
            )
    if run_index is None:
        return None
    if by == "toolpin":
        options_end, inner_start = _toolpin_options_end(argv, run_index + 1)
    else:
        dashdash = next((i for i in range(run_index + 1, len(argv)) if argv[i] == "--"), None)
        options_end = dashdash
        inner_start = None if dashdash is None else dashdash + 1
    end = options_end if options_end is not None else len(argv)
    return WrappedForm(by, run_index, options_end, inner_start, tuple(argv[run_index + 1 : end]))


def package_warning(argv: Sequence[str]) -> str | None:
    """A one-line warning when ``argv`` runs a registry package not held at one version."""
    try:
        ref = detect_package(argv)
    except PackageError as exc:
        return exc.message
    if ref is None or ref.pinned:
        return None
    if ref.ecosystem == "oci":
        return f"image {ref.name} is not pinned by digest, so it can change on any start"
    what = "newest version" if ref.requested in ("", "latest") else repr(ref.requested)
    return f"{ref.name}, {what}: not pinned, so its code can change on any start"


# ---- plans ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EntryPlan:
    name: str
    scope: str | None
    action: Action
    note: str | None = None
    """Why an entry is skipped ("remote server: ...", "already protected")."""
    warning: str | None = None
    """The package is not pinned (see :func:`package_warning`)."""
    offer_url: str | None = None
    """A remote server left alone because ``--remote`` was not given: its URL."""


@dataclass(frozen=True)
class FilePlan:
    location: ConfigLocation
    path: Path
    entries: tuple[EntryPlan, ...] = ()
    before: bytes = b""
    after: bytes = b""
    error: str | None = None
    journal_add: tuple[str, ...] = ()
    journal_remove: tuple[str, ...] = ()
    remote_add: tuple[tuple[str, str, str], ...] = ()
    """Remote entries wrapped: (journal key, original text, wrapped text)."""
    remote_remove: tuple[str, ...] = ()
    servers: int = 0
    """How many server entries (local or remote, wrapped or not) the file lists."""

    @property
    def changes(self) -> list[EntryPlan]:
        return [e for e in self.entries if e.action != "skip"]

    @property
    def changed(self) -> bool:
        return self.error is None and self.after != self.before


@dataclass(frozen=True)
class Plan:
    mode: Mode
    files: tuple[FilePlan, ...]
    searched: tuple[ConfigLocation, ...] = field(default=())

    @property
    def change_count(self) -> int:
        return sum(len(f.changes) for f in self.files if f.changed)

    def without_servers(self) -> list[FilePlan]:
        """The files read that list no MCP server at all (not an unreadable one)."""
        return [f for f in self.files if f.error is None and f.servers == 0]


NO_SERVERS: Final = "lists no MCP servers (mcpServers or servers)"
"""What ``wrap``/``unwrap`` say of a file they were pointed at that lists none, as
``lock`` does (:func:`toolpin.clients.config.load_config`)."""


def journal_key(path: Path, entry: Entry) -> str:
    return f"{path}\x00{json.dumps(list(entry.path), ensure_ascii=False)}"


def _read_config(location: ConfigLocation) -> tuple[Path, bytes, str] | FilePlan | None:
    path = Path(str(location.path))
    if not os.path.lexists(path):
        return None
    try:
        real = path.resolve()
        data = read_input(real, what="it", cap=MAX_CONFIG_BYTES, error=ConfigError)
    except (OSError, ConfigError) as exc:
        reason = exc.message if isinstance(exc, ConfigError) else exc.strerror or str(exc)
        return FilePlan(location, path, error=f"{reason}; left as it is")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return FilePlan(location, real, before=data, after=data, error="not UTF-8 text")
    return real, data, text


def _open(
    location: ConfigLocation, path: Path, data: bytes, text: str
) -> ConfigDocument | FilePlan:
    try:
        return open_document(text, location.dialect)
    except ConfigError as exc:
        kind = "TOML" if location.dialect == "codex" else "JSON"
        return FilePlan(
            location,
            path,
            before=data,
            after=data,
            error=f"not valid {kind} ({exc.message}); edit it by hand",
        )


def _documents(
    locations: Iterable[ConfigLocation], files: list[FilePlan]
) -> Iterator[tuple[ConfigLocation, Path, bytes, ConfigDocument]]:
    """Each location's config file, opened (with its bytes); a file that cannot be read or
    parsed is added to ``files`` as its :class:`FilePlan` instead, a missing one nowhere."""
    for location in locations:
        read = _read_config(location)
        if read is None or isinstance(read, FilePlan):
            if read is not None:
                files.append(read)
            continue
        path, data, text = read
        doc = _open(location, path, data, text)
        if isinstance(doc, FilePlan):
            files.append(doc)
            continue
        yield location, path, data, doc


def _edited(
    location: ConfigLocation,
    path: Path,
    data: bytes,
    doc: ConfigDocument,
    plans: list[EntryPlan],
    servers: int,
) -> FilePlan:
    """The plan of one file as ``doc`` now reads (``data``: its bytes before), ``servers``
    server entries in it; the caller adds what the journal should record."""
    return FilePlan(location, path, tuple(plans), data, doc.text().encode("utf-8"), servers=servers)


def plan_wrap(
    locations: Iterable[ConfigLocation],
    *,
    launcher: Launcher,
    lock: str | None = None,
    held: frozenset[str] = frozenset(),
    remote: bool | Callable[[Entry], bool] = False,
) -> Plan:
    """What ``toolpin wrap`` would change; reads files, writes nothing.

    ``remote`` (``--remote``, or a question per entry on a terminal) also puts the proxy
    in front of remote servers: ``{"url": ..., "headers": ...}`` becomes ``toolpin run
    --url ...`` (see :func:`remote_run_args`).

    ``lock`` (``--lock``) is written into entries of project files only. ``held`` names the
    servers whose package version that lock records (see :func:`check_lock_file`): the
    proxy runs them at that version, so they get no "not pinned" warning.
    """
    files: list[FilePlan] = []
    searched = tuple(locations)
    for location, path, data, doc in _documents(searched, files):
        file_lock = project_lock_arg(location, lock) if location.project and lock else None
        file_launcher = PROJECT_LAUNCHER if location.project else launcher
        plans: list[EntryPlan] = []
        journal_add: list[str] = []
        remote_add: list[tuple[str, str, str]] = []
        entries = list(doc.entries())
        for entry in entries:
            if entry.kind == "remote":
                wanted = remote(entry) if callable(remote) else remote
                plan, record = _wrap_remote(doc, entry, file_launcher, file_lock, wanted, location)
                plans.append(plan)
                if record is not None:
                    remote_add.append((journal_key(path, entry), *record))
                continue
            plan, added = _wrap_entry(doc, entry, file_launcher, file_lock, location)
            if file_lock is not None and entry.name in held and plan.warning is not None:
                plan = replace(plan, warning=None)
            plans.append(plan)
            if added:
                journal_add.append(journal_key(path, entry))
        edited = _edited(location, path, data, doc, plans, len(entries))
        files.append(replace(edited, journal_add=tuple(journal_add), remote_add=tuple(remote_add)))
    return Plan("wrap", tuple(files), searched)


PROJECT_LAUNCHER: Final = Launcher(("toolpin",))
"""Project files are committed and start on every teammate's machine: toolpin from PATH."""

WORKSPACE_VARIABLE: Final = {
    "project (VS Code)": "${workspaceFolder}",
    "project (Cursor)": "${workspaceFolder}",
}
"""Clients whose project config expands a variable naming the project folder."""


def project_dir_of(location: ConfigLocation) -> Path:
    """The project folder of a shared config (``.mcp.json``'s, or ``.vscode/``'s parent)."""
    path = Path(location.path)
    return path.parent.parent if path.parent.name in (".vscode", ".cursor") else path.parent


def project_lock_arg(location: ConfigLocation, lock: str) -> str:
    """The ``--lock`` value a committed config carries: the lock relative to the project,
    in the client's own variable for the project folder where it has one (VS Code and
    Cursor ``${workspaceFolder}``), else as a relative path that ``toolpin run`` looks up
    from the server's folder up to the project's root (:func:`toolpin.team.run.find_lock`).
    """
    project = project_dir_of(location).absolute()
    given = Path(lock)
    absolute = given if given.is_absolute() else Path.cwd() / given
    try:
        relative = absolute.resolve().relative_to(project.resolve()).as_posix()
    except ValueError:
        return str(absolute)  # outside the project: only an absolute path can name it
    variable = WORKSPACE_VARIABLE.get(location.client)
    return f"{variable}/{relative}" if variable else relative


def entry_run_name(location: ConfigLocation, entry: Entry) -> str:
    """The ``--name`` wrap writes for ``entry``: its key, qualified with the client and,
    for a project's entry, the project (:mod:`toolpin.clients.naming`)."""
    client, project = location.client, None
    if location.project:  # "project (VS Code)": the client in brackets, then the folder
        client = client.removeprefix("project (").removesuffix(")")
        project = str(project_dir_of(location).resolve())
    elif entry.scope is not None and entry.scope.startswith("project "):
        project = entry.scope.removeprefix("project ")
    elif client == "--config":  # a file named by hand: the file itself tells it apart
        client, project = "config", str(Path(location.path).resolve())
    return wrapped_name(entry.name, client, project)


def _wrap_entry(
    doc: ConfigDocument,
    entry: Entry,
    launcher: Launcher,
    lock: str | None,
    location: ConfigLocation,
) -> tuple[EntryPlan, bool]:
    if entry.kind != "stdio":
        return EntryPlan(entry.name, entry.scope, "skip", entry.reason), False
    form = recognise_wrap(entry.argv)
    if form is not None and form.by == "mcp-pin":
        return EntryPlan(
            entry.name,
            entry.scope,
            "skip",
            "wrapped by mcp-pin: run toolpin unwrap first, then toolpin wrap",
        ), False
    if form is not None:
        inner = entry.argv[form.inner_start :] if form.inner_start else ()
        warning = package_warning(inner)
        if lock and form.flag_value("--lock") is None and form.options_end is not None:
            doc.insert_args(entry, form.options_end, ["--lock", lock])
            return EntryPlan(entry.name, entry.scope, "add-lock", None, warning), False
        return EntryPlan(entry.name, entry.scope, "skip", "already protected", warning), False
    first = entry.argv[0] if entry.argv else None
    name = entry_run_name(location, entry)
    prefix = [*launcher.argv, *proxy_args(name, lock, first=first)]
    doc.wrap(entry, prefix)
    return EntryPlan(
        entry.name, entry.scope, "protect", None, package_warning(entry.argv)
    ), entry.shape == "split" and not entry.has_args


def plan_unwrap(
    locations: Iterable[ConfigLocation],
    *,
    journal: set[str] | None = None,
    remotes: dict[str, tuple[str, str]] | None = None,
) -> Plan:
    """What ``toolpin unwrap`` would change; reads files, writes nothing."""
    notes = journal if journal is not None else WrapJournal().load()
    remote_notes = remotes if remotes is not None else WrapJournal().load_remotes()
    files: list[FilePlan] = []
    searched = tuple(locations)
    for location, path, data, doc in _documents(searched, files):
        plans: list[EntryPlan] = []
        removed: list[str] = []
        remote_removed: list[str] = []
        entries = list(doc.entries())
        for entry in entries:
            form = recognise_wrap(entry.argv) if entry.kind == "stdio" else None
            if form is None:
                continue
            if form.by == "toolpin" and form.inner_start is None and form.flag_value("--url"):
                key = journal_key(path, entry)
                plan = _unwrap_remote(doc, entry, remote_notes.get(key))
                plans.append(plan)
                if plan.action == "unprotect":
                    remote_removed.append(key)
                continue
            start = form.inner_start
            if start is None or start >= len(entry.argv):
                plans.append(
                    EntryPlan(
                        entry.name,
                        entry.scope,
                        "skip",
                        "wrapped in a form toolpin does not recognise; left as it is",
                    )
                )
                continue
            key = journal_key(path, entry)
            doc.unwrap(entry, start, drop_args=key in notes)
            if key in notes:
                removed.append(key)
            plans.append(EntryPlan(entry.name, entry.scope, "unprotect"))
        edited = _edited(location, path, data, doc, plans, len(entries))
        files.append(
            replace(edited, journal_remove=tuple(removed), remote_remove=tuple(remote_removed))
        )
    return Plan("unwrap", tuple(files), searched)


# ---- remote servers ------------------------------------------------------------------

_ENV_FORMS = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_OTHER_VARS = re.compile(r"\$\{(?!env:[A-Za-z_]|input:|[A-Za-z_][A-Za-z0-9_]*\})[^}]*\}")
_REMOTE_MEMBERS = frozenset({"url", "serverUrl", "httpUrl", "headers", "type", "transport"})
_CODEX_REMOTE = frozenset({"url", "bearer_token_env_var", "http_headers", "env_http_headers"})


def remote_run_args(entry: Entry, dialect: str) -> tuple[list[str], str] | str:
    """``--url URL [--transport T] [--header 'K: V']...`` for a remote entry, and the
    transport; or why it cannot be wrapped (a string)."""
    value = entry.value if isinstance(entry.value, dict) else {}
    url = entry.url
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        return "remote server without an http(s) URL; left as it is"
    if "${" in url:
        return "its URL uses a variable; toolpin does not expand it. Edit it by hand"
    kind = value.get("type")
    if kind == "sse":
        transport = "sse"
    elif kind in ("http", "streamable-http", "streamableHttp") or "httpUrl" in value:
        transport = "streamable-http"
    else:
        transport = "auto"  # Streamable HTTP, falling back to HTTP+SSE (Gemini's "url")
    headers = remote_headers(value, dialect)
    if isinstance(headers, str):
        return f"{headers}; edit it by hand"
    args = ["--url", url]
    if transport != "auto":
        args += ["--transport", transport]
    for header in headers:
        name, _, v = header.partition(": ")
        if _OTHER_VARS.search(v):
            return (
                f"the header {visible(name)} uses a form toolpin does not expand; edit it by hand"
            )
        args += ["--header", header]
    return args, transport


def _wrap_remote(
    doc: ConfigDocument,
    entry: Entry,
    launcher: Launcher,
    lock: str | None,
    wanted: bool,
    location: ConfigLocation,
) -> tuple[EntryPlan, tuple[str, str] | None]:
    if not wanted:
        return EntryPlan(
            entry.name,
            entry.scope,
            "skip",
            "remote server: add --remote to protect it",
            offer_url=entry.url or "",
        ), None
    dialect = getattr(doc, "dialect", "codex")
    built = remote_run_args(entry, dialect)
    if isinstance(built, str):
        return EntryPlan(entry.name, entry.scope, "skip", built), None
    args, _ = built
    original = doc.entry_text(entry)
    if original is None:
        return EntryPlan(
            entry.name, entry.scope, "skip", "cannot find the entry's text; edit it by hand"
        ), None
    flags = ["--lock", lock] if lock else []
    name = entry_run_name(location, entry)
    argv = [*launcher.argv, "run", "--name", name, *flags, *args]
    value = entry.value if isinstance(entry.value, dict) else {}
    if dialect == "codex":
        wrapped = _codex_table(argv, value, original)
    else:
        wrapped = _json_entry(argv, value, dialect, doc, entry)
    doc.replace_entry_text(entry, original, wrapped)
    return EntryPlan(entry.name, entry.scope, "protect"), (original, wrapped)


def _json_entry(
    argv: list[str], value: Mapping[str, Any], dialect: str, doc: ConfigDocument, entry: Entry
) -> str:
    rest = {k: v for k, v in value.items() if k not in _REMOTE_MEMBERS}
    new: dict[str, Any]
    if dialect == "opencode":
        new = {"type": "local", "command": argv, **rest}
    elif dialect == "vscode":
        new = {"type": "stdio", "command": argv[0], "args": argv[1:], **rest}
    else:
        new = {"command": argv[0], "args": argv[1:], **rest}
    text = json.dumps(new, ensure_ascii=False, indent=2)
    indent = doc.indent_of(entry) if hasattr(doc, "indent_of") else ""
    return text.replace("\n", "\n" + indent)


def _codex_table(argv: list[str], value: Mapping[str, Any], original: str) -> str:
    import tomlkit

    rest = {k: v for k, v in value.items() if k not in _CODEX_REMOTE}
    table = tomlkit.table()
    table["command"] = argv[0]
    table["args"] = argv[1:]
    for k, v in rest.items():
        table[k] = v
    body = tomlkit.dumps(table)
    trailing = original[len(original.rstrip("\n")) :]
    return body.rstrip("\n") + (trailing or "\n")


def _unwrap_remote(
    doc: ConfigDocument, entry: Entry, recorded: tuple[str, str] | None
) -> EntryPlan:
    if recorded is None:
        return EntryPlan(
            entry.name,
            entry.scope,
            "skip",
            "a remote server toolpin has no record of wrapping; edit it by hand",
        )
    original, wrapped = recorded
    if doc.entry_text(entry) != wrapped:
        return EntryPlan(
            entry.name,
            entry.scope,
            "skip",
            "edited since toolpin wrapped it; edit it by hand",
        )
    doc.replace_entry_text(entry, wrapped, original)
    return EntryPlan(entry.name, entry.scope, "unprotect")


# ---- applying ------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    path: Path
    backup: Path


class WrapJournal:
    """Entries whose ``args`` member the wrap added (so unwrap can remove it again)."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = home or toolpin_home()
        self.path = self.home / "wrap-journal.json"

    def load(self) -> set[str]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return set()
        except (OSError, ValueError):
            return set()
        items = data.get("addedArgs", []) if isinstance(data, dict) else []
        return {i for i in items if isinstance(i, str)}

    def _data(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def load_remotes(self) -> dict[str, tuple[str, str]]:
        """Remote entries wrapped: key -> (original text, wrapped text)."""
        raw = self._data().get("remotes")
        out: dict[str, tuple[str, str]] = {}
        if isinstance(raw, dict):
            for key, value in raw.items():
                if (
                    isinstance(value, dict)
                    and isinstance(value.get("original"), str)
                    and isinstance(value.get("wrapped"), str)
                ):
                    out[key] = (value["original"], value["wrapped"])
        return out

    def update(
        self,
        add: Iterable[str],
        remove: Iterable[str],
        *,
        remote_add: Iterable[tuple[str, str, str]] = (),
        remote_remove: Iterable[str] = (),
    ) -> None:
        current = (self.load() | set(add)) - set(remove)
        remotes = self.load_remotes()
        for key, original, wrapped in remote_add:
            remotes[key] = (original, wrapped)
        for key in remote_remove:
            remotes.pop(key, None)
        body: dict[str, object] = {
            "about": "Config entries whose args member toolpin wrap added, and the text of "
            "remote entries toolpin wrap replaced; unwrap restores them.",
            "addedArgs": sorted(current),
        }
        if remotes:
            body["remotes"] = {
                k: {"original": o, "wrapped": w} for k, (o, w) in sorted(remotes.items())
            }
        ensure_private_dir(self.home)
        atomic_write(self.path, (json.dumps(body, indent=2) + "\n").encode(), mode=0o600)


def apply(plan: Plan, *, home: Path | None = None, now: datetime | None = None) -> list[Written]:
    """Back up and rewrite every changed file of ``plan``; nothing if any file moved on."""
    home = home or toolpin_home()
    ensure_private_dir(home)
    changed = [f for f in plan.files if f.changed]
    stamp = (now or datetime.now(UTC)).isoformat().replace(":", "-").replace(".", "-")
    written: list[Written] = []
    with locked(home / "wrap.lock"):
        for f in changed:
            try:
                current = f.path.read_bytes()
            except OSError:
                current = b""
            if current != f.before:
                raise ConfigError(
                    f"{f.path} changed since the plan was made; nothing was written",
                    advice="Run the command again.",
                )
        backups = ensure_private_dir(home / "backups")
        journal = WrapJournal(home)
        for f in changed:
            backup = backups / f"{f.path.name}.{stamp}.bak"
            n = 1
            while backup.exists():
                backup = backups / f"{f.path.name}.{stamp}-{n}.bak"
                n += 1
            try:
                atomic_write(backup, f.before, mode=0o600)
                atomic_write(f.path, f.after, mode=f.path.stat().st_mode & 0o7777)
            except OSError as exc:
                raise ConfigError(f"cannot write {f.path} ({exc.strerror or exc})") from None
            written.append(Written(f.path, backup))
            if f.journal_add or f.journal_remove or f.remote_add or f.remote_remove:
                journal.update(
                    f.journal_add,
                    f.journal_remove,
                    remote_add=f.remote_add,
                    remote_remove=f.remote_remove,
                )
    return written


def check_lock_file(lock: str, project_dir: Path) -> frozenset[str]:
    """Refuse a ``--lock`` file that is missing or not a valid toolpin lock (before any edit).

    A relative path is read from ``project_dir``, as the proxy reads it from the folder
    the client starts the server in. Returns the names of the servers whose package
    version the lock records (``run --lock`` holds them at it).
    """
    from toolpin.errors import LockfileError
    from toolpin.lockfile.native import read_lock

    path = Path(lock) if os.path.isabs(lock) else project_dir / lock
    if not path.is_file():
        raise ConfigError(
            f"cannot use {lock} (not found)", advice="Write it first with: toolpin lock"
        )
    try:
        servers = read_lock(path).servers
    except LockfileError as exc:
        raise ConfigError(
            f"cannot use {lock} ({exc.message})", advice="Write it first with: toolpin lock"
        ) from None
    return frozenset(
        name
        for name, entry in servers.items()
        if isinstance(entry.package, dict) and isinstance(entry.package.get("version"), str)
    )


__all__ = [
    "EntryPlan",
    "FilePlan",
    "Launcher",
    "Plan",
    "WrapJournal",
    "WrappedForm",
    "Written",
    "apply",
    "check_launcher",
    "check_lock_file",
    "installed_launcher",
    "package_warning",
    "plan_unwrap",
    "plan_wrap",
    "proxy_args",
    "recognise_wrap",
    "remote_run_args",
    "uvx_launcher",
]
