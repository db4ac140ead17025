"""``--json``, the one option of every command that can print its result as JSON: a flag,
passed as ``as_json``; each command says in its help what the JSON holds.

Light at import: only ``click``.
"""

from __future__ import annotations

from collections.abc import Callable

import click
from click.decorators import FC


def json_option(help: str) -> Callable[[FC], FC]:
    """``--json`` (``as_json``), with ``help``."""
    return click.option("--json", "as_json", is_flag=True, help=help)
