"""`dmm sync`."""

from __future__ import annotations

import click

from dmm.cli.common import emit_json, json_option, say_history_gap, workspace
from dmm.shellcmd import command as shell_command


@click.command("sync")
@click.option("--remote", help="The remote to sync with (default: the checked-out branch's, "
                               "else origin, else the only one).")
@click.option("--dry-run", is_flag=True, help="Fetch, then say what would be joined, pruned and "
                                              "pushed (branches made and removed on the remote) "
                                              "without doing it.")
@json_option
@click.pass_context
def command(ctx, remote, dry_run, as_json) -> int:
    """Bring this clone up to date with the team's proposals and audit records, and publish
    its own.

    Fetches the remote's dmm/* branches and default branch into remote-tracking refs (every
    dmm command reads them: the team's queue, its decisions and their record), joins the
    audit records of both sides (a merge of two lines of records: none is ever lost; a remote
    line that hides records is refused), prunes proposal branches of this clone that are
    decided (never one checked out, nor the only copy of a commit), and pushes this clone's
    open proposals, its audit records and the removal of proposal branches decided here. The
    push is atomic and never forced; when a teammate pushed meanwhile, sync fetches and tries
    again. It says what it fetched and pushed.

    Your checked-out branch and your files are never touched: sync says how far the branch is
    from its upstream; `git pull` and `git push` stay yours to run.

    \b
    Examples:
      dmm sync
      dmm sync --dry-run
      dmm sync --remote upstream --json
    """
    from dmm.gitrepo import Git
    from dmm.team.sync import sync

    ws = workspace(ctx)
    git = Git(ws.root)
    say_history_gap(git)  # and sync publishes nothing it infers from that history
    report = sync(git, remote, dry_run)
    if as_json:
        emit_json(report.to_dict())
        return 0
    for line in describe(report):
        click.echo(line)
    return 0


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def _push_line(p: dict, dry: bool) -> str:
    """One ref pushed (or, with --dry-run, to be pushed), as a line of describe()."""
    if p["new"] is None:
        return f"  {'would remove' if dry else 'removed'} {p['ref']}: {p['what']}"
    new = p["new"][:12] or "a commit sync makes first"
    if p["old"] is None:
        return f"  {p['ref']} (new): {p['what']}"
    return f"  {p['ref']} {p['old'][:12]}..{new}: {p['what']}"


def describe(report) -> list[str]:
    """The report in sentences, one fact a line."""
    r, f = report.remote, report.fetched
    dry = report.dry_run
    lines = [f"fetched from {r}:"]
    got = []
    if f["new_proposals"]:
        got.append(f"  {len(f['new_proposals'])} new proposal(s): {_ids(f['new_proposals'])}")
    if f["gone_proposals"]:
        got.append(f"  {len(f['gone_proposals'])} proposal branch(es) removed there "
                   f"(decided): {_ids(f['gone_proposals'])}")
    if f["new_records"]:
        got.append(f"  {f['new_records']} new audit record(s)")
    for b in f["branches"]:
        got.append(f"  {b['ref']}: {b['commits']} new commit(s)")
    lines += got or ["  nothing new"]
    if report.joined:
        lines.append(f"{'would join' if dry else 'joined'} this clone's audit records with "
                     f"{r}'s"
                     + (f" (merge {report.joined['commit'][:12]})" if report.joined["commit"]
                        else ""))
    for u in report.updated:
        lines.append(f"{'would update' if dry else 'updated'} dmm/proposals/{u['proposal_id']} to {r}'s "
                     f"{u['new'][:12]} (fixes made there)")
    for p in report.pruned:
        lines.append(f"{'would remove' if dry else 'removed'} the branch dmm/proposals/{p['proposal_id']} "
                     f"({p['decision']})")
    pushes = report.would_push if dry else report.pushed
    if pushes:
        lines.append(f"{'would push' if dry else 'pushed'} to {r}:")
        lines += [_push_line(p, dry) for p in pushes]
    else:
        lines.append(f"{'would push' if dry else 'pushed'} nothing: {r} has everything of "
                     "this clone's")
    for k in report.kept:
        lines.append(f"kept dmm/proposals/{k['proposal_id']} ({k['decision']}): {k['reason']}")
    for n in report.not_pushed:
        branch = n["ref"].removeprefix("refs/heads/")
        line = f"not pushed {branch}: {n['reason']}"
        if n["reason"] == "not a proposal id":  # a branch dmm did not make: never pruned
            line += ("; dmm did not make it and leaves it alone: rename it, or delete it "
                     f"with: {shell_command('git', 'branch', '-D', branch)}")
        lines.append(line)
    for w in report.warnings:
        lines.append(f"warning: {w}")
    for d in report.decided_twice:
        lines.append(f"note: {d['proposal_id']} was decided in two clones before they met "
                     f"({', '.join(d['decisions'])}); both records are kept")
    b = report.branch
    if b and b["behind"]:
        lines.append(f"{b['branch']} is {b['behind']} commit(s) behind {b['upstream']}: "
                     "`git pull` brings the approved memories into your files")
    if b and b["ahead"]:
        lines.append(f"{b['branch']} is {b['ahead']} commit(s) ahead of {b['upstream']}: "
                     "`git push` publishes your approvals")
    return lines
