"""`dmm log`."""

from __future__ import annotations

import click

from dmm.cli.common import emit_json, json_option, message, workspace


@click.command("log")
@click.option("--path", help="Only events about this memory file (relative to .dmm/memory/).")
@click.option("--memory", "memory_id", help="Only events about this memory id.")
@click.option("--decision", help="Only this event: proposed, approved, modified, rejected, "
                                 "deferred, withdrawn.")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000), default=50, show_default=True)
@json_option
@click.pass_context
def command(ctx, path, memory_id, decision, limit, as_json) -> int:
    """The audit log: every proposal and decision, who, when, why and the commit, newest first.

    Read from git alone (commit trailers on your branch, dmm/audit and dmm/proposals/*), so
    `git log --first-parent` tells the same story of approvals.
    """
    from dmm.audit import entries
    from dmm.gitrepo import Git

    ws = workspace(ctx)
    found = entries(Git(ws.root), path=path, memory=memory_id, decision=decision, limit=limit)
    if as_json:
        emit_json({"entries": [e.to_dict() for e in found], "total": len(found)})
        return 0
    if not found:
        message("No dmm events yet.")
    for e in found:
        where = e.path + (f" -> {e.new_path}" if e.new_path and e.new_path != e.path else "")
        click.echo(f"{e.commit[:12]} {e.date[:19]} {e.event:<10} {e.type:<9} {where}  "
                   f"({e.proposal_id}) by {e.reviewer or e.trailers.get('Dmm-Proposed-By') or e.who}")
        if e.reason:
            click.echo(f"    {e.reason.splitlines()[0]}")
    return 0
