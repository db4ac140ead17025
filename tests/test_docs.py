"""The documents stay true: docs/cli.md is every command's ``--help``, every relative
link resolves, and CONTRIBUTING.md's package map names exactly the packages there are.

Regenerate the command reference after changing a command's help::

    PYTHONPATH=src python tests/test_docs.py --write
"""

from __future__ import annotations

import importlib.util
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

import click
import pytest

REPO = Path(__file__).resolve().parents[1]
CLI_MD = REPO / "docs" / "cli.md"
WRITE_COMMAND = "PYTHONPATH=src python tests/test_docs.py --write"
WIDTH = 100  # the group's max_content_width; fixed so the text never follows a terminal


def _commands(
    command: click.Command, ctx: click.Context
) -> list[tuple[str, click.Command, click.Context]]:
    found = [(ctx.command_path, command, ctx)]
    if isinstance(command, click.Group):
        for name in sorted(command.list_commands(ctx)):
            sub = command.get_command(ctx, name)
            assert sub is not None
            found += _commands(sub, click.Context(sub, info_name=name, parent=ctx))
    return found


def render_cli_reference() -> str:
    """docs/cli.md as it must read: one section per command, its ``--help`` verbatim."""
    from toolpin.cli import _group, _register_commands

    _register_commands()
    root = _group()
    # the group's own context settings (``-h`` beside ``--help``), as `toolpin --help` has
    settings = {**root.context_settings, "max_content_width": WIDTH}
    ctx = click.Context(root, info_name="toolpin", terminal_width=WIDTH, **settings)
    parts = [
        "# Command reference\n",
        f"<!-- Generated from each command's --help by `{WRITE_COMMAND}`;"
        " tests/test_docs.py fails when this file is stale. Do not edit by hand. -->\n",
        "Every `toolpin` command and its options, as `toolpin COMMAND --help` prints them."
        " Exit codes everywhere: 0 clean, 1 drift, 2 unusable input or usage. Walk-throughs"
        " with real output: [guide.md](guide.md).\n",
    ]
    entries = _commands(root, ctx)
    parts.append("\n".join(f"- [`{path}`](#{slug(path)})" for path, _, _ in entries) + "\n")
    for path, command, sub_ctx in entries:
        text = command.get_help(sub_ctx).rstrip()
        parts.append(f"## {path}\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


def test_cli_reference_is_current() -> None:
    expected = render_cli_reference()
    actual = CLI_MD.read_text(encoding="utf-8") if CLI_MD.exists() else ""
    assert actual == expected, f"docs/cli.md is stale; regenerate it with: {WRITE_COMMAND}"


def test_cli_reference_names_every_command() -> None:
    text = render_cli_reference()
    for name in ("toolpin run", "toolpin log crawl", "toolpin log site", "toolpin wrap"):
        assert f"\n## {name}\n" in text


# --- links ---------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~)")
INLINE_CODE = re.compile(r"`[^`\n]*`")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """Lines outside fenced code blocks, with inline code blanked out."""
    lines = []
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, INLINE_CODE.sub("``", line)))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").strip().lower()
    kept = [c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN"]
    return "".join(kept).replace(" ", "-")


def _heading_slugs(path: Path) -> set[str]:
    """Anchors of a file's headings, read from the original text (inline code kept)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").split("\n"):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match is None:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def documents() -> list[Path]:
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    contributing = REPO / "CONTRIBUTING.md"
    if contributing.exists():
        docs.append(contributing)
    return docs


def broken_links(path: Path, root: Path = REPO) -> list[str]:
    broken = []
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        for match in LINK.finditer(line):
            target = match.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("<"):
                continue  # http(s), mailto, vscode: and placeholders are not files here
            where, _, fragment = target.partition("#")
            resolved = (path.parent / where).resolve() if where else path
            label = f"{path.relative_to(root)}:{number}: {target}"
            if not resolved.exists():
                broken.append(f"{label} (no such file)")
            elif fragment and resolved.suffix == ".md" and fragment not in _heading_slugs(resolved):
                broken.append(f"{label} (no heading #{fragment})")
    return broken


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(doc: Path) -> None:
    assert broken_links(doc) == []


def test_link_checker_finds_a_broken_file_and_a_broken_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A `code` heading: yes\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Doc\n\n[ok](other.md#a-code-heading-yes) [self](#doc) [web](https://x.test/a)\n"
        "[gone](missing.md) [bad](other.md#nope)\n\n```\n[in code](missing.md)\n```\n"
    )
    assert broken_links(doc, tmp_path) == [
        "doc.md:4: missing.md (no such file)",
        "doc.md:4: other.md#nope (no heading #nope)",
    ]


def test_slug_matches_github() -> None:
    assert slug("For teams: commit a toolpin.lock") == "for-teams-commit-a-toolpinlock"
    assert slug("The log's public face: `toolpin log site`") == (
        "the-logs-public-face-toolpin-log-site"
    )
    assert slug("Offline CI gate: `pin`, `check`, `hash`") == "offline-ci-gate-pin-check-hash"
    assert slug("How fast, next to what (2026-12-01)") == "how-fast-next-to-what-2026-12-01"


# --- CONTRIBUTING.md's package map ---------------------------------------------------


def mapped_packages(text: str) -> list[str]:
    """The packages CONTRIBUTING.md's map names: its ``- `toolpin.X`: ...`` lines."""
    section = text.split("## Package map", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- `toolpin\.([a-z_]+)`", section, re.M)


def test_package_map_lists_exactly_the_packages() -> None:
    src = REPO / "src" / "toolpin"
    packages = sorted(p.name for p in src.iterdir() if (p / "__init__.py").exists())
    listed = mapped_packages((REPO / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert len(listed) == len(set(listed)), "a package is listed twice"
    unlisted = sorted(set(packages) - set(listed))
    gone = sorted(set(listed) - set(packages))
    assert (unlisted, gone) == ([], []), (
        f"CONTRIBUTING.md's package map: not listed {unlisted}, listed but not in src {gone}"
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(f"usage: {WRITE_COMMAND}")
    CLI_MD.write_text(render_cli_reference(), encoding="utf-8")
    print(f"wrote {CLI_MD.relative_to(REPO)}")


# --- docs/benchmarks.md's latest-run block -------------------------------------------


def _run_all() -> Any:
    spec = importlib.util.spec_from_file_location("run_all", REPO / "bench" / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmarks_doc_has_one_latest_run_block_recorded_with_its_machine() -> None:
    run_all = _run_all()
    text = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    block = text.split(run_all.BEGIN, 1)[1].split(run_all.END, 1)[0]
    assert re.search(r"^Recorded \d{4}-\d\d-\d\d \d\d:\d\d UTC at toolpin `", block, re.M)
    assert re.search(r"^Machine: \d+ CPUs \(.+\), .+, Python 3\.", block, re.M)
    assert run_all.record_block(text, block) == text


def test_recording_replaces_only_the_block() -> None:
    run_all = _run_all()
    text = f"# B\n\nintro\n\n{run_all.BEGIN}\nold\n{run_all.END}\n\n## 2026-12-01\n\nkept\n"
    assert run_all.record_block(text, "new\n") == (
        f"# B\n\nintro\n\n{run_all.BEGIN}\nnew\n{run_all.END}\n\n## 2026-12-01\n\nkept\n"
    )
    with pytest.raises(ValueError, match="exactly one"):
        run_all.record_block("# no block\n", "new")
    with pytest.raises(ValueError, match="exactly one"):
        run_all.record_block(f"{run_all.END}\n{run_all.BEGIN}\n", "new")
