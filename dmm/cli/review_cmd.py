"""`dmm review list|show|process|approve|reject|defer|withdraw|stats`."""

from __future__ import annotations

import click

from dmm.cli import complete
from dmm.cli.common import emit_json, json_option, message, workspace
from dmm.cli.person import decision
from dmm.cli.terminal import no_headers_option, paint_diff, paint_kind, table
from dmm.errors import InvalidInputError


@click.group("review")
def command() -> None:
    """Review proposed memory changes. The queue is the set of dmm/proposals/* branches.

    \b
    Examples:
      dmm review list
      dmm review show prop_20260111_143052_a1b2      (with the diff)
      dmm review process --all                        (automated checks, then decide)
      dmm review approve prop_20260111_143052_a1b2    (a person's decision)
    """


@command.command("list")
@click.option("--status", type=click.Choice(["pending", "deferred", "all", "approved", "modified",
                                           "rejected", "withdrawn", "closed"]),
              default="all", show_default=True,
              help="Open ones (pending, deferred, all of them) or decided ones (approved, "
                   "modified, rejected, withdrawn, closed: any decision).")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000), default=100, show_default=True)
@no_headers_option
@json_option
@click.pass_context
def list_cmd(ctx, status, limit, no_headers, as_json) -> int:
    """List open proposals, oldest first; with a decided --status, closed ones, newest first.

    \b
    Examples:
      dmm review list
      dmm review list --status rejected
      dmm review list --no-headers | cut -f1
    """
    from dmm.gitrepo import Git
    from dmm.proposals.queue import CLOSED, closed_with, open_proposals

    ws = workspace(ctx)
    if status in (*CLOSED, "closed"):
        closed = closed_with(Git(ws.root), status)
        if as_json:
            emit_json({"proposals": closed[:limit], "total": len(closed)})
        elif not closed:
            message(f"No {status} proposals.")
        else:
            click.echo(table([(p["proposal_id"], p["type"], p["new_path"], p["status"],
                               p["decided_by"], p["decided_at"][:16]) for p in closed[:limit]],
                             ("id", "type", "path", "status", "by", "decided"), no_headers,
                             fit=2, colours={3: paint_kind}))
        return 0
    props = [p for p in open_proposals(Git(ws.root)) if status in ("all", p.status)]
    shown = props[:limit]
    if as_json:
        emit_json({"proposals": [p.to_dict() for p in shown], "total": len(props)})
    elif not props:
        message("No open proposals.")
    else:
        click.echo(table([(p.proposal_id, p.type, p.new_path, p.status, p.proposed_by,
                           p.proposed_at[:16]) for p in shown],
                         ("id", "type", "path", "status", "by", "proposed"), no_headers,
                         fit=2, colours={3: paint_kind}))
    return 0


@command.command("show")
@click.argument("proposal_id", shell_complete=complete.proposals)
@json_option
@click.pass_context
def show_cmd(ctx, proposal_id, as_json) -> int:
    """Show one proposal: who, why, and its diff (a decided one too, with its decision).

    \b
    Examples:
      dmm review show prop_20260111_143052_a1b2
    """
    from dmm.gitrepo import Git
    from dmm.proposals.decide import not_open
    from dmm.proposals.queue import load

    ws = workspace(ctx)
    git = Git(ws.root)
    proposal = load(git, proposal_id)
    if proposal is None:
        if _show_closed(git, proposal_id, as_json):
            return 0
        raise not_open(git, proposal_id)
    diff = git.diff(proposal.base, proposal.commit)
    if as_json:
        emit_json({**proposal.to_dict(), "diff": diff})
    else:
        click.echo(f"proposal {proposal.proposal_id} ({proposal.status})")
        click.echo(f"type:     {proposal.type}")
        click.echo(f"path:     {proposal.path}" + (f" -> {proposal.new_path}"
                                                   if proposal.new_path != proposal.path else ""))
        click.echo(f"memory:   {proposal.memory_id}")
        click.echo(f"by:       {proposal.proposed_by} at {proposal.proposed_at}")
        click.echo(f"branch:   dmm/proposals/{proposal.proposal_id} ({proposal.commit[:12]})")
        click.echo(f"reason:   {proposal.reason}\n")
        click.echo(paint_diff(diff), nl=False)
    return 0


def _show_closed(git, proposal_id: str, as_json: bool) -> bool:
    """A decided proposal from its record: what was proposed (its diff) and the decision."""
    from dmm.proposals.queue import closed_proposals

    record = next((p for p in closed_proposals(git) if p["proposal_id"] == proposal_id), None)
    if record is None:
        return False
    diff = git.diff(f"{record['commit']}^", record["commit"]) if record["commit"] else ""
    if as_json:
        emit_json({**record, "diff": diff})
        return True
    click.echo(f"proposal {proposal_id} ({record['status']} by {record['decided_by']} at "
               f"{record['decided_at']})")
    click.echo(f"type:     {record['type']}")
    click.echo(f"path:     {record['new_path']}")
    click.echo(f"by:       {record['proposed_by']} at {record['proposed_at']}")
    click.echo(f"reason:   {record['proposal_reason']}")
    click.echo(f"decision: {record['reason']}\n")
    click.echo(paint_diff(diff), nl=False)
    return True


def _print_result(result) -> None:
    click.echo(f"{result.proposal_id}: {result.decision.upper()} "
               f"(confidence {result.confidence:.2f})")
    for issue in result.issues:
        click.echo(f"  {issue}")
    if result.reason:
        click.echo(f"  reason: {result.reason}")
    if result.committed:
        click.echo(f"  recorded as {result.committed['commit'][:12]} on "
                   f"{result.committed['branch']}")
    for notice in result.notices:
        message(notice)


@command.command("process")
@click.argument("proposal_id", required=False, metavar="[PROPOSAL_ID]",
                shell_complete=complete.proposals)
@click.option("--id", "id_option", hidden=True)  # the old spelling, kept for scripts
@click.option("--all", "all_", is_flag=True, help="Process every pending proposal.")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000),
              help="At most this many (with --all).")
@click.option("--force", is_flag=True,
              help="Approve proposals whose warnings would defer them (errors still reject).")
@json_option
@click.pass_context
@decision(lambda proposal_id, all_, id_option, **_: "processing every pending proposal" if all_
          else f"processing {proposal_id or id_option}")
def process_cmd(ctx, proposal_id, id_option, all_, limit, force, as_json) -> int:
    """Run the automated checks on one proposal (its id) or on --all, and carry out each
    decision.

    Approved and modified proposals are merged into the checked-out branch; rejected ones are
    closed with a record on dmm/audit; deferred ones stay open for a person. Exits 1 when a
    proposal was rejected, so a script or CI job notices.

    \b
    Examples:
      dmm review process prop_20260111_143052_a1b2
      dmm review process --all --json
    """
    from dmm.proposals.review import process, process_pending

    if proposal_id and id_option and proposal_id != id_option:
        raise click.UsageError("give the proposal id once")
    proposal_id = proposal_id or id_option
    if bool(proposal_id) == all_:
        raise click.UsageError("give either a proposal id or --all")
    ws = workspace(ctx)
    results = ([process(ws, proposal_id, force)] if proposal_id
               else process_pending(ws, limit, force))
    if as_json:
        emit_json(results[0].to_dict() if proposal_id else
                  {"processed": len(results), "results": [r.to_dict() for r in results]})
    else:
        if not results:
            message("No pending proposals.")
        for result in results:
            _print_result(result)
    from dmm.errors import ExitCode

    rejected = any(r.decision == "rejected" for r in results)
    return ExitCode.PROBLEMS_FOUND if rejected else ExitCode.OK


@command.command("approve")
@click.argument("proposal_id", shell_complete=complete.proposals)
@click.option("--bypass-reviewer", is_flag=True,
              help="Approve even if the automated checks find errors (use sparingly).")
@click.option("--reason", default="", help="Why you approve (kept in the merge commit).")
@json_option
@click.pass_context
@decision(lambda proposal_id, **_: f"approving {proposal_id}")
def approve_cmd(ctx, proposal_id, bypass_reviewer, reason, as_json) -> int:
    """Approve a proposal as a person: merge it into the checked-out branch.

    \b
    Examples:
      dmm review approve prop_20260111_143052_a1b2 --reason "agreed in standup"
    """
    from dmm.gitrepo import Git
    from dmm.proposals.review import approve_as_person

    ws = workspace(ctx)
    done, notices = approve_as_person(ws, proposal_id, reviewer=Git(ws.root).user_name(),
                                      reason=reason, bypass_reviewer=bypass_reviewer)
    if as_json:
        emit_json(done.to_dict())
    else:
        message(f"{proposal_id} approved: merged into {done.branch} as {done.commit[:12]}")
    for notice in notices:
        message(notice)
    return 0


def _close(ctx, proposal_id: str, decision: str, reason: str, as_json: bool) -> int:
    from dmm.gitrepo import Git
    from dmm.proposals import decide

    if not reason.strip():
        raise InvalidInputError("--reason is required: say why")
    ws = workspace(ctx)
    done = decide.close(ws, proposal_id, decision=decision, reviewer=Git(ws.root).user_name(),
                        reason=reason)
    if as_json:
        emit_json(done.to_dict())
    else:
        message(f"{proposal_id} {decision}: recorded as {done.commit[:12]} on dmm/audit")
    return 0


@command.command("reject")
@click.argument("proposal_id", shell_complete=complete.proposals)
@click.option("--reason", required=True, help="Why (the proposer reads this).")
@json_option
@click.pass_context
@decision(lambda proposal_id, **_: f"rejecting {proposal_id}")
def reject_cmd(ctx, proposal_id, reason, as_json) -> int:
    """Reject a proposal: its branch is closed, a record stays on dmm/audit.

    \b
    Examples:
      dmm review reject prop_20260111_143052_a1b2 --reason "we keep two spaces"
    """
    return _close(ctx, proposal_id, "rejected", reason, as_json)


@command.command("defer")
@click.argument("proposal_id", shell_complete=complete.proposals)
@click.option("--reason", required=True, help="What needs deciding.")
@json_option
@click.pass_context
@decision(lambda proposal_id, **_: f"deferring {proposal_id}")
def defer_cmd(ctx, proposal_id, reason, as_json) -> int:
    """Defer a proposal to a person: recorded on dmm/audit, the branch stays open.

    \b
    Examples:
      dmm review defer prop_20260111_143052_a1b2 --reason "ask the API owners"
    """
    return _close(ctx, proposal_id, "deferred", reason, as_json)


@command.command("withdraw")
@click.argument("proposal_id", shell_complete=complete.proposals)
@click.option("--reason", required=True, help="Why it is no longer wanted.")
@json_option
@click.pass_context
def withdraw_cmd(ctx, proposal_id, reason, as_json) -> int:
    """Withdraw your own proposal: closed like a rejection, recorded on dmm/audit. (An agent
    may withdraw the proposals it made, never anyone else's.)

    \b
    Examples:
      dmm review withdraw prop_20260111_143052_a1b2 --reason "proposed the wrong file"
    """
    from dmm.agents.identity import agent_name

    agent = agent_name()
    if agent is not None:
        from dmm.agents.mcp_calls import withdraw

        done = withdraw(workspace(ctx), proposal_id, reason, who=agent)
        if as_json:
            emit_json(done)
        else:
            message(f"{proposal_id} withdrawn: recorded as {done['commit'][:12]} on dmm/audit")
        return 0
    return _close(ctx, proposal_id, "withdrawn", reason, as_json)


@command.command("stats")
@json_option
@click.pass_context
def stats_cmd(ctx, as_json) -> int:
    """Counts of open proposals and of past decisions.

    \b
    Examples:
      dmm review stats
      dmm review stats --json
    """
    from dmm.gitrepo import Git
    from dmm.proposals.queue import stats

    data = stats(Git(workspace(ctx).root))
    if as_json:
        emit_json(data)
    else:
        click.echo(f"open: {data['pending']} pending, {data['deferred']} deferred")
        click.echo("decided: " + (", ".join(f"{n} {d}" for d, n in sorted(
            data["decisions"].items())) or "none yet"))
    return 0
