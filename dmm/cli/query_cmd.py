"""`dmm query`."""

from __future__ import annotations

import sys

import click

from dmm.cli.common import emit_json, json_option, workspace
from dmm.errors import InvalidInputError
from dmm.memory.model import SCOPES

MAX_BUDGET = 1_000_000  # tokens: far beyond any context window, and safe for SQLite integers


@click.command("query")
@click.argument("task")
@click.option("--budget", type=click.IntRange(min=1, max=MAX_BUDGET), metavar="TOKENS",
              help="Token budget of the pack, baseline included [default: query.default_budget "
                   "in .dmm/config.toml, 1200].")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES[1:]),
              help="Only retrieve memories of this scope (repeatable). Baseline is always in.")
@click.option("--tags", default="", metavar="TAG,TAG",
              help="Only retrieve memories carrying at least one of these tags.")
@click.option("--exclude-ephemeral", is_flag=True, help="Leave out ephemeral memories.")
@click.option("--include-deprecated", is_flag=True,
              help="Also consider deprecated memories (left out by default).")
@json_option
@click.pass_context
def command(ctx: click.Context, task: str, budget: int | None, scopes: tuple[str, ...],
            tags: str, exclude_ephemeral: bool, include_deprecated: bool, as_json: bool) -> int:
    """Print the Memory Pack for TASK: the memories an agent needs for it.

    The pack holds every baseline memory in full, then the active memories most relevant to
    TASK (ranked by relevance, priority and confidence) until the token budget is used;
    memories that did not fit are listed as excluded. Describe the task in a sentence; use
    "-" to read it from stdin.

    \b
    Examples:
      dmm query "add pagination to the orders endpoint" --budget 1200
      dmm query "how do we release?" --scope project --json
    """
    import time

    from dmm.index.refresh import open_fresh
    from dmm.query.pack import PackOptions, build_pack

    started = time.perf_counter()

    if task == "-":
        task = sys.stdin.read()
    # bytes that are not UTF-8 (from a file or a shell variable) are replaced, not a crash
    task = task.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if not task.strip():
        raise InvalidInputError("the task is empty: describe what you are about to do")
    ws = workspace(ctx)
    query_cfg = ws.config["query"]
    opts = PackOptions(budget=budget or int(query_cfg["default_budget"]), scopes=scopes,
                       tags=tuple(t.strip() for t in tags.split(",") if t.strip()),
                       exclude_ephemeral=exclude_ephemeral, include_deprecated=include_deprecated)
    conn, _ = open_fresh(ws)
    try:
        pack = build_pack(conn, task.strip(), opts, query_cfg, ws.conflicts_dir)
    finally:
        conn.close()
    if ws.config["usage"]["enabled"]:
        _log_usage(ws, pack, int((time.perf_counter() - started) * 1000))
    if as_json:
        emit_json(pack.to_dict())
    else:
        from dmm.render import render

        click.echo(render("pack.md.j2", pack=pack, stats=pack.stats()), nl=False)
    return 0


def _log_usage(ws, pack, duration_ms: int) -> None:
    """Telemetry must never cost the agent its Memory Pack: failures are only reported."""
    import sqlite3

    from dmm.usage.log import log_query

    try:
        log_query(ws.index_dir, pack, duration_ms)
    except (sqlite3.Error, OSError) as exc:
        click.echo(f"warning: usage not logged: {exc}", err=True)
