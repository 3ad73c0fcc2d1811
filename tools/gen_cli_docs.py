"""Regenerate docs/cli.md from the --help of every command and subcommand (tests/test_docs.py
checks it is current).

    python tools/gen_cli_docs.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


CONVENTIONS = """## Conventions

One way to say each thing, on every command (older spellings still work, hidden from
`--help`, so that scripts keep running):

| idea | how every command says it | older spellings still accepted |
| --- | --- | --- |
| one memory | its id (`mem_2026_03_14_007`) or its path, relative to `.dmm/memory/`, to the repository root or to the current folder; a new file is taken from the current folder when you stand inside `.dmm/memory/` or start the path with a dot (the current or the parent folder). A command about one memory takes it as an argument (`show`, `history`, `edit`, `usage show`) | |
| memories in an option | `--memory MEMORY`, repeated or `MEMORY,MEMORY` (`log`, `conflicts list/check/flag/scan`, `write update/deprecate/promote`); a name for a role where the role matters: `--target` is the memory a resolution retires, `write propose --path` the file a new memory goes to | `--memories A,B` (`conflicts check`, `flag`), `--path` (`log`, `write update/deprecate/promote`) |
| tags | `--tag TAG`, repeated or `TAG,TAG`: memories carrying every one (`list`, `search`, `query`) | `query --tags a,b` (any of them) |
| time | `--older-than WHEN` and `--newer-than WHEN`, WHEN a number of days ago (`30`) or a date (`2026-11-01`) (`list`, `usage stale`, `usage queries`) | `usage stale --days N`, `usage queries --after DATE` |
| everything | `--status all` means every status there is: open and closed proposals, active and deprecated memories, every conflict; `review list` shows `open` ones by default | |
| how many | `--limit N`. Lists of what the store holds show all of it by default (`list`, `search`, `review list`, `conflicts list`, `usage top`, `usage stale`); logs of events the newest 50 (`log`, `usage queries`) | |
| order | `--sort COLUMN` and `--reverse` (`list`, `review list`, `conflicts list`) | |
| tables | a header row, fitted to the terminal as gh fits them: ids and titles keep their room, the other columns are abbreviated, shrunk, then dropped; piped, every cell is whole; `--no-headers` gives tab-separated rows on every table | |
| data and messages | data on stdout, messages on stderr; `--json` on every command that shows data (errors too: `{"error", "hint", "exit_code"}`) | |
| the terminal | `--color auto\\|always\\|never` (auto: a terminal, never with `NO_COLOR`, forced with `FORCE_COLOR` or `CLICOLOR_FORCE`), `--no-pager` (long output is paged through `$DMM_PAGER`, `$PAGER` or `less -FRX`), `-q/--quiet` (only warnings and errors on stderr): before or after the command | |
| sureness | a memory's `confidence` is its level (experimental, active, stable, deprecated); a conflict's `score` (0 to 1, `confidence` in its JSON) is how surely it was detected (`--min-score`); the reviewer's `certainty` is how sure its decision is | `--min-confidence` |
| what happened | events in `log`: `proposed`, the decisions (`approved`, `modified`, `rejected`, `deferred`, `withdrawn`, `fixed`), the resolutions (`resolved:deprecate`, `merge`, `clarify`, `dismiss`, `defer`, `undo`) and `flagged` (a conflict recorded by hand: it resolves nothing) | `--decision resolved:flag` |
| counting | `1 memory`, `2 memories`, `0 errors` | |

Exit codes: [exit_codes.md](exit_codes.md).
"""


def render() -> str:
    import click
    from click.testing import CliRunner

    from dmm.cli import cli

    runner = CliRunner()
    parts = ["# CLI reference\n",
             "Generated from `--help` by `tools/gen_cli_docs.py`; do not edit by hand. Every "
             "command and subcommand is here, in the order `dmm --help` lists them.\n",
             CONVENTIONS]

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
