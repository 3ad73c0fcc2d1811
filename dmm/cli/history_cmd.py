"""`dmm history`."""

from __future__ import annotations

import click

from dmm.cli import complete
from dmm.cli.common import emit_json, json_option, message, workspace
from dmm.cli.tables import Col, short_commit, short_date
from dmm.cli.terminal import no_headers_option, paged, paint_kind, table
from dmm.errors import NotFoundError


@click.command("history")
@click.argument("memory", shell_complete=complete.memories)
@no_headers_option
@json_option
@click.pass_context
def command(ctx, memory, no_headers, as_json) -> int:
    """One memory's whole life: every commit that changed it, following moves (promotions,
    deprecations), with the proposal and decision behind each change. MEMORY is an id or a
    path.

    \b
    Examples:
      dmm history mem_2026_03_14_007
      dmm history project/api/errors.md --json
    """
    from dmm.audit import history
    from dmm.gitrepo import Git
    from dmm.index import read
    from dmm.index.refresh import open_fresh

    ws = workspace(ctx)
    git = Git(ws.root)
    path = memory
    if "/" in memory or memory.endswith(".md"):
        path = ws.memory_relpath(memory)
    else:
        conn, _ = open_fresh(ws)
        try:
            found = read.find(conn, memory)
        finally:
            conn.close()
        if not found:
            raise NotFoundError(f"no memory with id {memory} in the working tree",
                                hint="give the path of a removed memory instead")
        path = found[0].path
    events = history(git, path)
    if as_json:
        emit_json({"path": path, "history": [e.to_dict() for e in events]})
        return 0
    if not events:
        message(f"git has no commit of {path}")
        return 0
    with paged():
        click.echo(table([(e.commit[:12], e.date[:16].replace("T", " "), e.who, e.path,
                           e.decision or "", e.subject) for e in events],
                         (Col("commit", "id", short=short_commit),
                          Col("date", short=short_date, drop=3), Col("by", "text", drop=2, min=8),
                          Col("path", "path", drop=4, min=16), Col("decision", drop=1),
                          Col("change", "title")), no_headers, colours={4: paint_kind}))
    return 0
