"""`dmm log`."""

from __future__ import annotations

import click

from dmm.audit import EVENTS
from dmm.cli import complete
from dmm.cli.common import emit_json, json_option, message, workspace
from dmm.cli.terminal import no_headers_option, paint_kind, table


@click.command("log")
@click.option("--path", help="Only events about this memory file (relative to .dmm/memory/, "
                             "to the repository root or to the current folder).",
              shell_complete=complete.memories)
@click.option("--memory", "memory_id", help="Only events naming this memory (its id).",
              shell_complete=complete.memories)
@click.option("--decision", type=click.Choice(EVENTS), metavar="EVENT",
              help="Only this event: " + ", ".join(EVENTS) + ".")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000), default=50, show_default=True)
@no_headers_option
@json_option
@click.pass_context
def command(ctx, path, memory_id, decision, limit, no_headers, as_json) -> int:
    """The audit log: every proposal, decision and conflict resolution, who, when, why and the
    commit, newest first.

    Read from git alone (commit trailers on your branch, dmm/audit and dmm/proposals/*), so
    `git log --first-parent` tells the same story of approvals. An event that names several
    memories (a merge of two conflicting memories) is listed under each of them.

    \b
    Examples:
      dmm log --limit 10
      dmm log --memory mem_2026_01_10_001
      dmm log --decision resolved:deprecate --json
    """
    from dmm.audit import entries
    from dmm.gitrepo import Git

    ws = workspace(ctx)
    if path:
        path = ws.memory_relpath(path)
    found = entries(Git(ws.root), path=path, memory=memory_id, decision=decision, limit=limit)
    if as_json:
        emit_json({"entries": [e.to_dict() for e in found], "total": len(found)})
        return 0
    if not found:
        message("No dmm events match." if path or memory_id or decision else
                "No dmm events yet.")
        return 0
    rows = []
    for e in found:
        if e.conflict_id and not e.proposal_id:  # a conflict resolution, committed directly
            what, about = ", ".join(e.memory_ids), e.conflict_id
        else:
            moved = f" -> {e.new_path}" if e.new_path and e.new_path != e.path else ""
            what, about = f"{e.type} {e.path}{moved}", e.proposal_id
        rows.append((e.commit[:12], e.date[:16].replace("T", " "), e.event, what, about, e.who,
                     (e.reason or "").strip().split("\n")[0]))
    click.echo(table(rows, ("commit", "date", "event", "change", "proposal or conflict", "by",
                            "reason"), no_headers, colours={2: paint_kind}))
    return 0
