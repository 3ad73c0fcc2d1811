"""`dmm reindex`."""

from __future__ import annotations

import time

import click

from dmm.cli.common import emit_json, json_option, message, progress_bar, workspace
from dmm.render import count


@click.command("reindex")
@json_option
@click.pass_context
def command(ctx: click.Context, as_json: bool) -> int:
    """Rebuild the cache (in the git folder) from the memory files, and bring the semantic
    index up to date (embedding only memories whose text it has never seen).

    Never needed for correctness (every command refreshes the cache itself, re-reading only
    changed files, and the background process embeds changed memories); use it after
    upgrading dmm, to time a full build, or to embed a large store with a progress bar.
    Deleting the cache (.git/dmm/cache.sqlite3) is always safe.

    \b
    Examples:
      dmm reindex
    """
    from dmm.index.refresh import rebuild

    ws = workspace(ctx)
    started = time.perf_counter()
    progress, finish = progress_bar("indexing memories")
    try:
        conn, report = rebuild(ws, progress)
    finally:
        finish()
    try:
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        errors = conn.execute("SELECT count(DISTINCT path) FROM problems WHERE severity = 'error'"
                              ).fetchone()[0]
        from dmm.semantic.service import build_now

        progress, finish = progress_bar("embedding memories", min_items=20)
        try:
            embedded, why = build_now(ws, conn, progress)
        finally:
            finish()
        if embedded is not None:
            from dmm.semantic import model

            model_id, _derived, slower = model.variant()
        else:
            model_id = slower = None
    finally:
        conn.close()
    seconds = time.perf_counter() - started
    if as_json:
        emit_json({"files": report.files, "memories": memories, "files_with_errors": errors,
                   "embedded": embedded, "model": model_id, "seconds": round(seconds, 3)})
    else:
        message(f"indexed {count(memories, 'memory')} from {count(report.files, 'file')} in "
                f"{seconds:.2f} s"
                + (f"; {count(errors, 'file')} with errors: run `dmm validate`" if errors else "")
                + (f"; {count(embedded, 'memory')} embedded" if embedded else ""))
        from dmm.semantic.model import cache_dir_note

        if cache_dir_note():
            message(f"note: {cache_dir_note()}")
        if why:
            message(f"note: no semantic index: {why}")
        elif embedded and slower:
            message(f"note: embedded with the float32 model, twice the CPU of the int8 one: "
                    f"{slower}")
    return 0
