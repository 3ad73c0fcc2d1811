"""`dmm conflicts scan|list|show|check|flag|dismiss|stats`."""

from __future__ import annotations

import click

from dmm.cli.common import emit_json, json_option, message, progress_bar, workspace
from dmm.conflicts.model import METHODS, STATUSES, TYPES
from dmm.errors import ExitCode, InvalidInputError, NotFoundError


def _open(ctx):
    from dmm.index.refresh import open_fresh

    ws = workspace(ctx)
    progress, finish = progress_bar("indexing memories")
    try:
        conn, _ = open_fresh(ws, progress)
    finally:
        finish()
    return ws, conn


def _ids(raw: str) -> list[str]:
    return [i.strip() for i in raw.split(",") if i.strip()]


@click.group("conflicts")
def command() -> None:
    """Find and inspect conflicts between memories: contradictions, duplicates, broken
    supersession chains, the same rule in two scopes, facts made stale by newer memories.

    \b
    Examples:
      dmm conflicts scan --full
      dmm conflicts list
      dmm conflicts check --memories mem_2026_01_01_001,mem_2026_02_01_004
      dmm conflicts dismiss conflict_1a2b3c4d5e6f --reason "different services"
    """


@command.command("scan")
@click.option("--full", is_flag=True, help="Scan every pair (default: only memories changed "
                                           "since the last scan).")
@click.option("--since", metavar="COMMIT", help="Scan the memories changed since this commit.")
@click.option("--memory", metavar="ID", help="Scan one memory against the store.")
@click.option("--methods", metavar="LIST",
              help=f"Comma-separated analyzers to run (default all): {', '.join(METHODS[:-1])}.")
@json_option
@click.pass_context
def scan_cmd(ctx, full, since, memory, methods, as_json) -> int:
    """Scan for conflicts and store them (the git hooks run this after memory commits)."""
    from dmm.conflicts.service import run_scan

    ws, conn = _open(ctx)
    try:
        result = run_scan(ws, conn, full=full, since=since, memory=memory,
                          methods=_ids(methods) if methods else None)
    finally:
        conn.close()
    if as_json:
        emit_json(result.to_dict())
    else:
        message(f"{result.scan_type} scan of {result.memories_scanned} memories in "
                f"{result.duration_ms} ms: {result.conflicts_detected} conflict(s), "
                f"{result.conflicts_new} new")
        for kind, n in sorted(result.by_type.items()):
            message(f"  {kind}: {n}")
    return 0


def _line(c) -> str:
    a, b = c.memories[0], c.memories[1]
    return (f"{c.conflict_id}  {c.type:<13} {c.confidence:.2f}  {c.status:<10} "
            f"{a.memory_id} <> {b.memory_id}  {a.title[:40]!r} / {b.title[:40]!r}")


@command.command("list")
@click.option("--status", type=click.Choice(STATUSES + ("all",)), default="unresolved",
              show_default=True, help="Which conflicts (dismissed ones only on request).")
@click.option("--type", "type_", type=click.Choice(TYPES))
@click.option("--memory", metavar="ID", help="Only conflicts involving this memory.")
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=0.0)
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@click.pass_context
def list_cmd(ctx, status, type_, memory, min_confidence, limit, as_json) -> int:
    """List conflicts, most confident first (scanning changed memories first)."""
    from dmm.conflicts.service import conflicts, stats

    ws, conn = _open(ctx)
    try:
        chosen, total = conflicts(ws, conn, [memory] if memory else None, status=status,
                                  type_=type_, min_confidence=min_confidence, limit=limit)
        summary = stats(ws, conn) if as_json else None
    finally:
        conn.close()
    if as_json:
        emit_json({"conflicts": [c.to_dict() for c in chosen], "total": total,
                   "stats": summary})
    elif not chosen:
        message("No conflicts.")
    else:
        for c in chosen:
            click.echo(_line(c))
        if total > len(chosen):
            message(f"... and {total - len(chosen)} more (--limit)")
    return 0


@command.command("show")
@click.argument("conflict_id")
@json_option
@click.pass_context
def show_cmd(ctx, conflict_id, as_json) -> int:
    """Show one conflict: both memories, the evidence and any decision."""
    from dmm.conflicts.service import conflicts

    ws, conn = _open(ctx)
    try:
        found, _ = conflicts(ws, conn, conflict_id=conflict_id)
    finally:
        conn.close()
    if not found:
        raise NotFoundError(f"no conflict {conflict_id}", hint="`dmm conflicts list --status all`")
    c = found[0]
    if as_json:
        emit_json(c.to_dict())
        return 0
    click.echo(f"{c.conflict_id}: {c.type} ({c.status}), confidence {c.confidence:.2f}, "
               f"found by {', '.join(c.methods)}")
    click.echo(c.description)
    for m in c.memories:
        click.echo(f"  {m.role:<9} {m.memory_id}  {m.scope:<9} {m.created or ''}  {m.path}")
    click.echo(f"evidence: {c.evidence}")
    if c.decision:
        click.echo(f"decision: {c.decision['status']} by {c.decision.get('by')} at "
                   f"{c.decision.get('at')}: {c.decision.get('reason')}")
    return 0


@command.command("check")
@click.option("--memories", required=True, metavar="ID,ID,...",
              help="The memories you are about to rely on.")
@json_option
@click.pass_context
def check_cmd(ctx, memories, as_json) -> int:
    """Check whether any of these memories conflict (exit 1 if they do)."""
    from dmm.conflicts.service import conflicts

    ids = _ids(memories)
    if not ids:
        raise InvalidInputError("--memories needs at least one memory id")
    ws, conn = _open(ctx)
    try:
        found, _ = conflicts(ws, conn, ids, status="unresolved")
    finally:
        conn.close()
    if as_json:
        emit_json({"has_conflicts": bool(found), "conflicts": [c.to_dict() for c in found]})
    elif found:
        for c in found:
            click.echo(_line(c))
    else:
        message("No conflicts among these memories.")
    return ExitCode.PROBLEMS_FOUND if found else ExitCode.OK


@command.command("flag")
@click.option("--memories", required=True, metavar="ID,ID", help="The two memories.")
@click.option("--description", required=True, help="What contradicts what.")
@click.option("--type", "type_", type=click.Choice(TYPES), default="contradictory",
              show_default=True)
@json_option
@click.pass_context
def flag_cmd(ctx, memories, description, type_, as_json) -> int:
    """Flag a conflict you noticed by hand (committed under .dmm/conflicts/)."""
    from dmm.conflicts.service import record_decision

    ws, conn = _open(ctx)
    try:
        cid, commit = record_decision(ws, conn, status="flagged", ids=_ids(memories),
                                      reason=description, description=description, type_=type_)
    finally:
        conn.close()
    if as_json:
        emit_json({"conflict_id": cid, "created": True, "commit": commit})
    else:
        click.echo(cid)
        message(f"flagged {cid} (committed as {commit[:12]})")
    return 0


@command.command("dismiss")
@click.argument("conflict_id")
@click.option("--reason", required=True, help="Why this is not a conflict.")
@json_option
@click.pass_context
def dismiss_cmd(ctx, conflict_id, reason, as_json) -> int:
    """Dismiss a conflict as a false positive; the pair is never reported again."""
    from dmm.conflicts.service import conflicts, record_decision

    ws, conn = _open(ctx)
    try:
        found, _ = conflicts(ws, conn, conflict_id=conflict_id)
        if not found:
            raise NotFoundError(f"no conflict {conflict_id}")
        ids = [m.memory_id for m in found[0].memories]
        cid, commit = record_decision(ws, conn, status="dismissed", ids=ids, reason=reason,
                                      description=found[0].description, type_=found[0].type)
    finally:
        conn.close()
    if as_json:
        emit_json({"success": True, "conflict_id": cid, "action_taken": "dismiss",
                   "commit": commit})
    else:
        message(f"dismissed {cid} (committed as {commit[:12]})")
    return 0


@command.command("stats")
@json_option
@click.pass_context
def stats_cmd(ctx, as_json) -> int:
    """Counts of conflicts by type, detection method and status, and the last scans."""
    from dmm.conflicts import store
    from dmm.conflicts.service import stats

    ws, conn = _open(ctx)
    try:
        data = stats(ws, conn)
        data["recent_scans"] = store.scans(conn, 5)
    finally:
        conn.close()
    if as_json:
        emit_json(data)
        return 0
    click.echo(f"{data['total']} conflicts, average confidence {data['average_confidence']}")
    for key in ("by_type", "by_method", "by_status"):
        click.echo(f"{key.replace('_', ' ')}: " + (", ".join(
            f"{k} {v}" for k, v in sorted(data[key].items())) or "none"))
    if data["recent_scans"]:
        s = data["recent_scans"][0]
        click.echo(f"last scan: {s['scan_type']} at {s['started_at']}, {s['duration_ms']} ms")
    return 0
