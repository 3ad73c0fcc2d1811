"""Regenerate docs/cli.md from the --help of every command and subcommand (tests/test_docs.py
checks it is current).

    python tools/gen_cli_docs.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def render() -> str:
    import click
    from click.testing import CliRunner

    from dmm.cli import cli

    runner = CliRunner()
    parts = ["# CLI reference\n",
             "Generated from `--help` by `tools/gen_cli_docs.py`; do not edit by hand. Every "
             "command and subcommand is here, in the order `dmm --help` lists them.\n"]

    def walk(path: list[str], command: click.Command) -> None:
        out = runner.invoke(cli, [*path, "--help"], prog_name="dmm", terminal_width=100)
        heading = "#" * min(len(path) + 2, 4)
        parts.extend([f"{heading} {' '.join(['dmm', *path])}\n", "```", out.output.rstrip(),
                      "```\n"])
        if isinstance(command, click.Group):
            ctx = click.Context(command, info_name=path[-1] if path else "dmm")
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk([*path, name], sub)

    walk([], cli)
    return "\n".join(parts)


if __name__ == "__main__":
    (ROOT / "docs" / "cli.md").write_text(render(), encoding="utf-8")
