"""`dmm conflicts resolve|dismiss|undo`: resolving conflicts, one commit (or proposal) each;
the commands join the `dmm conflicts` group (conflicts_cmd.py)."""

from __future__ import annotations

import click

from dmm.cli import complete
from dmm.cli.common import (emit_json, json_option, message, open_index, read_text_input,
                            workspace)
from dmm.cli.person import decision
from dmm.conflicts.model import TYPES
from dmm.errors import ExitCode, InvalidInputError
from dmm.memory.model import SCOPES


def _batch_options(f):
    """What names several conflicts at once: ids, or a filter over the open ones."""
    f = click.option("--dry-run", is_flag=True,
                     help="Show which conflicts it would decide; change nothing.")(f)
    f = click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES),
                     help="Instead of ids: every open conflict one of whose memories is in "
                          "this scope (repeat for several; with --type, both must hold).")(f)
    f = click.option("--type", "type_", type=click.Choice(TYPES),
                     help="Instead of ids: every open conflict of this type.")(f)
    return click.argument("conflict_ids", nargs=-1, metavar="[CONFLICT_ID]...",
                          shell_complete=complete.conflicts)(f)


def _what(verb: str):
    """What a batch command decides, for the person's confirmation (decision)."""
    def describe(conflict_ids, type_, scopes, dry_run, **_):
        if dry_run:
            return None
        if conflict_ids:
            return f"{verb} {', '.join(conflict_ids)}"
        return f"{verb} every open conflict" + (f" of type {type_}" if type_ else "") + (
            f" in {', '.join(scopes)}" if scopes else "")
    return describe


@click.command("dismiss")
@_batch_options
@click.option("--reason", required=True, help="Why these are not conflicts.")
@json_option
@click.pass_context
@decision(_what("dismissing"))
def dismiss_cmd(ctx, conflict_ids, type_, scopes, dry_run, reason, as_json) -> int:
    """Dismiss conflicts as false positives; a dismissed pair is never reported again.
    Several at once (ids, or --type/--scope for every open one that matches) are one commit.
    (One is the same as `dmm conflicts resolve CONFLICT_ID --action dismiss`.)

    \b
    Examples:
      dmm conflicts dismiss conflict_1a2b3c4d5e6f --reason "different services"
      dmm conflicts dismiss conflict_1a2b3c4d5e6f conflict_0f9e8d7c6b5a --reason "..."
      dmm conflicts dismiss --type duplicate --scope ephemeral --dry-run --reason "notes"
    """
    from dmm.conflicts.resolver import ResolutionRequest

    if len(conflict_ids) == 1 and not (type_ or scopes or dry_run):
        return _resolve_one(ctx, ResolutionRequest(conflict_ids[0], "dismiss", reason), False,
                            as_json)
    return _batch(ctx, "dismiss", reason, conflict_ids, type_, scopes, dry_run, None, as_json)


@click.command("defer")
@_batch_options
@click.option("--until", metavar="DATE",
              help="The day (YYYY-MM-DD) the conflicts are open again (default: until "
                   "someone decides).")
@click.option("--reason", required=True, help="What is missing to decide.")
@json_option
@click.pass_context
@decision(_what("deferring"))
def defer_cmd(ctx, conflict_ids, type_, scopes, dry_run, until, reason, as_json) -> int:
    """Defer conflicts: hidden from the open list until DATE (--until), then unresolved
    again; without --until, until someone decides. Several at once are one commit.

    \b
    Examples:
      dmm conflicts defer conflict_1a2b3c4d5e6f --until 2026-12-15 --reason "after the audit"
      dmm conflicts defer --scope ephemeral --until 2026-12-01 --reason "sprint notes"
    """
    return _batch(ctx, "defer", reason, conflict_ids, type_, scopes, dry_run, until, as_json)


def _batch(ctx, action: str, reason: str, ids, type_, scopes, dry_run: bool,
           until: str | None, as_json: bool) -> int:
    from dmm.conflicts.service import decide_many

    ws, conn = open_index(ctx)
    try:
        found, result = decide_many(ws, conn, action, reason, ids=list(ids), type_=type_,
                                    scopes=list(scopes), until=until, dry_run=dry_run)
    finally:
        conn.close()
    if as_json:
        emit_json({"dry_run": dry_run, "conflicts": [c.to_dict() for c in found],
                   "result": result.to_dict() if result else None})
        return 0
    verb = {"dismiss": "dismissed", "defer": "deferred"}[action]
    for c in found:
        click.echo(f"{c.conflict_id}  {c.type}  "
                   f"{' <> '.join(m.memory_id for m in c.memories)}")
    if not found:
        message(f"No open conflict matches: nothing {verb}.")
    elif result is None:
        message(f"would be {verb}: {len(found)} (--dry-run; nothing was changed)")
    else:
        message(f"{verb} {len(found)} in one commit {result.commit[:12]} on {result.branch}"
                + (f", until {result.until}" if result.until else ""))
    return 0


# --- resolution -------------------------------------------------------------------------------

def _clarifications(raw: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in raw:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(f"--clarify takes MEMORY_ID=TEXT, got {item!r}")
        out[key.strip()] = text.strip()
    return out


def _report(result, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
        return
    where = (f"proposal {result.proposal_id} on {result.branch}" if result.proposal_id
             else f"commit {result.commit[:12]} on {result.branch}")
    message(f"{result.action_taken} {result.conflict_id}: {where}")
    # an undo's changed files are the resolution's, put back as they were
    changed = "restored" if result.action_taken == "undo" else "modified"
    for label, ids in (("deprecated", result.memories_deprecated),
                       ("created", result.memories_created),
                       (changed, result.memories_modified)):
        for i in ids:
            message(f"  {label}: {i}")


def _resolve_one(ctx, request, propose: bool, as_json: bool) -> int:
    from dmm.conflicts.service import resolve

    ws, conn = open_index(ctx)
    try:
        result = resolve(ws, conn, request, propose=propose)
    finally:
        conn.close()
    _report(result, as_json)
    return 0


def _merge_content(ctx, conflict_id: str) -> str:
    """No merged content given: open a draft combining both memories in $EDITOR."""
    import sys

    from dmm.conflicts.resolver import merge_draft
    from dmm.conflicts.service import memories_of, one

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InvalidInputError("merge needs the merged memory: pass --content or --file "
                                "(an editor opens only on a terminal)")
    ws, conn = open_index(ctx)
    try:
        conflict = one(ws, conn, conflict_id)
        mems = memories_of(conn, [conflict])
    finally:
        conn.close()
    a, b = (mems[m.memory_id] for m in conflict.memories)
    edited = click.edit(merge_draft(a, b), extension=".md", require_save=True)
    if not edited or not edited.strip():
        raise InvalidInputError("merge cancelled: the draft was not saved")
    return edited


@click.command("resolve")
@click.argument("conflict_id", required=False, shell_complete=complete.conflicts)
@click.option("--action", type=click.Choice(["deprecate", "merge", "clarify", "dismiss", "defer"]),
              help="What to do (with CONFLICT_ID).")
@click.option("--target", metavar="MEMORY", help="deprecate: the memory to retire (id or path).",
              shell_complete=complete.conflict_memories)
@click.option("--content", help="merge: the merged memory (markdown body, or a whole file).")
@click.option("--file", "file_", type=click.Path(dir_okay=False, allow_dash=True),
              help="merge: read the merged memory from a file ('-' for stdin).")
@click.option("--path", "merge_path", metavar="PATH",
              help="merge: where the merged memory goes (default: beside the newer one).")
@click.option("--clarify", "clarify", multiple=True, metavar="MEMORY_ID=TEXT",
              shell_complete=complete.clarifications,
              help="clarify: the scope or condition to add to a memory (repeatable).")
@click.option("--until", metavar="DATE",
              help="defer: the day (YYYY-MM-DD) the conflict is open again (default: until "
                   "someone decides).")
@click.option("--reason", help="Why (recorded in the commit; required with CONFLICT_ID).")
@click.option("--propose", is_flag=True,
              help="Open a proposal branch that goes through review instead of committing.")
@click.option("--auto", "auto_", is_flag=True,
              help="Resolve every conflict that dates, the memories' confidence and structure "
                   "settle.")
@click.option("--dry-run", is_flag=True, help="--auto: show the plan, change nothing.")
@click.option("--min-confidence", "old_min", type=click.FloatRange(0, 1), hidden=True)
@click.option("--min-score", "min_confidence", type=click.FloatRange(0, 1),
              help="--auto: leave conflicts detected less surely than this "
                   "(default: conflicts.auto_min_confidence).")
@click.option("--yes", "-y", is_flag=True,
              help="--auto: do not ask before committing several resolutions at a terminal.")
@click.option("--interactive", "-i", is_flag=True,
              help="Walk through open conflicts on a terminal and decide each one. With "
                   "--auto: first resolve what dates settle, then ask about the rest.")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES),
              help="--auto, --interactive: only conflicts one of whose memories is in this "
                   "scope (repeat for several).")
@json_option
@click.pass_context
@decision(lambda conflict_id, action, propose, auto_, dry_run, interactive, **_:
          None if propose or dry_run else ("resolving conflicts one by one", False)
          if interactive and not auto_ else ("resolving what dates settle, then asking "
                                             "about the rest", False)
          if interactive else ("resolving every conflict dates settle (--auto)", False)
          if auto_ else f"resolving {conflict_id} ({action})", has_yes=True)
def resolve_cmd(ctx, conflict_id, action, target, content, file_, merge_path, clarify, until,
                reason, propose, auto_, dry_run, old_min, min_confidence, yes, interactive,
                scopes, as_json) -> int:
    """Resolve a conflict, as one commit on the checked-out branch (or, with --propose, as a
    proposal for review). Nothing is deleted: deprecated memories move to deprecated/ and
    `dmm conflicts undo` reverts any resolution.

    \b
    Actions:
      deprecate  retire --target; the other memory gains it in `supersedes`
      merge      a new memory (--content/--file, or an editor) supersedes both
      clarify    add --clarify MEMORY_ID=TEXT to one or both so they no longer conflict
      dismiss    a false positive: never reported again
      defer      needs more context: hidden from the open list until --until DATE
                 (or until someone decides)

    \b
    Examples:
      dmm conflicts resolve conflict_1a2b3c4d5e6f --action deprecate \\
          --target mem_2025_01_10_001 --reason "replaced by the 2026 rule"
      dmm conflicts resolve conflict_1a2b3c4d5e6f --action clarify \\
          --clarify mem_2025_01_10_001="Python files" \\
          --clarify mem_2025_02_01_004="Makefiles" --reason "different file types"
      dmm conflicts resolve conflict_1a2b3c4d5e6f --action defer --until 2026-12-15 \\
          --reason "after the security audit"
      dmm conflicts resolve --auto --dry-run --scope project
      dmm conflicts resolve --interactive
      dmm conflicts resolve --auto --interactive
    """
    from dmm.conflicts.resolver import ResolutionRequest

    if conflict_id and (auto_ or interactive) or not (conflict_id or auto_ or interactive):
        raise InvalidInputError("give one of: a CONFLICT_ID with --action, --auto, "
                                "--interactive, or --auto --interactive")
    min_confidence = old_min if min_confidence is None else min_confidence
    if (dry_run or min_confidence is not None) and not auto_:
        raise InvalidInputError("--dry-run and --min-score go with --auto")
    if scopes and conflict_id:
        raise InvalidInputError("--scope goes with --auto or --interactive")
    if until and action != "defer":
        raise InvalidInputError("--until goes with --action defer")
    if auto_ and interactive:
        if dry_run or as_json:
            raise InvalidInputError("--auto --interactive asks at a terminal: without "
                                    "--dry-run and --json")
        from dmm.cli.resolve_interactive import auto_then_ask

        return auto_then_ask(ctx, lambda: _auto(ctx, False, min_confidence, False, yes,
                                                list(scopes)), list(scopes))
    if auto_:
        return _auto(ctx, dry_run, min_confidence, as_json, yes, list(scopes))
    if interactive:
        from dmm.cli.resolve_interactive import walk

        return walk(ctx, list(scopes))
    if not action:
        raise InvalidInputError("--action is required: deprecate, merge, clarify, dismiss or "
                                "defer")
    if not reason or not reason.strip():
        raise InvalidInputError("--reason is required: say why this resolves the conflict")
    if file_ is not None:
        content = read_text_input(file_)
    if action == "merge" and content is None:
        content = _merge_content(ctx, conflict_id)
    request = ResolutionRequest(conflict_id, action, reason, target=target, content=content,
                                path=merge_path, clarifications=_clarifications(clarify),
                                until=until)
    return _resolve_one(ctx, request, propose, as_json)


def _auto(ctx, dry_run: bool, min_confidence: float | None, as_json: bool,
          yes: bool = False, scopes: list[str] | None = None) -> int:
    from dmm.conflicts.resolver import ResolutionRequest
    from dmm.conflicts.service import auto_plan, resolve
    from dmm.errors import DmmError

    ws, conn = open_index(ctx)
    results, failed, declined = {}, 0, False
    try:
        steps = auto_plan(ws, conn, min_confidence, scopes)
        if not (dry_run or yes or as_json) and not _confirmed([s for s in steps if s.action]):
            dry_run = declined = True  # the person said no: the plan, as a dry run shows it
        for step in steps:
            if dry_run or not step.action:
                continue
            request = ResolutionRequest(step.conflict.conflict_id, step.action, step.why,
                                        target=step.target, resolved_by="dmm-auto")
            try:
                results[step.conflict.conflict_id] = resolve(
                    ws, conn, request, conflict=step.conflict).to_dict()
            except DmmError as exc:
                failed += 1
                results[step.conflict.conflict_id] = {"success": False, "error": exc.message}
    finally:
        conn.close()
    acted = [s for s in steps if s.action]
    if as_json:
        emit_json({"dry_run": dry_run,
                   "resolved": [{**s.to_dict(), "result": results.get(s.conflict.conflict_id)}
                                for s in acted],
                   "left_for_a_person": [s.to_dict() for s in steps if not s.action]})
    else:
        verb = "would deprecate" if dry_run else "deprecated"
        for s in acted:
            outcome = results.get(s.conflict.conflict_id, {})
            state = f"FAILED: {outcome['error']}" if outcome.get("success") is False else verb
            click.echo(f"{s.conflict.conflict_id}  {state} {s.target}, keep {s.keep}: {s.why}")
        for s in steps:
            if not s.action:
                hint = f" (suggested: {s.recommendation})" if s.recommendation else ""
                click.echo(f"{s.conflict.conflict_id}  left for a person: {s.why}{hint}")
        message(f"{len(acted)} {'to resolve' if dry_run else 'resolved'}"
                f"{f', {failed} failed' if failed else ''}; "
                f"{len(steps) - len(acted)} left for a person"
                + ("; nothing was changed" + ("" if declined else " (--dry-run)")
                   if dry_run else ""))
    return ExitCode.PROBLEMS_FOUND if failed else ExitCode.OK


def _confirmed(acting: list) -> bool:
    """At a terminal, several commits at once wait for a yes (--yes answers it); scripts,
    with no terminal, are not asked."""
    import sys

    if len(acting) < 2 or not (sys.stdin.isatty() and sys.stdout.isatty()):
        return True
    for s in acting:
        click.echo(f"{s.conflict.conflict_id}  deprecate {s.target}, keep {s.keep}: {s.why}")
    return click.confirm(f"Commit these {len(acting)} resolutions (one commit each)?",
                         default=False, err=True)


@click.command("undo")
@click.argument("conflict_id", shell_complete=complete.decided_conflicts)
@click.option("--reason", required=True, help="Why the resolution is undone.")
@json_option
@click.pass_context
@decision(lambda conflict_id, **_: f"undoing the resolution of {conflict_id}")
def undo_cmd(ctx, conflict_id, reason, as_json) -> int:
    """Revert the latest resolution of a conflict with a new commit; it is open again.

    Refuses when a file the resolution changed has changed since (undoing would lose that
    work): edit those memories by hand instead.

    \b
    Examples:
      dmm conflicts undo conflict_1a2b3c4d5e6f --reason "deprecated the wrong one"
    """
    from dmm.conflicts.service import undo

    result = undo(workspace(ctx), conflict_id, reason)
    _report(result, as_json)
    return 0
