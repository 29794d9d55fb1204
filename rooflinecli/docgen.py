"""Generate docs/cli.md from the commands' --help, so the reference never drifts (checked in tests).

python -m rooflinecli.docgen docs/cli.md          # write
python -m rooflinecli.docgen --check docs/cli.md  # exit 1 if stale
"""

from __future__ import annotations

import sys
from pathlib import Path

import click


def _walk(cmd: click.Command, path: list[str], parent: click.Context | None):  # type: ignore[no-untyped-def]
    settings = {**cmd.context_settings, "terminal_width": 100, "max_content_width": 100}
    ctx = click.Context(cmd, info_name=path[-1], parent=parent, **settings)
    yield path, cmd.get_help(ctx)
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, [*path, name], ctx)


def render() -> str:
    from rooflinecli.cli import cli

    parts = [
        "# CLI reference\n",
        "Generated from `--help` by `make docs` (`python -m rooflinecli.docgen docs/cli.md`);",
        "a test fails when it is stale.\n",
    ]
    for path, text in _walk(cli, ["roofline"], None):
        parts.append(f"## `{' '.join(path)}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(parts)


BEGIN, END = "<!-- stages:begin (make docs) -->", "<!-- stages:end -->"


def stages_table() -> str:
    """The README's stage table, derived from the registry."""
    from rooflinecli.build.stages import STAGES

    rows = [
        "| stage | file | dtype | ch. | tile params | what it shows |",
        "|---|---|---|---|---|---|",
    ]
    for s in STAGES:
        params = ", ".join(f"{k}={v}" for k, v in s.params.items()) or "-"
        file = f"`kernels/{s.file}`" if s.file else "(library)"
        dtypes = "/".join(s.all_dtypes)
        rows.append(f"| `{s.name}` | {file} | {dtypes} | {s.chapter} | {params} | {s.what} |")
    return "\n".join(rows) + "\n"


def readme_with_table(text: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit("README.md lacks the stage table markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{stages_table()}{END}{tail}"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    target = Path(args[0] if args else "docs/cli.md")
    readme = Path("README.md")
    wanted = {target: render(), readme: readme_with_table(readme.read_text())}
    if check:
        stale = [str(p) for p, text in wanted.items() if p.read_text() != text]
        if stale:
            print(f"{', '.join(stale)} stale: run `make docs`", file=sys.stderr)
            return 1
        return 0
    from rooflinecli.files import write_atomic

    for p, text in wanted.items():
        write_atomic(p, text)  # through a symlink, keeping the file's mode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
