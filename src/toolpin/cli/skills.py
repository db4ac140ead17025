"""``toolpin skills pin|check|review|approve``: agent skills pinned like tools."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolpin.cli._output import echo_lines, stdout_color
from toolpin.cli.output_options import json_option

if TYPE_CHECKING:
    from toolpin.skills.locate import SkillRef

_PATHS = click.argument("paths", nargs=-1, metavar="[PATH|NAME]...")
_PROJECT = click.option(
    "--project",
    "project",
    default=".",
    show_default=True,
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="The project whose .claude/skills and .agents/skills are looked at.",
)


@click.group("skills")
def skills_group() -> None:
    """Pin agent skills (folders with a SKILL.md) like tool definitions.

    Without PATH: every skill in ~/.claude/skills, the project's .claude/skills and
    .agents/skills, and installed Claude Code plugins. A PATH is a skill folder or a folder
    of skill folders; a NAME is a skill as listed (project/deploy).
    """


def _refs(paths: tuple[str, ...], project: Path) -> list[SkillRef]:
    from toolpin.skills.locate import given, known

    return given(paths, project) if paths else known(project)


@skills_group.command("pin")
@_PATHS
@_PROJECT
def pin_command(paths: tuple[str, ...], project: Path) -> int:
    """Pin every skill that has no pin yet (exit 1 when a pinned one changed)."""
    from toolpin.skills.check import pin
    from toolpin.skills.report import status_lines, summary
    from toolpin.skills.store import SkillStore

    outcomes = pin(_refs(paths, project), SkillStore())
    echo_lines([*status_lines(outcomes)], color=stdout_color())
    if not all(o.ok for o in outcomes):
        click.echo(summary(outcomes))
        return 1
    return 0


@skills_group.command("check")
@_PATHS
@_PROJECT
@json_option("Print JSON (keys in docs/skills.md).")
def check_command(paths: tuple[str, ...], project: Path, as_json: bool) -> int:
    """Compare every skill with its pin (exit 1 on a change or an unpinned skill)."""
    from toolpin.skills.check import survey
    from toolpin.skills.report import check_json, status_lines, summary
    from toolpin.skills.store import SkillStore

    outcomes = survey(_refs(paths, project), SkillStore())
    if as_json:
        from toolpin.core.render import safe_json

        click.echo(safe_json(check_json(outcomes)))
    else:
        echo_lines([*status_lines(outcomes)], color=stdout_color())
        click.echo(summary(outcomes))
    return 0 if all(o.ok for o in outcomes) else 1


@skills_group.command("review")
@_PATHS
@_PROJECT
def review_command(paths: tuple[str, ...], project: Path) -> int:
    """Show each new or changed skill, labelled, with the full diff."""
    from toolpin.skills.check import survey
    from toolpin.skills.report import review_lines
    from toolpin.skills.store import SkillStore

    echo_lines(review_lines(survey(_refs(paths, project), SkillStore())), color=stdout_color())
    return 0


@skills_group.command("approve")
@_PATHS
@_PROJECT
@click.option(
    "--expect",
    default=None,
    metavar="DIGEST",
    help="Approve only if the skill on disk is this one (as printed by review).",
)
@click.option("--all", "every", is_flag=True, help="Approve every new or changed skill found.")
def approve_command(paths: tuple[str, ...], project: Path, expect: str | None, every: bool) -> int:
    """Accept the current state of the named skills: it becomes their pin."""
    from toolpin.errors import InputError
    from toolpin.skills.check import approve
    from toolpin.skills.report import status_lines
    from toolpin.skills.store import SkillStore

    if not paths and not every:
        raise InputError("name the skills to approve (a path or a name), or give --all")
    outcomes = approve(_refs(paths, project), SkillStore(), expect=expect)
    echo_lines(status_lines(outcomes), color=stdout_color())
    return 0
