"""`dmm list` (also `dmm ls`)."""

from __future__ import annotations

import click

from dmm.cli.common import (WHEN, emit_json, emit_json_stream, json_option, message,
                             workspace)
from dmm.cli.tables import Col
from dmm.cli.terminal import no_headers_option, paged, table
from dmm.memory.model import SCOPES
from dmm.memory.select import SORTS, Selection

# on a narrow terminal the id, the title and the path stay; status (usually the one asked
# for), priority, tokens, scope (the path's first folder) and created go, in that order
COLUMNS = (Col("id", "id"), Col("scope", drop=4), Col("status", drop=1),
           Col("created", drop=5), Col("priority", drop=2), Col("tokens", drop=3),
           Col("title", "title"), Col("path", "path", min=20))


@click.command("list")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES),
              help="Only this scope (repeat for several).")
@click.option("--tag", "tags", multiple=True, metavar="TAG",
              help="Only memories with this tag (repeat, or TAG,TAG: all of them).")
@click.option("--grep", "words", multiple=True, metavar="TEXT",
              help="Only memories whose title, text, tags or path contain TEXT, in any case "
                   "(repeat: all of them). `dmm search WORDS` is the same.")
@click.option("--status", type=click.Choice(["active", "deprecated", "all"]), default="active",
              show_default=True)
@click.option("--under", metavar="FOLDER", default="",
              help="Only memories in this folder (relative to .dmm/memory/, e.g. project/api, "
                   "to the repository root or to the current folder).")
@click.option("--older-than", type=WHEN,
              help="Only memories created before then: DAYS ago (180) or a DATE (2026-01-31).")
@click.option("--newer-than", type=WHEN,
              help="Only memories created since then: DAYS ago or a DATE.")
@click.option("--sort", type=click.Choice(SORTS), default="path", show_default=True)
@click.option("--reverse", is_flag=True, help="Largest, newest or last first.")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000))
@no_headers_option
@json_option
@click.pass_context
def command(ctx, scopes, tags, words, status, under, older_than, newer_than, sort, reverse,
            limit, no_headers, as_json) -> int:
    """The memories of the store, filtered and sorted (`dmm ls` for short).

    \b
    Examples:
      dmm list --scope baseline
      dmm list --tag api --sort created --reverse
      dmm list --under project/billing --older-than 180
      dmm list --status deprecated --json
      dmm list --grep retry --grep "status 413"
    """
    from dmm.index import read
    from dmm.index.refresh import open_fresh
    from dmm.lookup import memory_record

    ws = workspace(ctx)
    if under:
        under = ws.memory_relpath(under)  # as every option that names memories takes a path
    tags = [t.strip() for tag in tags for t in tag.split(",") if t.strip()]
    chosen = Selection(list(scopes), tags, status, under, older_than, newer_than, sort,
                       reverse, list(words))
    conn, _ = open_fresh(ws)
    try:
        if as_json and limit is None:  # all of them: written as they are read
            streamed = 0

            def records():
                nonlocal streamed
                for m in read.iter_listing(conn, chosen):
                    streamed += 1
                    yield memory_record(m, content=False)

            emit_json_stream({}, "memories", records(), lambda: {"total": streamed})
            return 0
        shown, total = read.listing(conn, chosen, limit)
        empty_store = not total and not read.counts(conn).get("total")
    finally:
        conn.close()
    if as_json:
        emit_json({"memories": [memory_record(m, content=False) for m in shown],
                   "total": total})
        return 0
    rows = [(m.id, m.scope, m.status, str(m.created or ""), m.priority, m.tokens, m.title,
             m.path) for m in shown]
    if not rows and not no_headers:
        message("The store holds no memories yet." if empty_store else "No memories match.")
        return 0
    if rows:
        with paged():
            click.echo(table(rows, COLUMNS, no_headers))
    if len(shown) < total:
        message(f"... and {total - len(shown)} more (--limit)")
    return 0
