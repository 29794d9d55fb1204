"""One module per command; each parses options, builds a request, runs a job of rooflinecli.api
and hands rows to rooflinecli.present. LazyGroup lets a group load its commands only when one
runs; Command hands a command its shared options gathered into requests (rooflinecli.options)."""

from __future__ import annotations

from typing import Any

import click


def examples(*lines: str) -> str:
    """A command's epilog: the last thing its --help shows, one or two examples of it, kept as
    written (click rewraps no paragraph that starts with \\b)."""
    head = "Examples:" if len(lines) > 1 else "Example:"
    return "\b\n" + head + "\n" + "\n".join(f"  {line}" for line in lines)


class Command(click.Command):
    """A command whose function takes its shared options gathered (rooflinecli.options.gather):
    before the function runs, each gathering step of the function (`__gathers__`, outermost
    decorator first) replaces a group of option values with the one value built from them, or
    runs the command another way instead (--gpus). The function itself is the callback: no
    wrapper lies between the command and its job."""

    def invoke(self, ctx: click.Context) -> Any:
        for step in getattr(self.callback, "__gathers__", ()):
            instead = step(ctx)
            if instead is not None:
                return instead()
        return super().invoke(ctx)


class LazyGroup(click.Group):
    """A group whose commands load on first use. `lazy` maps a command's name to (module, the
    command object's name in it, its short help): listing them (--help) imports nothing; a test
    holds each short help equal to the command's own. Its commands are `Command`s."""

    command_class = Command

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
