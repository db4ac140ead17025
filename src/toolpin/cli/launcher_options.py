"""The ``--launcher`` and ``--force`` options ``wrap``, ``policy`` and ``install-links``
share: how a client starts toolpin (:mod:`toolpin.clients.launcher`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from toolpin.clients.launcher import Launcher

launcher_option = click.option(
    "--launcher",
    default="path",
    show_default=True,
    metavar="path|toolpin|uvx|/ABS/PATH",
    help=(
        "How clients start toolpin: the installed toolpin by its absolute path (desktop "
        "apps need one), a bare toolpin on the client's PATH, uvx toolpin@<this version> "
        "(refused until that version is on PyPI), or this absolute path."
    ),
)
force_option = click.option(
    "--force",
    is_flag=True,
    help="Write the launcher even if `LAUNCHER --version` does not print toolpin's here.",
)


def chosen_launcher(launcher: str, force: bool) -> Launcher:
    """The launcher ``--launcher`` names, checked to start toolpin unless ``--force``."""
    from toolpin.clients.launcher import check_launcher, choose_launcher

    chosen = choose_launcher(launcher)
    if not force:
        check_launcher(chosen.argv)
    return chosen
