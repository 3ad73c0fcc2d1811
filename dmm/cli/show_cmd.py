"""`dmm show`."""

from __future__ import annotations

import click

from dmm.cli import complete
from dmm.cli.common import emit_json, json_option, workspace


@click.command("show")
@click.argument("memory", shell_complete=complete.memories)
@json_option
@click.pass_context
def command(ctx: click.Context, memory: str, as_json: bool) -> int:
    """Print one memory, named by its id (mem_2026_03_14_007) or its path.

    A path may be relative to .dmm/memory/, to the repository root or to the current folder.

    \b
    Examples:
      dmm show mem_2026_03_14_007
      dmm show project/api/errors.md --json
    """
    from dmm.index.refresh import open_fresh
    from dmm.lookup import find_memory, memory_record

    ws = workspace(ctx)
    conn, _ = open_fresh(ws)
    try:
        m, problems = find_memory(ws, conn, memory)
    finally:
        conn.close()
    if as_json:
        emit_json(memory_record(m, problems))
    else:
        from dmm.store import text_of

        click.echo(text_of(ws.memory_dir, m.path, ws.config["store"]["max_file_bytes"]),
                   nl=False)
    return 0
