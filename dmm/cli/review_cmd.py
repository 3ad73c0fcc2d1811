"""`dmm review list|show|process|approve|reject|defer|withdraw|stats`."""

from __future__ import annotations

import click

from dmm.cli import complete
from dmm.cli.common import emit_json, json_option, message, say_history_gap, workspace
from dmm.cli.person import at_terminal, confirm, decision, yes_option
from dmm.cli.terminal import no_headers_option, paged, paint_diff, paint_kind, table
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


def _columns(when: str) -> tuple:
    """The proposal id and the memory's path stay; the rest go on a narrow terminal. The
    "by" column names whom it shows: the decider of a closed proposal, the proposer of an
    open one (a list of both says so)."""
    from dmm.cli.tables import Col, short_date

    by = {"decided": "decided by", "proposed": "proposed by"}.get(when, "decider/proposer")
    return (Col("id", "id"), Col("type", drop=3), Col("path", "title"), Col("status", drop=4),
            Col(by, "text", drop=1, min=8), Col(when, short=short_date, drop=2))


@command.command("list")
@click.option("--status", type=click.Choice(["open", "pending", "deferred", "closed", "approved",
                                           "modified", "rejected", "withdrawn", "all"]),
              default="open", show_default=True,
              help="open (pending or deferred), pending, deferred; closed (any decision), "
                   "approved, modified, rejected, withdrawn; all: open and closed.")
@click.option("--sort", type=click.Choice(["date", "path", "id", "status", "type"]),
              help="[default: open ones oldest first, then closed ones newest first]")
@click.option("--reverse", is_flag=True, help="The other way round.")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000))
@no_headers_option
@json_option
@click.pass_context
def list_cmd(ctx, status, sort, reverse, limit, no_headers, as_json) -> int:
    """List proposals: open ones oldest first, then closed ones newest first.

    \b
    Examples:
      dmm review list
      dmm review list --status rejected
      dmm review list --status all --json
      dmm review list --no-headers | cut -f1
    """
    from dmm.gitrepo import Git
    from dmm.proposals.decided import CLOSED, closed_with
    from dmm.proposals.queue import open_proposals

    ws = workspace(ctx)
    git = Git(ws.root)
    say_history_gap(git)
    opened = [] if status in (*CLOSED, "closed") else [
        p for p in open_proposals(git) if status in ("all", "open", p.status)]
    closed = closed_with(git, "closed" if status == "all" else status) if status in (
        *CLOSED, "closed", "all") else []
    records = [p.to_dict() for p in opened] + closed
    if sort:
        field = {"date": "when", "path": "new_path", "id": "proposal_id"}.get(sort, sort)
        records.sort(key=lambda p: p.get("decided_at") or p["proposed_at"] if field == "when"
                     else p[field])
    if reverse:
        records.reverse()
    shown = records[:limit or None]
    if as_json:
        emit_json({"proposals": shown, "total": len(records)})
    elif not records:
        message(f"No {'' if status == 'all' else status + ' '}proposals.")
    else:
        from dmm.proposals.model import known_type

        rows = [(p["proposal_id"], known_type(p["type"]), p["new_path"], p["status"],
                 _by(p),
                 (p.get("decided_at") or p["proposed_at"])[:16].replace("T", " "))
                for p in shown]
        when = "decided" if not opened else "proposed" if not closed else "when"
        with paged():
            click.echo(table(rows, _columns(when), no_headers, colours={3: paint_kind}))
    return 0


def _by(p: dict) -> str:
    """Who decided (with the signature's check when signing is set up), else who proposed."""
    if p.get("decided_by"):
        who = (f"{p['decided_by']} (claimed; committed by {p['committed_by']})"
               if p.get("decided_by_claimed") else p["decided_by"])
        return who + (f" ({p['signature']})" if p.get("signature") else "")
    if p.get("proposed_by_claimed"):  # the branch names them; git shows another author
        return f"{p['proposed_by']} (claimed; committed by {p['committed_by']})"
    return p["proposed_by"]


@command.command("show")
@click.argument("proposal_id", shell_complete=complete.any_proposals)
@json_option
@click.pass_context
def show_cmd(ctx, proposal_id, as_json) -> int:
    """Show one proposal: who, why, its commit and its diff (a decided one too, with its
    decision). Approve what you read with `dmm review approve ID --expect COMMIT`: a commit
    pushed onto the proposal since is then refused.

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
    from dmm.proposals.queue import deferral

    deferred = deferral(git, proposal_id) if proposal.status == "deferred" else None
    if as_json:
        emit_json({**proposal.to_dict(), "deferral": deferred, "diff": diff})
        return 0
    with paged():
        click.echo(f"proposal {proposal.proposal_id} ({proposal.status})")
        click.echo(f"type:     {proposal.type}")
        click.echo(f"path:     {proposal.path}" + (f" -> {proposal.new_path}"
                                                   if proposal.new_path != proposal.path else ""))
        click.echo(f"memory:   {proposal.memory_id}")
        click.echo(f"by:       {_by(proposal.to_dict())} at {proposal.proposed_at}")
        click.echo(f"branch:   dmm/proposals/{proposal.proposal_id}")
        # the whole name: what `approve --expect` takes to approve exactly what was read
        click.echo(f"commit:   {proposal.commit}")
        click.echo(f"reason:   {proposal.reason}")
        for r in proposal.relations:  # the writer's claims: `review process` weighs them
            click.echo(f"declared: {r.relation} {r.memory_id}"
                       + (f' ("{r.note}")' if r.note else ""))
        for problem in proposal.relation_problems:
            click.echo(f"declared: unreadable: {problem}")
        if deferred:
            click.echo(f"deferred: by {deferred['by']} at {deferred['at']}: "
                       f"{deferred['reason']}")
            for issue in deferred["issues"]:
                click.echo(f"          {issue}")
        click.echo("")
        click.echo(paint_diff(diff), nl=False)
    return 0


def _show_closed(git, proposal_id: str, as_json: bool) -> bool:
    """A decided proposal from its record: what was proposed (its diff) and the decision."""
    from dmm.proposals.decided import closed_proposals

    record = next((p for p in closed_proposals(git) if p["proposal_id"] == proposal_id), None)
    if record is None:
        return False
    diff = git.diff(f"{record['commit']}^", record["commit"]) if record["commit"] else ""
    if as_json:
        emit_json({**record, "diff": diff})
        return True
    with paged():
        _print_closed(proposal_id, record, diff)
    return True


def _print_closed(proposal_id: str, record: dict, diff: str) -> None:
    click.echo(f"proposal {proposal_id} ({record['status']} by {_by(record)} at "
               f"{record['decided_at']})")
    click.echo(f"type:     {record['type']}")
    click.echo(f"path:     {record['new_path']}")
    click.echo(f"by:       {record['proposed_by']} at {record['proposed_at']}")
    click.echo(f"reason:   {record['proposal_reason']}")
    click.echo(f"decision: {record['reason']}\n")
    click.echo(paint_diff(diff), nl=False)


def _print_result(result, dry_run: bool = False) -> None:
    would = "would be " if dry_run else ""
    click.echo(f"{result.proposal_id}: {would}{result.decision.upper()} "
               f"(certainty {result.confidence:.2f})")
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
@click.option("--dry-run", is_flag=True,
              help="Say what the reviewer would decide, and change nothing.")
@json_option
@click.pass_context
@decision(lambda proposal_id, all_, id_option, dry_run, **_: None if dry_run else
          "processing every pending proposal" if all_
          else f"processing {proposal_id or id_option}")
def process_cmd(ctx, proposal_id, id_option, all_, limit, force, dry_run, as_json) -> int:
    """Run the automated checks on one proposal (its id) or on --all, and carry out each
    decision.

    Approved and modified proposals are merged into the checked-out branch; rejected ones are
    closed with a record on dmm/audit; deferred ones stay open for a person. With one id it
    exits 1 when the proposal was rejected.

    --all is a batch job (a CI step): it processes every pending proposal it can and reports
    each one it cannot (a branch name that is not a proposal id, a branch without a readable
    proposal, a branch declaring a path outside the store, a proposal stale against the
    checked-out branch, a merge conflict) with the reason and, for a branch to delete, the
    command that deletes it (quoted for the shell), without stopping. It exits 1 only when
    something needs a person: a proposal it could not process or deferred.

    \b
    Examples:
      dmm review process prop_20260111_143052_a1b2
      dmm review process --all --json
      dmm review process --all --dry-run
    """
    from dmm.errors import ExitCode
    from dmm.proposals.batch import process_all
    from dmm.proposals.review import process, review

    if proposal_id and id_option and proposal_id != id_option:
        raise click.UsageError("give the proposal id once")
    proposal_id = proposal_id or id_option
    if bool(proposal_id) == all_:
        raise click.UsageError("give either a proposal id or --all")
    ws = workspace(ctx)
    if proposal_id:
        result = review(ws, proposal_id, force) if dry_run else process(ws, proposal_id, force)
        if as_json:
            emit_json(result.to_dict())
        else:
            _print_result(result, dry_run)
            if dry_run:
                message("nothing was changed (--dry-run)")
        if dry_run:
            return ExitCode.OK
        return ExitCode.PROBLEMS_FOUND if result.decision == "rejected" else ExitCode.OK
    batch = process_all(ws, limit, force, dry_run=dry_run)
    if as_json:
        emit_json(batch.to_dict())
    else:
        if not batch.results and not batch.skipped:
            message("No pending proposals.")
        for result in batch.results:
            _print_result(result, dry_run)
        for skipped in batch.skipped:
            click.echo(f"{skipped.proposal_id or skipped.branch}: NOT PROCESSED "
                       f"({skipped.problem})\n  reason: {skipped.reason}")
        if batch.waiting:
            message(f"{batch.waiting} deferred proposal(s) wait for a person "
                    "(dmm review list --status deferred)")
        if dry_run and batch.results:
            message("nothing was changed (--dry-run)")
        elif batch.needs_person:
            message(f"{batch.needs_person} proposal(s) need a person")
    if dry_run:
        return ExitCode.OK
    return ExitCode.PROBLEMS_FOUND if batch.needs_person else ExitCode.OK


@command.command("approve")
@click.argument("proposal_id", shell_complete=complete.proposals)
@click.option("--bypass-reviewer", is_flag=True,
              help="Approve even if the automated checks find errors (use sparingly).")
@click.option("--reason", default="", help="Why you approve (kept in the merge commit).")
@click.option("--dry-run", is_flag=True,
              help="Run the checks an approval runs and say what they find; merge nothing.")
@click.option("--expect", metavar="COMMIT",
              help="Approve only if the proposal is at this commit, the one `dmm review show` "
                   "printed (all 40 hex digits): a commit pushed onto it since is refused.")
@click.option("--force", is_flag=True,
              help="Approve without being asked what the reviewer would defer (a conflict "
                   "with the store, a baseline change, too many warnings); needed to approve "
                   "such a proposal from a script.")
@yes_option
@json_option
@click.pass_context
# agents are refused by `decision`; the person is asked below, with the commit they approve
@decision(lambda proposal_id, dry_run, **_: None if dry_run else (f"approving {proposal_id}",
                                                                   False), has_yes=True)
def approve_cmd(ctx, proposal_id, bypass_reviewer, reason, dry_run, expect, force, yes,
                as_json) -> int:
    """Approve a proposal as a person: merge it into the checked-out branch.

    The reviewer's checks run first: their errors refuse the approval (unless
    --bypass-reviewer), their warnings are shown. At a terminal you confirm the commit you
    approve (the question names every memory it retires and what the reviewer would defer it
    for), and exactly that commit lands: one pushed onto the proposal while you answer is
    refused. From a script, --expect names the commit you reviewed (`dmm review show` prints
    it), and a proposal the reviewer would defer (`dmm review process ID --dry-run` says why)
    is refused unless --force.

    \b
    Examples:
      dmm review approve prop_20260111_143052_a1b2 --reason "agreed in standup"
      dmm review approve prop_20260111_143052_a1b2 --expect 7e52e6f6ead1... (the full commit)
      dmm review approve prop_20260111_143052_a1b2 --yes --force   (a script, warnings read)
    """
    from dmm.gitrepo import Git
    from dmm.proposals.review import approve_as_person, person_review

    ws = workspace(ctx)
    if dry_run:
        return _approve_dry_run(ws, proposal_id, as_json)
    checked = None if bypass_reviewer else person_review(ws, proposal_id, expect)
    held = checked.held_back if checked else None
    if checked:
        for issue in checked.issues:
            if issue.severity != "info":
                message(f"  {issue}")
    if not yes and at_terminal():
        expect = _confirm_commit(ws, proposal_id, expect, held)
    elif held and not force:
        raise InvalidInputError(
            f"{proposal_id} is one the reviewer would defer ({held}); approving it unasked "
            "needs --force",
            hint=f"read the warnings above (`dmm review process {proposal_id} --dry-run`), "
                 "then approve at a terminal, or again with --force")
    done, notices = approve_as_person(ws, proposal_id, reviewer=Git(ws.root).user_name(),
                                      reason=reason, bypass_reviewer=bypass_reviewer,
                                      expect=expect, checked=checked)
    if as_json:
        emit_json(done.to_dict())
    else:
        message(f"{proposal_id} approved: merged into {done.branch} as {done.commit[:12]}")
    for notice in notices:
        message(notice)
    return 0


def _confirm_commit(ws, proposal_id: str, expect: str | None, held: str | None) -> str:
    """Ask the person to approve the proposal at the commit it is at now (the one --expect
    names, if given), saying what the reviewer would defer it for (``held``); that commit is
    what may land."""
    from dmm.gitrepo import Git
    from dmm.proposals.declared import retired_paths
    from dmm.proposals.decide import check_expected, not_open
    from dmm.proposals.queue import load

    git = Git(ws.root)
    proposal = load(git, proposal_id)
    if proposal is None:
        raise not_open(git, proposal_id)
    check_expected(proposal, expect)
    # what the approval retires, from the branch's diff: a commit added after `review show`
    # (a teammate's, a fetch's) can retire a memory the person never read about
    retired = retired_paths(git, proposal, git.rev_parse("HEAD") or proposal.base)
    confirm(f"approving {proposal_id} at commit {proposal.commit}"
            + (f" (it retires {', '.join(retired)})" if retired else "")
            + (f", which the reviewer would defer: {held}" if held else ""))
    return proposal.commit


def _approve_dry_run(ws, proposal_id: str, as_json: bool) -> int:
    """What `approve` would do: refused on the checks' errors, else merged (with warnings)."""
    from dmm.proposals.review import review

    result = review(ws, proposal_id)
    errors = [str(i) for i in result.issues if i.severity == "error"]
    held = None if errors else result.held_back
    if as_json:
        emit_json({"proposal_id": proposal_id, "would_approve": not errors,
                   "would_ask": held, "issues": [i.to_dict() for i in result.issues],
                   "dry_run": True})
    else:
        click.echo(f"{proposal_id}: " + (
            "approval would be refused (use --bypass-reviewer if you are sure)" if errors
            else f"would be approved once you confirm it (the reviewer would defer it: "
                 f"{held}; from a script: --force)" if held else "would be approved"))
        for issue in result.issues:
            if issue.severity != "info":
                click.echo(f"  {issue}")
        message("nothing was changed (--dry-run)")
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
    from dmm.gitrepo import Git
    from dmm.proposals.decide import withdraw

    ws = workspace(ctx)
    agent = agent_name()  # an agent withdraws only its own; a person, any
    done = withdraw(ws, proposal_id, reason, who=agent or Git(ws.root).user_name(),
                    own_only=agent is not None)
    if as_json:
        emit_json(done.to_dict())
    else:
        message(f"{proposal_id} withdrawn: recorded as {done.commit[:12]} on dmm/audit")
    return 0


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
    from dmm.proposals.decided import stats

    data = stats(Git(workspace(ctx).root))
    if as_json:
        emit_json(data)
    else:
        click.echo(f"open: {data['pending']} pending, {data['deferred']} deferred")
        click.echo("decided: " + (", ".join(f"{n} {d}" for d, n in sorted(
            data["decisions"].items())) or "none yet"))
    return 0
