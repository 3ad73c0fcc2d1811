"""`dmm edit`: open a memory in $EDITOR, then propose the edited text as an update."""

from __future__ import annotations

import sys

import click

from dmm.cli import complete
from dmm.cli.common import json_option, message, workspace
from dmm.errors import InvalidInputError


@click.command("edit")
@click.argument("memory", shell_complete=complete.memories)
@click.option("--reason", help="Why this change is needed (kept in git; asked on a terminal).")
@click.option("--proposed-by", metavar="NAME",
              help="Who proposes [default: your git user name on a terminal, else agent].")
@json_option
@click.pass_context
def command(ctx, memory, reason, proposed_by, as_json) -> int:
    """Open MEMORY (an id or a path) in $EDITOR and propose what you save as an update: a
    proposal branch for review, as `dmm write update` makes. Nothing is proposed when the
    text is left unchanged.

    \b
    Examples:
      dmm edit mem_2026_03_14_007
      dmm edit project/api/errors.md --reason "now RFC 9457"
    """
    from dmm.cli.write_cmd import _submit
    from dmm.index.refresh import open_fresh
    from dmm.lookup import find_memory
    from dmm.store import text_of

    ws = workspace(ctx)
    conn, _ = open_fresh(ws)
    try:
        found, _ = find_memory(ws, conn, memory)
    finally:
        conn.close()
    before = text_of(ws.memory_dir, found.path, ws.config["store"]["max_file_bytes"])
    after = click.edit(before, extension=".md", require_save=True)
    if after is None or after == before:
        message(f"{found.path} is unchanged: nothing was proposed")
        return 0
    if not after.strip():
        raise InvalidInputError("the editor left the memory empty: nothing was proposed",
                                hint="to retire it, use `dmm write deprecate --memory ...`")
    if not reason:
        if not sys.stdin.isatty():
            raise InvalidInputError("--reason is required: say why this change is needed")
        reason = click.prompt("Reason for the change", err=True)
    return _submit(ctx, as_json, type="update", path=found.path, reason=reason, content=after,
                   proposed_by=proposed_by)
