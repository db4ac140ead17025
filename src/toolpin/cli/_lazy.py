"""A click group whose commands are imported when they are first asked for.

Every ``toolpin`` command line starts a process, and each command module imports what its
options need; building the whole command tree for every command imported all of them. A
:class:`LazyGroup` knows its commands by name (``name -> "module:attribute"``) and imports a
command's module only when click looks the command up: ``toolpin pin`` imports
``toolpin.cli.offline`` and nothing of ``lock``, ``crawl`` or ``witness``. The help, which
lists every command, and an unknown command's usage error (whose "Did you mean" draws on
every name) load them all, so what click prints is the same as with an eager group.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click


class LazyGroup(click.Group):
    """A :class:`click.Group` with commands named in ``lazy`` and imported on first use."""

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, str] = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            if cmd_name in self.lazy:
                self._load(cmd_name)
            else:
                self._load_own()  # an unknown name: click's suggestions look at every command
        return self.commands.get(cmd_name)

    def load_all(self) -> None:
        """Import every command, and those of its lazy subgroups, in the table's order."""
        self._load_own()
        for name in self.lazy:
            command = self.commands[name]
            if isinstance(command, LazyGroup):
                command.load_all()

    def _load_own(self) -> None:
        for name in self.lazy:
            if name not in self.commands:
                self._load(name)

    def _load(self, name: str) -> None:
        module_name, _, attribute = self.lazy[name].partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command) or command.name != name:
            raise TypeError(f"{self.lazy[name]} is not the command {name!r}")
        self.add_command(command)
