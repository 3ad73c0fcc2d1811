"""`dmm usage show|top|stale|queries`."""

from __future__ import annotations

import click

from dmm.cli import complete
from dmm.cli.common import WHEN, emit_json, json_option, message, workspace
from dmm.cli.tables import Col, short_date
from dmm.cli.terminal import no_headers_option, paged, table
from dmm.errors import NotFoundError
from dmm.render import count


@click.group("usage")
def command() -> None:
    """Which memories queries return, and which they never do.

    Every `dmm query` is logged in the git folder (dmm/usage.sqlite3): local telemetry,
    never committed (turn it off with [usage] enabled = false in .dmm/config.toml).

    \b
    Columns:
      retrievals     queries that ranked the memory among the task's candidates
      inclusions     of those, the packs it was put in (it fitted the token budget)
      avg relevance  its mean relevance to those tasks (0 to 1)
      last           when a query last returned it

    \b
    Examples:
      dmm usage top --limit 10
      dmm usage stale --older-than 30   (candidates for deprecation)
    """


def _rows(stats: list[dict], no_headers: bool = False) -> str:
    return table([(s["path"], s["total_retrievals"], s["total_inclusions"],
                   float(s["avg_relevance_score"]), (s["last_retrieved_at"] or "never")[:16])
                  for s in stats], (Col("path", "title"), Col("retrievals"),
                                    Col("inclusions", drop=2), Col("avg relevance", drop=1),
                                    Col("last", short=short_date, drop=3)), no_headers)


@command.command("show")
@click.argument("memory_id", metavar="MEMORY", shell_complete=complete.memories)
@no_headers_option
@json_option
@click.pass_context
def show_cmd(ctx, memory_id, no_headers, as_json) -> int:
    """Usage statistics of one memory (zeros when no query returned it yet). MEMORY is an id
    or a path (a memory removed since is named by its id).

    \b
    Examples:
      dmm usage show mem_2026_03_14_007
    """
    from dmm.usage.log import memory_stats

    from dmm.errors import DmmError
    from dmm.index.refresh import open_fresh
    from dmm.lookup import find_memory

    ws = workspace(ctx)
    conn, _ = open_fresh(ws)
    try:
        found = find_memory(ws, conn, memory_id)[0]
    except DmmError:
        found = None
    finally:
        conn.close()
    stats = memory_stats(ws, found.id if found else memory_id)
    if not stats and found is None:
        raise NotFoundError(f"no memory {memory_id!r}: not in the store, and no query ever "
                            "returned a memory of that id",
                            hint="`dmm list` shows the memories, by id and path")
    if not stats:
        stats = [_never(found.id, found.path)]
    if as_json:
        emit_json(stats[0])
    else:
        click.echo(_rows(stats, no_headers))
    return 0


@command.command("top")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000))
@no_headers_option
@json_option
@click.pass_context
def top_cmd(ctx, limit, no_headers, as_json) -> int:
    """The most retrieved memories (candidates for promotion).

    \b
    Examples:
      dmm usage top --limit 10
    """
    from dmm.usage.log import memory_stats

    ws = workspace(ctx)
    stats = memory_stats(ws, top=limit or 0)  # the most retrieved first, a page in SQL
    if as_json:
        emit_json({"memories": stats, "total": len(stats)})
    elif stats:
        with paged():
            click.echo(_rows(stats, no_headers))
    else:
        message("No queries logged yet.")
    return 0


@command.command("stale")
@click.option("--older-than", "days", type=WHEN, default="30", show_default=True,
              help="Not returned by any query since then (or never), and in the store since "
                   "before then: DAYS ago or a DATE.")
@click.option("--days", "old_days", type=click.IntRange(min=0, max=100_000), hidden=True)
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000),
              help="At most this many memories, by path.")
@no_headers_option
@json_option
@click.pass_context
def stale_cmd(ctx, days, old_days, limit, no_headers, as_json) -> int:
    """Active memories no query has returned lately (candidates for deprecation). A memory
    newer than the window is not one: nobody had the time to need it. When none is stale, it
    says how many were returned in the window and how many are newer than it (`younger` in
    --json).

    \b
    Examples:
      dmm usage stale --older-than 90
      dmm usage stale --older-than 2026-06-01
    """
    import datetime as dt

    days = old_days if old_days is not None else days
    from dmm.index.refresh import open_fresh
    from dmm.usage.log import memory_stats

    ws = workspace(ctx)
    conn, _ = open_fresh(ws)
    try:
        active = conn.execute("SELECT id, path, created FROM memories WHERE status = 'active' "
                              "AND scope != 'baseline' ORDER BY path").fetchall()
    finally:
        conn.close()
    stats = {s["memory_id"]: s for s in memory_stats(ws)}
    stale, younger = [], 0
    cutoff = dt.date.today() - dt.timedelta(days=days)
    for mid, path, created in active:
        if created and dt.date.fromisoformat(str(created)[:10]) > cutoff:
            younger += 1  # newer than the window: not judged yet
            continue
        s = stats.get(mid)
        if s is None or s["days_since_last_retrieval"] >= days:
            stale.append(s or _never(mid, path))
    returned = len(active) - younger - len(stale)
    stale = stale[:limit]
    if as_json:
        emit_json({"memories": stale, "total": len(stale), "days": days, "younger": younger})
        return 0
    window = f"in the last {count(days, 'day')}"
    if stale:
        with paged():
            click.echo(_rows(stale, no_headers))
    if stale and younger:  # left out of the rows, not judged fresh
        message(f"{count(younger, 'active memory', 'active memories')} added {window} "
                f"{'is' if younger == 1 else 'are'} not judged yet")
    if not stale:
        message(f"No stale memory: {returned} returned by a query {window}, "
                f"{younger} added {window}." if active else "The store holds no active "
                "memories to judge (baseline ones are never stale).")
    return 0


def _never(memory_id: str, path: str) -> dict:
    """The statistics of a memory no query returned yet."""
    return {"memory_id": memory_id, "path": path, "total_retrievals": 0, "total_inclusions": 0,
            "inclusion_rate": 0.0, "avg_relevance_score": 0.0, "last_retrieved_at": None,
            "first_retrieved_at": None, "days_since_last_retrieval": None}


@command.command("queries")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000), default=50, show_default=True)
@click.option("--newer-than", type=WHEN, help="Only queries since then: DAYS ago or a DATE.")
@click.option("--after", hidden=True)  # the old spelling: an ISO 8601 time
@no_headers_option
@json_option
@click.pass_context
def queries_cmd(ctx, limit, newer_than, after, no_headers, as_json) -> int:
    """The most recent queries, newest first.

    \b
    Examples:
      dmm usage queries --newer-than 7
      dmm usage queries --newer-than 2026-11-01 --no-headers
    """
    import datetime as dt

    from dmm.usage.log import queries

    if newer_than is not None:
        after = (dt.date.today() - dt.timedelta(days=newer_than)).isoformat()
    ws = workspace(ctx)
    rows = queries(ws, limit, after)
    if as_json:
        emit_json({"queries": rows, "total": len(rows)})
    elif rows:
        click.echo(table([(r["timestamp"][:19], r["retrieved_count"], r["tokens_used"],
                           r["duration_ms"], r["query_text"]) for r in rows],
                         (Col("when", short=short_date, drop=4), Col("retrieved", drop=3),
                          Col("tokens", drop=1), Col("ms", drop=2), Col("query", "title")),
                         no_headers))
    else:
        message("No queries logged yet.")
    return 0
