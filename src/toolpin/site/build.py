"""``toolpin log site``: build the static site of a verified log.

The composition: :func:`toolpin.site.model.read_log` (refuses a log that does not verify),
then every page, badge, feed, API file and proof, the log itself under its C2SP paths, the
static assets and a host-neutral ``_headers``, all through one :class:`SiteWriter`
(incremental and atomic). Nothing reads the clock but ``now`` (``--now``), and every
collection is sorted, so the same log, crawl state and ``now`` give the same bytes.
"""

from __future__ import annotations

import datetime as dt
import importlib
import importlib.resources
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import jinja2
from markupsafe import Markup

from toolpin.core.snapshot import Snapshot
from toolpin.errors import InputError, LogError
from toolpin.publog.note import Verifier
from toolpin.site.badge import Badge, badge_state, render_badge
from toolpin.site.cache import WorkCache, shard_of
from toolpin.site.changes import (
    ChangeSummary,
    change_html,
    change_view,
    pretty_definition,
    view_of,
)
from toolpin.site.forked import cores
from toolpin.site.fragments import (
    change_links,
    compare_rows,
    definitions_html,
    history_items,
    server_rows,
    version_options,
)
from toolpin.site.history import History, LevelSource, Published, read_history
from toolpin.site.model import (
    LogView,
    ServerHistory,
    UnverifiedLogError,
    Version,
    parse_time,
)
from toolpin.site.output import SiteWriter, state_path
from toolpin.site.pages import ServerPage
from toolpin.site.render import CSP, environment, site_path
from toolpin.site.verified import FILE as KEPT
from toolpin.site.verified import read_verified

if TYPE_CHECKING:
    from toolpin.publog.policy import Policy

STATIC_FILES: Final = (
    "site.css",
    "verify.js",
    "filter.js",
    "compare.js",
    "status.js",
    "witness.js",
)
PAIR_VERSIONS: Final = 3
"""Diff pages between each of a server's latest this-many versions and the current one
(every version is also compared with the next one, on the server page)."""
RECENT_CHANGES: Final = 50

__all__ = ["BuildResult", "build_site"]


@dataclass(frozen=True)
class BuildResult:
    checkpoint_size: int
    servers: int
    opted_out: int
    files: int
    written: int
    unchanged: int
    removed: int


def parse_now(text: str | None) -> dt.datetime:
    """``--now`` (ISO 8601, UTC when no offset is given), or the clock when absent."""
    if text is None:
        from toolpin.util.clock import utc_now

        text = utc_now()
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"--now {text!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).replace(microsecond=0)


def _check_folders(log_dir: Path, out: Path) -> None:
    if not log_dir.is_dir():
        raise InputError(f"{log_dir} is not a directory")
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} is not a directory")
    a, b = log_dir.resolve(), out.resolve()
    if a == b or b.is_relative_to(a) or a.is_relative_to(b):
        raise InputError("--out must be outside the log directory (and not contain it)")


def _window(history: ServerHistory, position: int) -> dict[str, Any]:
    """When version ``position`` happened: after the last good look before, by its time."""
    version = history.versions[position]
    seen = version.observed_at
    if position == 0:
        return {"after": None, "seen": seen, "gap": False, "known": True}
    after = version.last_good_look
    known = after is not None
    if after is None:
        after = history.versions[position - 1].observed_at
    gap = parse_time(seen) - parse_time(after) > dt.timedelta(days=2)
    return {"after": after, "seen": seen, "gap": gap, "known": known}


@dataclass(frozen=True)
class _Proofs:
    """What the proofs are issued from: the tree's levels (base64, as proofs carry them,
    and as bytes), the site's published checkpoints, and below which index the proofs are
    those the last build published (kept when still as recorded)."""

    levels: list[list[str]]
    source: LevelSource
    history: History
    kept_below: int


def _proof_levels(view: LogView) -> tuple[list[list[bytes]], list[list[str]]]:
    """Every level of the tree at the built checkpoint (level 0: the leaves), as bytes and
    each node's hash in base64 (as the proofs carry it)."""
    import base64

    from toolpin.publog.merkle import tree_levels

    raw = tree_levels(view.leaf_hashes)
    levels = [[base64.b64encode(node).decode("ascii") for node in level] for level in raw]
    if view.checkpoint.size and levels[-1] != [view.checkpoint.root]:
        raise InputError("internal error: the entries read do not give the checkpoint's root")
    return raw, levels


def _kept_below(writer: SiteWriter, history: History) -> int:
    """The entries whose proofs the last build published as this one would: those below
    the last build's checkpoint, when its history is the start of this one's."""
    before = writer.previous_history
    sizes = tuple(history.sizes)
    if before and sizes[: len(before)] == before:
        return before[-1]
    return 0


def _proofs(view: LogView, writer: SiteWriter, proofs: _Proofs, part: range) -> None:
    """``proof/<index>.tlog-proof`` for the entries in ``part``, each against the first
    checkpoint the site published with it (:mod:`toolpin.site.history`); those the last
    build published are kept as they are."""
    import base64

    from toolpin.publog.merkle import inclusion_proof, level_path
    from toolpin.publog.proof import proof_text

    size = view.checkpoint.size
    for index in part:
        rel = f"proof/{index}.tlog-proof"
        if index < proofs.kept_below and writer.keep(rel):
            continue
        at = proofs.history.proven_at(index)
        if at.size == size:
            path = level_path(proofs.levels, index)
        else:
            hashes = inclusion_proof(proofs.source, index, at.size)
            path = [base64.b64encode(h).decode("ascii") for h in hashes]
        writer.text(rel, proof_text(index, path, at.note))


def _blob_owners(view: LogView) -> dict[str, str]:
    """``{blob ref: server id}``: every blob, and the server whose files carry it (the
    server of its first version, in log order)."""
    first: dict[str, int] = {}
    owners: dict[str, str] = {}
    for history in view.servers.values():  # no pair per version: nothing for the collector
        for version in history.versions:
            ref = version.blob
            if ref is not None and first.get(ref, version.index + 1) > version.index:
                first[ref] = version.index
                owners[ref] = history.id
    return {ref: owners[ref] for ref in sorted(owners)}


def _blob_path(ref: str) -> str:
    return "blob/sha256/" + ref.removeprefix("sha256:")


def _blobs(view: LogView, writer: SiteWriter, refs: list[str]) -> None:
    """``blob/sha256/<hex>``: each version's definitions, checked against their digest
    (in a new site the server that owns a blob links it: :func:`_link_blobs`)."""
    blobs = view.blob_store()
    for ref in refs:
        rel = _blob_path(ref)
        if not writer.keep(rel):  # named by its digest: a blob's bytes never change
            writer.write(rel, blobs.get(ref))


def _link_blobs(
    view: LogView, history: ServerHistory, writer: SiteWriter, owners: Mapping[str, str]
) -> dict[str, bytes]:
    """In a new site, the blobs ``history``'s server owns, hard-linked from the log when
    the file system allows; their bytes, read back from the site and checked against their
    digest (the server's definitions are then read from these bytes)."""
    if not writer.fresh:
        return {}
    blobs = view.blob_store()
    linked: dict[str, bytes] = {}
    for version in history.versions:
        ref = version.blob
        if ref is not None and ref not in linked and owners.get(ref) == history.id:
            linked[ref] = writer.link(_blob_path(ref), blobs.file(ref), ref)
    return linked


def _copy_log(
    view: LogView, writer: SiteWriter, history: History, raw_levels: Sequence[Sequence[bytes]]
) -> None:
    """The log beside the site: checkpoint, tiles and entry bundles (C2SP paths; the
    blobs are :func:`_blobs`'), and the partial tiles and bundles of every checkpoint the
    site published before (a partial tile never changes either: it is the first ``width``
    hashes or entries of its tile; the API links an entry's bundle at the checkpoint its
    proof names, so the link never moves). A partial file the log no longer has is cut
    from the tile that holds it now."""
    from toolpin.publog.merkle import leaf_hash
    from toolpin.publog.tiles import (
        TILE_HEIGHT,
        TILE_WIDTH,
        decode_bundle,
        encode_bundle,
        entries_path,
        max_file_bytes,
        read_bounded,
        tile_path,
        tiles_for_size,
    )

    root = view.log_dir

    def read(rel: str) -> bytes:
        try:
            return read_bounded(root / rel, max_file_bytes(rel))
        except OSError as exc:
            raise InputError(f"{rel} cannot be read ({exc.strerror})") from None

    def checked(rel: str, level: int | None, index: int, width: int, data: bytes) -> bytes:
        """``data``, the log's file ``rel`` (a hash tile at ``level``, or an entry bundle
        when ``None``), when it is the verified tree's: every tile and bundle a site
        publishes is compared with the tree built from the leaf hashes the build verified,
        so a file changed in the log since then is refused, whichever reading of the log
        (a full audit, or the kept one and the new entries) the build used."""
        start = index * TILE_WIDTH
        if level is None:
            try:
                good = [leaf_hash(raw) for raw in decode_bundle(data)] == list(
                    raw_levels[0][start : start + width]
                )
            except LogError:
                good = False
        else:
            hashes = raw_levels[TILE_HEIGHT * level][start : start + width]
            good = len(hashes) == width and data == b"".join(hashes)
        if not good:
            raise UnverifiedLogError(f"{rel} changed in the log since it was verified")
        return data

    writer.text("checkpoint", view.checkpoint.note)
    size = view.checkpoint.size
    files: list[tuple[int | None, int, int, str]] = [
        (ref.level, ref.index, ref.width, ref.path) for ref in tiles_for_size(size)
    ]
    full, last = divmod(size, TILE_WIDTH)
    files.extend((None, n, TILE_WIDTH, entries_path(n)) for n in range(full))
    if last:
        files.append((None, full, last, entries_path(full, last)))
    for level, index, width, rel in files:
        if ".p/" not in rel and writer.keep(rel):  # a full tile or bundle never changes
            continue
        writer.write(rel, checked(rel, level, index, width, read(rel)))
    done = {rel for *_, rel in files}

    def now_at(level: int | None, index: int) -> str:  # the file holding it in this tree
        count = size if level is None else size >> (8 * level)
        width = TILE_WIDTH if index < count // TILE_WIDTH else count % TILE_WIDTH
        if level is None:
            return entries_path(index, width)
        return tile_path(level, index, width)

    for item in history.items[:-1]:
        old: list[tuple[int | None, int, int, str]] = [
            (ref.level, ref.index, ref.width, ref.path)
            for ref in tiles_for_size(item.size)
            if not ref.full
        ]
        n, width = divmod(item.size, TILE_WIDTH)
        if width:
            old.append((None, n, width, entries_path(n, width)))
        for level, index, width, rel in old:
            if rel in done or writer.keep(rel):
                done.add(rel)
                continue
            data = read(now_at(level, index))
            if level is None:
                data = encode_bundle(decode_bundle(data)[:width])
            else:
                data = data[: 32 * width]
            writer.write(rel, checked(rel, level, index, width, data))
            done.add(rel)


HEADERS: Final = """\
# Host-neutral headers manifest (Netlify / Cloudflare Pages `_headers` syntax).
/*
  Content-Security-Policy: {csp}
  X-Content-Type-Options: nosniff
  Referrer-Policy: no-referrer
  X-Frame-Options: DENY

/checkpoint
  Content-Type: text/plain; charset=utf-8
  Cache-Control: no-cache
  Access-Control-Allow-Origin: *

/tile/*
  Content-Type: application/octet-stream
  Cache-Control: public, max-age=31536000, immutable
  Access-Control-Allow-Origin: *

/blob/*
  Content-Type: application/json
  Cache-Control: public, max-age=31536000, immutable
  Access-Control-Allow-Origin: *

/proof/*
  Content-Type: text/plain; charset=utf-8
  Cache-Control: no-cache
  Access-Control-Allow-Origin: *

/api/*
  Content-Type: application/json
  Cache-Control: no-cache
  Access-Control-Allow-Origin: *

/badge/*
  Cache-Control: max-age=300
  Access-Control-Allow-Origin: *

/feed.atom
  Content-Type: application/atom+xml; charset=utf-8
  Cache-Control: max-age=300
  Access-Control-Allow-Origin: *

/feed.json
  Content-Type: application/feed+json; charset=utf-8
  Cache-Control: max-age=300
  Access-Control-Allow-Origin: *

/feed/*
  Cache-Control: max-age=300
  Access-Control-Allow-Origin: *
"""


def code_digest() -> str:
    """toolpin's version and a digest of its own code and templates (an upgrade rebuilds
    everything and uses no cached work)."""
    import hashlib

    import toolpin

    digest = hashlib.sha256(toolpin.__version__.encode("utf-8") + b"\0")
    package = Path(toolpin.__file__).parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".html", ".atom", ".css", ".js") and path.is_file():
            digest.update(str(path.relative_to(package)).encode() + b"\0")
            digest.update(_file_digest(path))
    return digest.hexdigest()


_FILE_DIGESTS: dict[Path, tuple[tuple[int, int, int], bytes]] = {}
"""SHA-256 of each file :func:`code_digest` read in this process, with the file's
modification time, size and inode then: a file is read again when any of them changed."""


def _file_digest(path: Path) -> bytes:
    import hashlib

    info = path.stat()
    seen = (info.st_mtime_ns, info.st_size, info.st_ino)
    kept = _FILE_DIGESTS.get(path)
    if kept is not None and kept[0] == seen:
        return kept[1]
    value = hashlib.sha256(path.read_bytes()).digest()
    _FILE_DIGESTS[path] = (seen, value)
    return value


def _inputs_digest(
    note: str, base_url: str, now: dt.datetime, code: str, log_dir: Path, state: Path | None
) -> str:
    """Everything the output depends on, read without reading the entries: the signed
    checkpoint (hence every entry), the crawl state's last good looks, the opt-out lists,
    ``now``, ``base_url``, and toolpin's own code (the published history is the folder's
    own, checked file by file against the build state)."""
    import hashlib

    from toolpin.site.model import liveness, optout_names

    digest = hashlib.sha256()
    for part in (note, base_url, now.isoformat(), code):
        digest.update(part.encode("utf-8") + b"\0")
    for sid, last in sorted(liveness(state).items()):
        digest.update(f"{sid} {last}\n".encode())
    digest.update(b"\0")
    for name in sorted(optout_names(log_dir)):
        digest.update(name.encode("utf-8") + b"\n")
    return digest.hexdigest()


def _signed_note(log_dir: Path, vkey: Verifier) -> str | None:
    """The log's checkpoint when it is signed by ``vkey`` (``None``: :func:`read_log`
    says why not)."""
    from toolpin.errors import LogError
    from toolpin.publog.tiles import TileLog

    try:
        return TileLog.open(log_dir, vkey).checkpoint_note
    except (LogError, OSError):
        return None


def default_cache(log_dir: Path) -> Path:
    """Where the CLI keeps a log's cached work: toolpin's cache directory, per log directory."""
    import hashlib

    from toolpin.util.fs import toolpin_cache

    tag = hashlib.sha256(str(log_dir.absolute()).encode("utf-8")).hexdigest()[:16]
    return toolpin_cache() / f"site-{tag}"


def _hook(module: str, name: str) -> Callable[..., Any] | None:
    """A page writer from a module built beside this one, when that module exists."""
    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        return None
    writer = getattr(found, name, None)
    return writer if callable(writer) else None


def _render(env: jinja2.Environment, name: str, **context: Any) -> str:
    return env.get_template(name).render(**context)


def _staging(out: Path) -> Path | None:
    """A new folder beside ``out`` to build into when ``out`` is absent or empty (renamed
    into place when the build is done, so ``out`` never holds half a site); ``None`` when
    ``out`` holds files (then they are compared and replaced one by one)."""
    import tempfile

    if out.is_dir() and any(out.iterdir()):
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".building", dir=out.parent))
    staging.chmod(0o755)
    return staging


def build_site(
    log_dir: Path,
    vkey: Verifier,
    out: Path,
    *,
    base_url: str = "/",
    now: dt.datetime,
    state: Path | None = None,
    cache: Path | None = None,
    policy: Policy | None = None,
) -> BuildResult:
    """Build the site of the log in ``log_dir`` into ``out`` (see the module doc).

    ``cache``: a folder (outside ``out``) where each change's work is kept between
    builds (:mod:`toolpin.site.cache`); ``None``: everything is computed afresh.
    ``policy``: a witness policy: the checkpoint must carry its quorum's cosignatures
    (else :class:`~toolpin.publog.policy.PolicyError`), and every server page checks them
    in the browser too (``static/witness.js``)."""
    import shutil

    from toolpin.core.acyclic import collector_paused

    _check_folders(log_dir, out)
    if not base_url.endswith("/"):
        base_url += "/"
    code = code_digest()
    note = _signed_note(log_dir, vkey)
    if policy is not None:
        if note is not None:  # (else read_log says why the log is refused)
            policy.check(note, vkey)
        code += json.dumps(policy.to_json(), sort_keys=True)  # another policy: another site
    kept = None if cache is None else state_path(cache, out)  # never inside ``out``
    inputs = None if note is None else _inputs_digest(note, base_url, now, code, log_dir, state)
    staging = _staging(out)
    # The cyclic collector is paused for the whole build, here and in the forked workers
    # (they inherit it): a build makes no reference cycles (a full collection after every
    # worker's task finds nothing, and after a whole build a few hundred objects), while
    # its passes walk every object the build holds, again and again as it grows: 3 to 5 s
    # of the main process's time in a +1,000 build of 20,000 servers, collecting nothing.
    with collector_paused():
        try:
            if staging is None:
                writer = SiteWriter(out, state=kept)
                if inputs is not None and writer.up_to_date(inputs):
                    # The checkpoint the last build verified and published, and nothing else
                    # changed: every file is as that build left it (the entries are not read
                    # again; `toolpin log verify` audits the log).
                    servers, opted_out = writer.previous_counts
                    return BuildResult(
                        checkpoint_size=int(note.split("\n")[1]) if note else 0,
                        servers=servers,
                        opted_out=opted_out,
                        files=len(writer.stats),
                        written=0,
                        unchanged=writer.unchanged,
                        removed=0,
                    )
            else:
                writer = SiteWriter(staging, state=kept, manifest=False, fresh=True)
            later: list[Callable[[], None]] = []  # run while the servers are built
            view = read_verified(
                log_dir,
                vkey,
                state=state,
                kept=None if cache is None else cache / KEPT,
                code=code,
                later=later,
            )
            if inputs is None or view.checkpoint.note != note:
                raise UnverifiedLogError("the log changed while it was being read; build again")
            raw, levels = _proof_levels(view)
            cp = view.checkpoint
            source = LevelSource(raw)
            current = Published(cp.size, cp.root, cp.note)
            history = read_history(out, vkey, current, cp.origin, source)
            writer.history = tuple(history.sizes)
            proofs = _Proofs(levels, source, history, _kept_below(writer, history))
            result = _build(
                view,
                vkey,
                writer,
                base_url=base_url,
                now=now,
                inputs=inputs,
                cache=(cache, code),
                proofs=proofs,
                policy=policy,
                later=later,
            )
            if staging is not None:
                if out.is_dir():
                    out.rmdir()  # empty (checked above); a file put there meanwhile stops us
                staging.rename(out)
                staging = None
            return result
        finally:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            _forget_times()


def _forget_times() -> None:
    """Drop the parsed times the build kept for itself (one per entry: kept past the
    build, they would pin memory scattered over the whole reading of the log)."""
    import sys

    parse_time.cache_clear()
    report = sys.modules.get("toolpin.crawl.report")  # (not imported: nothing kept)
    if report is not None:
        report.forget_times()


def _build(
    view: LogView,
    vkey: Verifier,
    writer: SiteWriter,
    *,
    base_url: str,
    now: dt.datetime,
    inputs: str,
    cache: tuple[Path | None, str],
    proofs: _Proofs,
    policy: Policy | None = None,
    later: Iterable[Callable[[], None]] = (),
) -> BuildResult:
    from toolpin.site import api, digests, feeds

    root = writer.root
    env = environment()
    env.globals["witness_policy"] = (
        "" if policy is None else json.dumps(policy.to_json(), sort_keys=True)
    )
    context: dict[str, Any] = {"checkpoint": view.checkpoint, "base_url": base_url}

    def the_log() -> None:  # while the servers are built (in other processes when many)
        for step in later:  # (the verified reading, kept for the next build)
            step()
        _copy_log(view, writer, proofs.history, proofs.source.levels)
        api.write_history(writer, view, proofs.history)
        for name in STATIC_FILES:
            data = importlib.resources.files("toolpin.site").joinpath("static", name)
            writer.write(f"static/{name}", data.read_bytes())
        writer.text("_headers", HEADERS.format(csp=CSP))

    hook_context = dict(context)
    hooked: list[Path] = []
    fresh: list[Path] = []  # the hooks' files written this time (the rest were unchanged)
    reports = _hook("toolpin.site.reports", "write_report_pages")
    job: ReportsJob | None = None
    if reports is not None:
        # The reports read the log through their own view, with the explanations of every
        # change made here and the audit done here (neither is repeated); on a large log
        # they are written by a worker once every server is done, while the others write
        # the proofs and this process the rest.
        hook_context["verifier"] = vkey
        hook_context["now"] = now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        hook_context["audited"] = view.audited
        hook_context["report_observations"] = view.observations
        # The reports of months that are over are issued once, at a published checkpoint
        # (toolpin.site.reports), and kept while their files are as this state records.
        hook_context["report_published"] = [(i.size, i.root, i.note) for i in proofs.history.items]
        hook_context["report_recorded"], hook_context["report_groups"], _ = writer.previous
        hook_context["report_code"] = cache[1]
        job = (reports, env, root, hook_context, view.log_dir)
    pages, rest = _all_servers(
        view, now, writer, env, context, meanwhile=the_log, cache=cache, reports=job, proofs=proofs
    )
    shown = [p for p in pages.values() if not p.history.opted_out]

    def whole_log_pages() -> None:  # the index, lists, feeds, API and install page
        recent = _recent_changes(pages)
        counts = _counts(view, pages, now)
        writer.text(
            "index.html",
            _render(env, "index.html", **context, recent=recent, counts=counts, page="home"),
        )
        rows = [_row(p, now) for p in sorted(shown, key=_row_order)]
        filters = {
            "all": ("servers/index.html", "All servers", rows),
            "changed": (
                "servers/changed.html",
                "Changed in the last 7 days",
                [r for r in rows if r["state"] in ("changed", "changed-since")],
            ),
            "stale": (
                "servers/stale.html",
                "Not checked in more than 3 days",
                [r for r in rows if r["state"] == "stale"],
            ),
        }
        for key, (rel, title, chosen) in filters.items():
            writer.text(
                rel,
                _render(
                    env,
                    "servers.html",
                    **context,
                    rows=chosen,
                    rows_html=server_rows(chosen, site_path(base_url)),
                    total=len(rows),
                    heading=title,
                    current=key,
                    page="servers",
                ),
            )
        feeds.write_feeds(env, writer, view, pages, base_url)
        api.write_api(writer, view, pages, now)
        digests.write_digests(writer, view, proofs.history, proofs.kept_below)

        install = _hook("toolpin.site.install", "write_install_page")
        if install is not None:
            hooked.extend(install(env, root, dict(context), on_write=fresh.append))

    try:
        whole_log_pages()
        files = rest.finish()
        if files is not None:
            hooked.extend(files[0])
            fresh.extend(files[1])
            writer.groups.update(files[2])
    finally:
        rest.close()
    # Their files belong to this build too (kept, or removed when no longer written).
    rels = {Path(p).relative_to(root).as_posix() for p in hooked} - writer.stats.keys()
    written = len(rels & {Path(p).relative_to(root).as_posix() for p in fresh})
    writer.adopt(sorted(rels), written, len(rels) - written)
    writer.counts = (len(shown), len(pages) - len(shown))
    removed = writer.finish(inputs)
    return BuildResult(
        checkpoint_size=view.checkpoint.size,
        servers=len(shown),
        opted_out=len(pages) - len(shown),
        files=len(writer.stats),
        written=writer.written,
        unchanged=writer.unchanged,
        removed=removed,
    )


def _hooked_files(writer: Callable[..., Any], *args: Any) -> tuple[list[Path], list[Path]]:
    """A hook's files, and those of them it wrote (``writer(*args, on_write=...)``)."""
    written: list[Path] = []
    return list(writer(*args, on_write=written.append)), written


ReportsJob = tuple[Callable[..., Any], jinja2.Environment, Path, dict[str, Any], Path]
"""The reports hook and what it is called with (its context lacks ``report_known``)."""
_Files = tuple[list[Path], list[Path], "_Groups"]


def _reports(job: ReportsJob, explained: Explained) -> _Files:
    """The report pages, with the explanations of every change (and the groups of the
    files of the months issued once: :mod:`toolpin.site.reports`)."""
    reports, env, root, context, log_dir = job
    made: _Groups = {}
    context = {**context, "report_known": explained, "report_groups_made": made}
    files, written = _hooked_files(reports, env, root, context, log_dir)
    return files, written, made


def _reports_task(explained: Explained) -> _Files:
    """:func:`_reports` in a forked worker."""
    job: ReportsJob = _JOB["reports"]
    return _reports(job, explained)


class _Rest:
    """What is left of a build once its servers are done: the proofs and blobs, and the
    reports, which workers write while this process writes the whole-log pages.
    :meth:`finish` waits for them (and accounts for their files); :meth:`close` stops the
    workers."""

    def __init__(
        self,
        writer: SiteWriter,
        *,
        pool: Any = None,
        tasks: Iterable[Any] = (),
        reports: Any = None,
        files: _Files | None = None,
    ) -> None:
        self._writer, self._pool, self._tasks = writer, pool, tasks
        self._reports, self._files = reports, files

    def finish(self) -> _Files | None:
        """The reports' files (``None``: no reports), once every task is done."""
        for _, _, stats, written, unchanged, groups in self._tasks:
            self._writer.merge(stats, written, unchanged, groups)
        if self._reports is not None:
            self._files = self._reports.get()
        return self._files

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
            _JOB.clear()  # what the workers were forked with


def _row_order(page: ServerPage) -> tuple[str, str]:
    return (page.history.latest.observed_at, page.id)


def _row(page: ServerPage, now: dt.datetime) -> dict[str, Any]:
    latest = page.history.latest
    return {
        "id": page.id,
        "name": latest.name,
        "source": latest.source,
        "tools": latest.tools,
        "versions": len(page.history.versions),
        "badge": page.badge,
        "state": page.badge.state,
        "last_change": latest.observed_at,
    }


def _recent_changes(pages: Mapping[str, ServerPage]) -> list[dict[str, Any]]:
    import heapq

    items = heapq.nlargest(  # the newest few of every version (indices are unique)
        RECENT_CHANGES,
        (
            (version, page, change)
            for page in pages.values()
            if not page.history.opted_out
            for version, change in page.changes
        ),
        key=lambda item: item[0].index,
    )
    return [{"version": v, "id": p.id, "name": v.name, "change": c} for v, p, c in items]


def _counts(view: LogView, pages: Mapping[str, ServerPage], now: dt.datetime) -> dict[str, int]:
    day = now - dt.timedelta(hours=24)
    changed_24h = sum(
        1
        for p in pages.values()
        if not p.history.opted_out
        and len(p.history.versions) > 1
        and parse_time(p.history.latest.observed_at) > day
    )
    return {
        "servers": sum(1 for p in pages.values() if not p.history.opted_out),
        "entries": view.checkpoint.size,
        "definitions": sum(
            sum(v.counts.values()) for p in pages.values() for v in p.history.versions[-1:]
        ),
        "changed_24h": changed_24h,
        "opted_out": sum(1 for p in pages.values() if p.history.opted_out),
    }


Explained = dict[int, tuple[int, dict[str, Any]]]
"""``{index: (previous index, explanation)}`` of every change, for the reports (each
explanation in their form: tuples, not the lists the work cache keeps; an empty tuple is
one object and an empty list one each, and a build holds every explanation: 20 MiB more
at the peak of a +1,000 build of 20,000 servers with lists)."""


def _explain_json(value: dict[str, Any]) -> dict[str, Any]:
    """An explanation as the cache keeps it (lists), back in the reports' form (tuples)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}


def _change_work(old: Snapshot, new: Snapshot, leaf: str, previous_leaf: str) -> list[Any]:
    """What a build keeps of one change (see :mod:`toolpin.site.cache`)."""
    from toolpin.core.drift import compare
    from toolpin.crawl.report import explain_drift

    drift = compare(old, new)
    change = view_of(drift)
    explain = {k: list(v) if isinstance(v, tuple) else v for k, v in explain_drift(drift).items()}
    return [
        leaf,
        previous_leaf,
        list(change.label_keys),
        change.rewritten,
        change.schema_only,
        change.added,
        change.removed,
        explain,
        str(change_html(change)),
    ]


def _reuse(item: Any, *leaves: str) -> bool:
    n = len(leaves)
    return isinstance(item, list) and len(item) > n and item[:n] == list(leaves)


def _kept_change(
    item: Any, version: Version, before: Version
) -> tuple[ChangeSummary, dict[str, Any]] | None:
    """A change's summary and explanation from its kept work (:func:`_change_work`'s first
    eight items), when it is for these two leaf hashes and reads whole; ``None``: compare
    the two again."""
    if not (
        _reuse(item, version.leaf_hash, before.leaf_hash)
        and len(item) == 8
        and isinstance(item[7], dict)
    ):
        return None
    try:
        return ChangeSummary(tuple(map(str, item[2])), *map(int, item[3:7])), _explain_json(item[7])
    except (TypeError, ValueError):
        return None


def _server_files(
    view: LogView,
    history: ServerHistory,
    now: dt.datetime,
    env: jinja2.Environment,
    writer: SiteWriter,
    context: Mapping[str, Any],
    cache: WorkCache,
    owners: Mapping[str, str],
    proofs: _Proofs,
) -> tuple[Badge, list[ChangeSummary | None], Explained]:
    """Every file of one server (page, badge, diff pages, compare page, feeds, API
    history, the blobs it owns in a new site); its badge, change summaries and the
    reports' explanation of each change (one comparison per change, used by all, and kept
    in ``cache`` for the next build)."""
    from toolpin.site import api, feeds

    sid = history.id
    badge = badge_state(history, now)
    page = ServerPage(history, badge)
    # (the badge's files are rendered from these three and toolpin's code, in the key)
    shown = f"{badge.state}\0{badge.message}\0{badge.color}".encode()
    made_of = _server_key(view, history, shown, context, proofs, cache.code)
    if history.opted_out:
        if not writer.keep_group(sid, made_of):
            writer.begin_group()
            _link_blobs(view, history, writer, owners)
            writer.text(f"servers/{sid}.html", _render(env, "stub.html", **context, id=sid))
            api.write_server_api(writer, view, page, proofs.history)
            writer.end_group(sid, made_of)
        return badge, [None] * len(history.versions), {}
    writer.begin_group()
    linked = _link_blobs(view, history, writer, owners)
    kept_summary = cache.summary(sid)
    snapshots: dict[int, Snapshot] = {}

    def snap(version: Version) -> Snapshot:
        if version.index not in snapshots:  # one server's, from the bytes linked above
            data = linked.get(version.blob) if version.blob is not None else None
            snapshots[version.index] = view.snapshot(version, keep=False, data=data)
        return snapshots[version.index]

    summaries: list[ChangeSummary | None] = [None]
    explained: Explained = {}
    summary_work: dict[str, Any] = {}
    bodies: dict[int, Markup] = {}  # the HTML of the changes compared this time
    for position in range(1, len(history.versions)):
        version, before = history.versions[position], history.versions[position - 1]
        item: Any = kept_summary.get(str(version.index))
        reused = _kept_change(item, version, before)
        if reused is not None:
            summary, explain = reused
        else:
            item = _change_work(snap(before), snap(version), version.leaf_hash, before.leaf_hash)
            summary = ChangeSummary(tuple(item[2]), *item[3:7])
            explain = _explain_json(item[7])
            bodies[version.index] = Markup(item[8])
            item = item[:8]
        summary_work[str(version.index)] = item
        explained[version.index] = (before.index, explain)
        summaries.append(summary)
    cache.put_summary(sid, summary_work)
    if writer.keep_group(sid, made_of):  # its files, as the last build made them from this key
        writer.end_group(sid, None)
        return badge, summaries, explained
    kept = cache.get(sid)
    found: Any = kept.get("bodies")
    kept_bodies: dict[str, Any] = found if isinstance(found, dict) else {}
    found = kept.get("pairs")
    kept_pairs: dict[str, Any] = found if isinstance(found, dict) else {}
    work: dict[str, Any] = {"bodies": {}, "pairs": {}}
    entries: list[dict[str, Any]] = []
    for position, version in enumerate(history.versions):
        window = _window(history, position)
        if position == 0:
            entries.append({"version": version, "change": None, "body": None, "window": window})
            continue
        before = history.versions[position - 1]
        body = bodies.get(version.index)
        kept_body: Any = kept_bodies.get(str(version.index))
        if body is not None:
            pass
        elif _reuse(kept_body, version.leaf_hash, before.leaf_hash) and len(kept_body) == 3:
            body = Markup(str(kept_body[2]))
        else:
            made = _change_work(snap(before), snap(version), version.leaf_hash, before.leaf_hash)
            body = Markup(made[8])
        work["bodies"][str(version.index)] = [version.leaf_hash, before.leaf_hash, str(body)]
        entries.append(
            {"version": version, "change": summaries[position], "body": body, "window": window}
        )
    svg, endpoint = render_badge(badge)
    writer.write(f"badge/{sid}.svg", svg)
    writer.write(f"badge/{sid}.json", endpoint)
    latest = history.latest
    current: Any = kept.get("latest")
    if not (_reuse(current, latest.leaf_hash) and len(current) == 3):
        snapshot = snap(latest)
        current = [latest.leaf_hash, _definitions(snapshot), snapshot.instructions]
    work["latest"] = current
    pairs = _pairs(history)
    root = site_path(context["base_url"])
    writer.text(
        f"servers/{sid}.html",
        _render(
            env,
            "server.html",
            **context,
            id=sid,
            history=history,
            latest=latest,
            history_html=history_items(list(reversed(entries)), root),
            badge=badge,
            pairs=pairs,
            definitions_html=definitions_html(current[1]),
            change_links=change_links([v.index for v in history.versions]),
            instructions=current[2],
            run_command=run_command(latest),
            page="server",
        ),
    )
    by_index = {v.index: v for v in history.versions}
    diffs = []  # each explained pair, shown on the compare page (no page of its own)
    for a, b in pairs:
        key = f"{a}-{b}"
        pair: Any = kept_pairs.get(key)
        if not (_reuse(pair, by_index[a].leaf_hash, by_index[b].leaf_hash) and len(pair) == 3):
            body = change_html(change_view(snap(by_index[a]), snap(by_index[b])))
            pair = [by_index[a].leaf_hash, by_index[b].leaf_hash, str(body)]
        work["pairs"][key] = pair
        diffs.append({"a": by_index[a], "b": by_index[b], "body": Markup(str(pair[2]))})
    if len(history.versions) > 1:
        writer.text(
            f"servers/{sid}/compare.html",
            _render(
                env,
                "compare.html",
                **context,
                **_compare_context(history, pairs, root),
                diffs=diffs,
                id=sid,
                latest=latest,
                page="compare",
            ),
        )
    cache.put(sid, work, kept)
    page.changes = list(zip(history.versions, summaries, strict=True))
    feeds.write_server_feed(env, writer, view.checkpoint.origin, page, context["base_url"])
    api.write_server_api(writer, view, page, proofs.history)
    writer.end_group(sid, made_of)
    return badge, summaries, explained


def _kept_summaries(
    history: ServerHistory, kept: Mapping[str, Any]
) -> tuple[list[ChangeSummary | None], Explained] | None:
    """Every change summary and explanation of a server, from its kept record when the
    record holds exactly its changes, each for the same two leaf hashes (``None``
    otherwise: the server is built, as :func:`_server_files` does)."""
    versions = history.versions
    if len(kept) != len(versions) - 1:
        return None
    summaries: list[ChangeSummary | None] = [None]
    explained: Explained = {}
    for position in range(1, len(versions)):
        version, before = versions[position], versions[position - 1]
        found = _kept_change(kept.get(str(version.index)), version, before)
        if found is None:
            return None
        summaries.append(found[0])
        explained[version.index] = (before.index, found[1])
    return summaries, explained


def _same_keys(
    view: LogView,
    sids: list[str],
    now: dt.datetime,
    writer: SiteWriter,
    context: Mapping[str, Any],
    proofs: _Proofs,
    cache: tuple[Path | None, str],
) -> tuple[list[tuple[str, Badge, str]], list[str]]:
    """The servers whose inputs key (:func:`_server_key`) is the one the last build
    recorded for their files, each with its badge and that key, and the others (to
    build)."""
    if cache[0] is None:
        return [], sids
    same: list[tuple[str, Badge, str]] = []
    other: list[str] = []
    for sid in sids:
        history = view.servers[sid]
        recorded = writer.recorded_key(sid)
        if recorded is None:
            other.append(sid)
            continue
        badge = badge_state(history, now)
        shown = f"{badge.state}\0{badge.message}\0{badge.color}".encode()
        if _server_key(view, history, shown, context, proofs, cache[1]) == recorded:
            same.append((sid, badge, recorded))
        else:
            other.append(sid)
    return same, other


def _kept_servers(
    view: LogView,
    same: list[tuple[str, Badge, str]],
    writer: SiteWriter,
    cache: tuple[Path | None, str],
) -> tuple[list[_Done], list[str]]:
    """Of the servers :func:`_same_keys` found with the same inputs, those kept whole
    here, and those left to build.

    A server is kept when every file the last build recorded for it is still as recorded
    (:meth:`SiteWriter.keep_group`), and the work cache holds the summary and the
    explanation of each of its changes for the same leaf hashes: exactly what
    :func:`_server_files` would find and keep, without a worker visiting the server. So a
    build's work follows the servers that changed, not the log. (The cache's shards are
    only read here: a worker that rewrites one meanwhile replaces it atomically, and a
    kept server's record is the same in both.)"""
    if cache[0] is None or not same:
        return [], [sid for sid, _, _ in same]
    work = WorkCache(*cache)
    kept: list[_Done] = []
    left: list[str] = []
    shard = ""
    for sid, badge, key in same:  # sorted, so each shard is read once (and dropped after)
        if shard_of(sid) != shard:
            shard = shard_of(sid)
            work.forget()
        history = view.servers[sid]
        if history.opted_out:
            made: tuple[list[ChangeSummary | None], Explained] | None = (
                [None] * len(history.versions),
                {},
            )
        else:
            made = _kept_summaries(history, work.summary(sid))
        if made is None or not writer.keep_group(sid, key):
            left.append(sid)
            continue
        kept.append((sid, badge, *made))
    work.forget()
    return kept, left


def _server_key(
    view: LogView,
    history: ServerHistory,
    badge: bytes,
    context: Mapping[str, Any],
    proofs: _Proofs,
    code: str,
) -> str:
    """Everything one server's files are made from: toolpin's code, the site's address,
    the log, the server's entries (each by its leaf hash, with the checkpoint its proof
    names, which also names its entry bundle), its last good look, whether it opted
    out, and its badge's state, message and colour (which depend on ``now``). Files made
    from the same key are the same bytes (:meth:`SiteWriter.keep_group`)."""
    import hashlib

    cp = view.checkpoint
    digest = hashlib.sha256()
    head = (code, str(context["base_url"]), cp.origin, cp.vkey, history.id)
    digest.update("\0".join(head).encode("utf-8"))
    digest.update(f"\0{history.opted_out}\0{history.last_ok}\0".encode())
    at = proofs.history.size_after
    digest.update(
        "".join(f"{v.index} {v.leaf_hash} {at(v.index)}\n" for v in history.versions).encode(
            "ascii"
        )
    )
    digest.update(badge)
    return digest.hexdigest()


PARALLEL_FROM: Final = 400
"""Servers from which the per-server files are built by several processes."""

_JOB: dict[str, Any] = {}
"""What a forked worker builds from (set before the pool forks, read in the children)."""

_Done = tuple[str, Badge, list[ChangeSummary | None], Explained]
_Task = tuple[str, Any]
"""``("servers", [ids])``, ``("proofs", range)`` or ``("blobs", [refs])``."""


def _run(
    task: _Task,
    view: LogView,
    writer: SiteWriter,
    env: jinja2.Environment,
    now: dt.datetime,
    context: Mapping[str, Any],
    proofs: _Proofs,
    cache: tuple[Path | None, str],
    owners: Mapping[str, str],
) -> list[_Done]:
    kind, part = task
    if kind == "proofs":
        _proofs(view, writer, proofs, part)
        return []
    if kind == "blobs":
        _blobs(view, writer, part)
        return []
    work = WorkCache(*cache)
    done = [
        (
            sid,
            *_server_files(
                view, view.servers[sid], now, env, writer, context, work, owners, proofs
            ),
        )
        for sid in part
    ]
    work.flush()
    return done


_Groups = dict[str, tuple[str, list[str]]]


def _task(
    task: _Task,
) -> tuple[str, list[_Done], dict[str, tuple[int, int]], int, int, _Groups]:
    """One task in a forked worker (its own writer; the accounting goes back)."""
    job = _JOB
    writer = SiteWriter(job["root"], manifest=False, fresh=job["fresh"], previous=job["previous"])
    done = _run(
        task,
        job["view"],
        writer,
        job["env"],
        job["now"],
        job["context"],
        job["proofs"],
        job["cache"],
        job["owners"],
    )
    return task[0], done, writer.stats, writer.written, writer.unchanged, writer.groups


def _workers() -> int:
    return cores()


def _all_servers(
    view: LogView,
    now: dt.datetime,
    writer: SiteWriter,
    env: jinja2.Environment,
    context: Mapping[str, Any],
    *,
    meanwhile: Callable[[], None],
    cache: tuple[Path | None, str],
    reports: ReportsJob | None = None,
    proofs: _Proofs,
) -> tuple[dict[str, ServerPage], _Rest]:
    """Every server's files, in worker processes when the log is large and cores allow
    (``meanwhile`` runs in this process while they work); then every proof and blob and
    the reports (``reports``), which the workers write after the servers (one of them the
    reports) while this process goes on: the second item returned (finish and close it)."""
    owners = _blob_owners(view)
    refs = [] if writer.fresh else list(owners)  # a new site's blobs: linked by their owners
    # The servers whose files and work are all as the last build left them are kept by
    # this process (while the workers, when many, build the others); only the others are
    # visited.
    same, sids = _same_keys(view, sorted(view.servers), now, writer, context, proofs, cache)
    workers = _workers()
    if len(view.servers) < PARALLEL_FROM or workers == 1:
        meanwhile()
        results, left = _kept_servers(view, same, writer, cache)
        tasks: list[_Task] = [
            ("servers", sorted(sids + left)),
            ("proofs", range(view.checkpoint.size)),
            ("blobs", refs),
        ]
        for task in tasks:
            results.extend(_run(task, view, writer, env, now, context, proofs, cache, owners))
        files = None if reports is None else _reports(reports, _explained(results))
        rest = _Rest(writer, files=files)
    else:
        import multiprocessing

        for name in ("server.html", "stub.html", "compare.html", "feed.atom"):
            env.get_template(name)  # compiled once, before the workers fork
        # Whole cache shards per task (no two processes write one shard file).
        shards: dict[str, list[str]] = {}
        for sid in sids:
            shards.setdefault(shard_of(sid), []).append(sid)
        groups = [shards[k] for k in sorted(shards)]
        size = max(1, -(-len(groups) // (workers * 8)))
        tasks = [
            ("servers", [sid for group in groups[i : i + size] for sid in group])
            for i in range(0, len(groups), size)
        ]
        step = 5000
        later: list[_Task] = [
            ("proofs", range(i, min(i + step, view.checkpoint.size)))
            for i in range(0, view.checkpoint.size, step)
        ]
        later.extend(("blobs", refs[i : i + step]) for i in range(0, len(refs), step))
        _JOB.update(
            view=view,
            now=now,
            root=writer.root,
            fresh=writer.fresh,
            env=env,
            context=context,
            proofs=proofs,
            previous=writer.previous,
            cache=cache,
            owners=owners,
            reports=reports,
        )
        pool = multiprocessing.get_context("fork").Pool(workers)
        try:
            done = pool.imap_unordered(_task, tasks)
            meanwhile()
            results, left = _kept_servers(view, same, writer, cache)
            for _, part, stats, written, unchanged, made in done:
                results.extend(part)
                writer.merge(stats, written, unchanged, made)
            if left:  # (rare: a kept server whose files or work are not as recorded)
                # built here, once no worker writes the cache's shards
                results.extend(
                    _run(("servers", left), view, writer, env, now, context, proofs, cache, owners)
                )
            # The reports first (they are the longest), then the proofs and blobs.
            report = None
            if reports is not None:
                report = pool.apply_async(_reports_task, (_explained(results),))
            rest = _Rest(writer, pool=pool, tasks=pool.imap_unordered(_task, later), reports=report)
        except BaseException:
            pool.terminate()
            pool.join()
            _JOB.clear()
            raise
    pages: dict[str, ServerPage] = {}
    for sid, badge, summaries, _ in sorted(results, key=lambda r: r[0]):
        history = view.servers[sid]
        page = ServerPage(history, badge)
        page.changes = list(zip(history.versions, summaries, strict=True))
        pages[sid] = page
    return pages, rest


def _explained(results: list[_Done]) -> Explained:
    explained: Explained = {}
    for _, _, _, explains in results:
        explained.update(explains)
    return explained


def run_command(version: Version) -> str:
    """The command that starts the server, when the log knows its package."""
    import shlex

    from toolpin.core.render import visible

    package = version.package or {}
    name, release = package.get("name"), package.get("version")
    ecosystem = package.get("ecosystem")
    if name and ecosystem == "npm":
        spec = f"{name}@{release}" if release else name
        return "npx -y " + shlex.quote(visible(spec))
    if name and ecosystem == "pypi":
        spec = f"{name}=={release}" if release else name
        return "uvx " + shlex.quote(visible(spec))
    return "<the server's command>"


def _pairs(history: ServerHistory) -> list[tuple[int, int]]:
    """Pairs of versions (log indices) with a diff page of their own: each of the latest
    :data:`PAIR_VERSIONS` against the current one (neighbours are a change, shown on the
    server page, so every older version is one step from a diff with the current)."""
    indices = [v.index for v in history.versions[-PAIR_VERSIONS:]]
    return [(a, indices[-1]) for a in indices[:-2]]


_BLOB: Final = re.compile(r"sha256:[0-9a-f]{64}")


def _compare_context(
    history: ServerHistory, pairs: list[tuple[int, int]], root: str
) -> dict[str, Any]:
    """What ``servers/<id>/compare.html`` shows: every version with the diffs toolpin
    explained that end at it, and what its script needs (the kinds of definition and the
    characters :func:`toolpin.core.render.visible` escapes, from the core's own tables)."""
    from toolpin.core.render import _UNSAFE_RANGES
    from toolpin.core.snapshot import KINDS

    sid = history.id
    latest = history.latest.index
    explained = set(pairs)
    rows = []
    for position, version in enumerate(history.versions):
        links = []
        if position > 0:
            before = history.versions[position - 1].index
            links.append(
                {
                    "href": f"../{sid}.html#entry-{version.index}",
                    "text": f"change from entry {before}",
                }
            )
        if (version.index, latest) in explained:
            links.append(
                {
                    "href": f"#diff-{version.index}-{latest}",
                    "text": f"against entry {latest} (current)",
                }
            )
        blob = version.blob or ""
        rows.append(
            {
                "index": version.index,
                "observed_at": version.observed_at,
                "counts": version.counts,
                "surface": version.surface,
                "blob_path": "blob/sha256/" + blob[7:] if _BLOB.fullmatch(blob) else "",
                "links": links,
            }
        )
    return {
        "versions": rows,
        "options_from": version_options(rows, -2),
        "options_to": version_options(rows, -1),
        "rows_html": compare_rows(rows, root),
        "explained": pairs,
        "kinds": " ".join(
            f"{k.list_member}:{k.key_member}:{k.plural.replace(' ', '_')}" for k in KINDS
        ),
        "unsafe": " ".join(f"{low:x}-{high:x}" for low, high in _UNSAFE_RANGES),
    }


def _definitions(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The current definitions in full, per kind (every line made visible)."""
    from toolpin.core.snapshot import KINDS

    out: list[dict[str, Any]] = []
    for kind in KINDS:
        listing = snapshot.listing(kind)
        if listing is None:
            continue
        out.append(
            {
                "kind": kind.plural,
                "items": [
                    {
                        "key": d.key,
                        "hash": d.hash,
                        "json": "\n".join(pretty_definition(d)),
                    }
                    for d in listing.items
                ],
            }
        )
    return out
