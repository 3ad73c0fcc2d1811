"""`dmm list` (also `dmm ls`)."""

from __future__ import annotations

import click

from dmm.cli.common import (WHEN, emit_json, emit_json_stream, json_option, message,
                             workspace)
from dmm.cli.tables import Col
from dmm.cli.terminal import no_headers_option, paged, table
from dmm.memory.model import SCOPES
from dmm.memory.select import SORTS, Selection

# on a narrow terminal the id, the scope, the title and the path stay (a path cut in its
# middle: its first folder and its file name); status (usually the one asked for), priority,
# tokens and created go, in that order
COLUMNS = (Col("id", "id"), Col("scope"), Col("status", drop=1),
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

    A memory file with errors is not in the store: a note on stderr names it (`invalid` in
    --json), and `dmm validate` says what is wrong. --under a folder that does not exist is
    an error (exit 5), as it is for `dmm validate`.

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
    from dmm.lookup import memory_record, missing_path

    ws = workspace(ctx)
    if under:
        given, under = under, ws.memory_relpath(under)  # as every option naming memories
        if not (ws.memory_dir / under).is_dir():  # a typo lists nothing: say so, as validate
            raise missing_path(ws, given, under)
    tags = [t.strip() for tag in tags for t in tag.split(",") if t.strip()]
    chosen = Selection(list(scopes), tags, status, under, older_than, newer_than, sort,
                       reverse, list(words))
    conn, _ = open_fresh(ws)
    try:
        # a file with errors has no fields to filter on but its folder (its scope's)
        invalid = [p for p in read.invalid_paths(conn, under)
                   if not scopes or p.split("/")[0] in scopes]
        if as_json and limit is None:  # all of them: written as they are read
            _say_invalid(invalid)
            streamed = 0

            def records():
                nonlocal streamed
                for m in read.iter_listing(conn, chosen):
                    streamed += 1
                    yield memory_record(m, content=False)

            emit_json_stream({}, "memories", records(),
                             lambda: {"total": streamed, "invalid": invalid})
            return 0
        shown, total = read.listing(conn, chosen, limit)
        empty_store = not total and not read.counts(conn).get("total")
    finally:
        conn.close()
    _say_invalid(invalid)
    if as_json:
        emit_json({"memories": [memory_record(m, content=False) for m in shown],
                   "total": total, "invalid": invalid})
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


def _say_invalid(paths: list[str]) -> None:
    """Name the memory files no listing can show (their errors keep them out of the store)."""
    from dmm.render import count, some

    if paths:
        message(f"note: {count(len(paths), 'memory file')} with errors "
                f"{'is' if len(paths) == 1 else 'are'} not listed ({some(paths)}): "
                "`dmm validate` says what is wrong")
