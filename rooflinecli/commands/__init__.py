"""One module per command; each parses options, calls rooflinecli.api and hands rows to
rooflinecli.present. LazyGroup lets a group load its commands only when one runs."""

from __future__ import annotations

from typing import Any

import click


class LazyGroup(click.Group):
    """A group whose commands load on first use. `lazy` maps a command's name to (module, the
    command object's name in it, its short help): listing them (--help) imports nothing; a test
    holds each short help equal to the command's own."""

    def __init__(
        self, *args: Any, lazy: dict[str, tuple[str, str, str]] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in self.lazy:
            import importlib

            module, attr, _help = self.lazy[name]
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return self.commands.get(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy:
                rows.append((name, self.lazy[name][2]))
            else:
                cmd = self.commands[name]
                if not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(limit=formatter.width)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
