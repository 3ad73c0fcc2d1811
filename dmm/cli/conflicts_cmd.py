"""`dmm conflicts scan|list|show|check|flag|dismiss|stats|resolve|undo`."""

from __future__ import annotations

import click

from dmm.cli import complete
from dmm.cli.common import (emit_json, json_option, message, progress_bar, read_text_input,
                            workspace)
from dmm.cli.person import decision
from dmm.cli.terminal import no_headers_option
from dmm.conflicts.model import METHODS, STATUSES, TYPES
from dmm.errors import ExitCode, InvalidInputError, NotFoundError
from dmm.lookup import memory_ids


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
      dmm conflicts resolve conflict_1a2b3c4d5e6f --action deprecate \\
          --target mem_2026_01_01_001 --reason "replaced by the February rule"
      dmm conflicts resolve --auto --dry-run
    """


@command.command("scan")
@click.option("--full", is_flag=True, help="Scan every pair (default: only memories changed "
                                           "since the last scan).")
@click.option("--since", metavar="COMMIT", help="Scan the memories changed since this commit.")
@click.option("--memory", metavar="MEMORY",
              help="Scan one memory (its id or path) against the store.",
              shell_complete=complete.memories)
@click.option("--methods", metavar="LIST",
              help=f"Comma-separated analyzers to run (default all): {', '.join(METHODS[:-1])}.")
@json_option
@click.pass_context
def scan_cmd(ctx, full, since, memory, methods, as_json) -> int:
    """Scan for conflicts and store them (the git hooks run this after memory commits).

    \b
    Examples:
      dmm conflicts scan
      dmm conflicts scan --full --json
      dmm conflicts scan --memory project/api/errors.md
    """
    from dmm.conflicts.service import run_scan

    ws, conn = _open(ctx)
    try:
        if memory:
            memory = memory_ids(ws, conn, [memory])[0]
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
        for artifact in result.artifacts:
            message(f"  left out, {artifact['count']} finding(s): {artifact['why']}")
    return 0


def _table(found, no_headers: bool = False) -> str:
    """Conflicts one per row; on a terminal the titles get whatever width is left."""
    from dmm.cli.terminal import paint_kind, table

    rows = [(c.conflict_id, c.type, c.confidence, c.status,
             f"{c.memories[0].memory_id} <> {c.memories[1].memory_id}",
             f"{c.memories[0].title} / {c.memories[1].title}") for c in found]
    return table(rows, ("conflict", "type", "confidence", "status", "memories", "titles"),
                 no_headers, colours={1: paint_kind})


@command.command("list")
@click.option("--status", type=click.Choice(STATUSES + ("all",)), default="unresolved",
              show_default=True, help="Which conflicts (dismissed ones only on request).")
@click.option("--type", "type_", type=click.Choice(TYPES))
@click.option("--memory", metavar="MEMORY",
              help="Only conflicts involving this memory (its id or path).",
              shell_complete=complete.memories)
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=0.0)
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000), default=50, show_default=True)
@no_headers_option
@json_option
@click.pass_context
def list_cmd(ctx, status, type_, memory, min_confidence, limit, no_headers, as_json) -> int:
    """List conflicts, most confident first (scanning changed memories first).

    \b
    Examples:
      dmm conflicts list
      dmm conflicts list --type duplicate --min-confidence 0.7
      dmm conflicts list --status all --no-headers
    """
    from dmm.conflicts.service import conflicts, stats

    ws, conn = _open(ctx)
    try:
        chosen, total = conflicts(ws, conn, memory_ids(ws, conn, [memory]) if memory else None,
                                  status=status,
                                  type_=type_, min_confidence=min_confidence, limit=limit)
        summary = stats(ws, conn, scan=False) if as_json else None  # list just scanned
    finally:
        conn.close()
    if as_json:
        emit_json({"conflicts": [c.to_dict() for c in chosen], "total": total,
                   "stats": summary})
    elif not chosen:
        message("No conflicts.")
    else:
        click.echo(_table(chosen, no_headers))
        if total > len(chosen):
            message(f"... and {total - len(chosen)} more (--limit)")
    return 0


@command.command("show")
@click.argument("conflict_id", shell_complete=complete.conflicts)
@json_option
@click.pass_context
def show_cmd(ctx, conflict_id, as_json) -> int:
    """Show one conflict: the evidence, both memories side by side, any decision, and the
    commands that would resolve it.

    \b
    Examples:
      dmm conflicts show conflict_1a2b3c4d5e6f
    """
    from dmm.conflicts.service import conflicts, memories_of

    ws, conn = _open(ctx)
    try:
        found, _ = conflicts(ws, conn, conflict_id=conflict_id)
        texts = memories_of(conn, found[:1])
    finally:
        conn.close()
    if not found:
        raise NotFoundError(f"no conflict {conflict_id}", hint="`dmm conflicts list --status all`")
    c = found[0]
    if as_json:
        emit_json(c.to_dict())
        return 0
    from dmm.cli.terminal import paint, paint_kind

    click.echo(f"{paint(c.conflict_id, bold=True)}: {paint_kind(c.type)} ({c.status}), "
               f"confidence {c.confidence:.2f}, found by {', '.join(c.methods)}")
    click.echo(c.description)
    click.echo(f"evidence: {c.evidence}")
    a, b = (texts.get(m.memory_id) for m in c.memories)
    if a and b:
        import shutil

        from dmm.cli.resolve_interactive import side_by_side

        click.echo("")
        click.echo(side_by_side(a, b, shutil.get_terminal_size((100, 24)).columns))
        click.echo("")
    else:
        for m in c.memories:
            click.echo(f"  {m.role:<9} {m.memory_id}  {m.scope:<9} {m.created or ''}  {m.path}")
    if c.decision:
        click.echo(f"decision: {c.decision['status']} by {c.decision.get('by')} at "
                   f"{c.decision.get('at')}: {c.decision.get('reason')}")
    if c.status in ("unresolved", "flagged"):
        older = c.memories[-1].memory_id  # the newer (or superseding) memory is listed first
        cid = c.conflict_id
        click.echo("to resolve it (each is one commit; add --propose to make it a proposal):")
        for line in (f'dmm conflicts resolve {cid} --action deprecate --target {older} '
                     '--reason "..."',
                     f'dmm conflicts resolve {cid} --action merge --file merged.md '
                     '--reason "..."',
                     f'dmm conflicts resolve {cid} --action clarify --clarify {older}="..." '
                     '--reason "..."',
                     f'dmm conflicts dismiss {cid} --reason "why they do not conflict"',
                     "dmm conflicts resolve --interactive"):
            click.echo(f"  {line}")
    return 0


@command.command("check")
@click.option("--memories", required=True, metavar="MEMORY,MEMORY,...",
              shell_complete=complete.memories,
              help="The memories you are about to rely on (ids or paths).")
@json_option
@click.pass_context
def check_cmd(ctx, memories, as_json) -> int:
    """Check whether any of these memories conflict (exit 1 if they do).

    \b
    Examples:
      dmm conflicts check --memories mem_2026_01_10_001,project/api/errors.md
    """
    from dmm.conflicts.service import check

    ws, conn = _open(ctx)
    try:
        found = check(ws, conn, memory_ids(ws, conn, _ids(memories)))
    finally:
        conn.close()
    if as_json:
        emit_json({"has_conflicts": bool(found), "conflicts": [c.to_dict() for c in found]})
    elif found:
        click.echo(_table(found))
    else:
        message("No conflicts among these memories.")
    return ExitCode.PROBLEMS_FOUND if found else ExitCode.OK


@command.command("flag")
@click.option("--memories", required=True, metavar="MEMORY,MEMORY",
              help="The two memories (ids or paths).",
              shell_complete=complete.memories)
@click.option("--description", required=True, help="What contradicts what.")
@click.option("--type", "type_", type=click.Choice(TYPES), default="contradictory",
              show_default=True)
@json_option
@click.pass_context
def flag_cmd(ctx, memories, description, type_, as_json) -> int:
    """Flag a conflict you noticed by hand (committed under .dmm/conflicts/).

    \b
    Examples:
      dmm conflicts flag --memories project/a.md,project/b.md --description "two retry limits"
    """
    from dmm.conflicts.service import flag

    ws, conn = _open(ctx)
    try:
        cid, commit = flag(ws, conn, ids=memory_ids(ws, conn, _ids(memories)),
                           description=description, type_=type_)
    finally:
        conn.close()
    if as_json:
        emit_json({"conflict_id": cid, "created": commit is not None, "commit": commit})
    else:
        click.echo(cid)
        message(f"flagged {cid} (committed as {commit[:12]})" if commit else
                f"{cid} is flagged already: nothing new to commit")
    return 0


@command.command("dismiss")
@click.argument("conflict_id", shell_complete=complete.conflicts)
@click.option("--reason", required=True, help="Why this is not a conflict.")
@json_option
@click.pass_context
@decision(lambda conflict_id, **_: f"dismissing {conflict_id}")
def dismiss_cmd(ctx, conflict_id, reason, as_json) -> int:
    """Dismiss a conflict as a false positive; the pair is never reported again.
    (The same as `dmm conflicts resolve CONFLICT_ID --action dismiss`.)

    \b
    Examples:
      dmm conflicts dismiss conflict_1a2b3c4d5e6f --reason "different services"
    """
    from dmm.conflicts.resolver import ResolutionRequest

    return _resolve_one(ctx, ResolutionRequest(conflict_id, "dismiss", reason), False, as_json)


@command.command("stats")
@json_option
@click.pass_context
def stats_cmd(ctx, as_json) -> int:
    """Counts of conflicts by type, detection method and status, and the last scans.

    \b
    Examples:
      dmm conflicts stats --json
    """
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
    for label, ids in (("deprecated", result.memories_deprecated),
                       ("created", result.memories_created),
                       ("modified", result.memories_modified)):
        for i in ids:
            message(f"  {label}: {i}")


def _resolve_one(ctx, request, propose: bool, as_json: bool) -> int:
    from dmm.conflicts.service import resolve

    ws, conn = _open(ctx)
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
    ws, conn = _open(ctx)
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


@command.command("resolve")
@click.argument("conflict_id", required=False, shell_complete=complete.conflicts)
@click.option("--action", type=click.Choice(["deprecate", "merge", "clarify", "dismiss", "defer"]),
              help="What to do (with CONFLICT_ID).")
@click.option("--target", metavar="MEMORY", help="deprecate: the memory to retire (id or path).")
@click.option("--content", help="merge: the merged memory (markdown body, or a whole file).")
@click.option("--file", "file_", type=click.Path(dir_okay=False, allow_dash=True),
              help="merge: read the merged memory from a file ('-' for stdin).")
@click.option("--path", "merge_path", metavar="PATH",
              help="merge: where the merged memory goes (default: beside the newer one).")
@click.option("--clarify", "clarify", multiple=True, metavar="MEMORY_ID=TEXT",
              help="clarify: the scope or condition to add to a memory (repeatable).")
@click.option("--reason", help="Why (recorded in the commit; required with CONFLICT_ID).")
@click.option("--propose", is_flag=True,
              help="Open a proposal branch that goes through review instead of committing.")
@click.option("--auto", "auto_", is_flag=True,
              help="Resolve every conflict that dates, confidence and structure settle.")
@click.option("--dry-run", is_flag=True, help="--auto: show the plan, change nothing.")
@click.option("--min-confidence", type=click.FloatRange(0, 1),
              help="--auto: leave conflicts detected less surely than this "
                   "(default: conflicts.auto_min_confidence).")
@click.option("--interactive", "-i", is_flag=True,
              help="Walk through open conflicts on a terminal and decide each one.")
@json_option
@click.pass_context
@decision(lambda conflict_id, action, propose, auto_, dry_run, interactive, **_:
          None if propose or dry_run else ("resolving conflicts one by one", False)
          if interactive else "resolving every conflict dates settle (--auto)" if auto_
          else f"resolving {conflict_id} ({action})")
def resolve_cmd(ctx, conflict_id, action, target, content, file_, merge_path, clarify, reason,
                propose, auto_, dry_run, min_confidence, interactive, as_json) -> int:
    """Resolve a conflict, as one commit on the checked-out branch (or, with --propose, as a
    proposal for review). Nothing is deleted: deprecated memories move to deprecated/ and
    `dmm conflicts undo` reverts any resolution.

    \b
    Actions:
      deprecate  retire --target; the other memory gains it in `supersedes`
      merge      a new memory (--content/--file, or an editor) supersedes both
      clarify    add --clarify MEMORY_ID=TEXT to one or both so they no longer conflict
      dismiss    a false positive: never reported again
      defer      needs more context: hidden from the open list until resolved

    \b
    Examples:
      dmm conflicts resolve conflict_1a2b3c4d5e6f --action deprecate \\
          --target mem_2025_01_10_001 --reason "replaced by the 2026 rule"
      dmm conflicts resolve conflict_1a2b3c4d5e6f --action clarify \\
          --clarify mem_2025_01_10_001="Python files" \\
          --clarify mem_2025_02_01_004="Makefiles" --reason "different file types"
      dmm conflicts resolve --auto --dry-run
      dmm conflicts resolve --interactive
    """
    from dmm.conflicts.resolver import ResolutionRequest

    modes = sum(bool(x) for x in (conflict_id, auto_, interactive))
    if modes != 1:
        raise InvalidInputError("give one of: a CONFLICT_ID with --action, --auto, or "
                                "--interactive")
    if (dry_run or min_confidence is not None) and not auto_:
        raise InvalidInputError("--dry-run and --min-confidence go with --auto")
    if auto_:
        return _auto(ctx, dry_run, min_confidence, as_json)
    if interactive:
        from dmm.cli.resolve_interactive import walk

        return walk(ctx)
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
                                path=merge_path, clarifications=_clarifications(clarify))
    return _resolve_one(ctx, request, propose, as_json)


def _auto(ctx, dry_run: bool, min_confidence: float | None, as_json: bool) -> int:
    from dmm.conflicts.resolver import ResolutionRequest
    from dmm.conflicts.service import auto_plan, resolve
    from dmm.errors import DmmError

    ws, conn = _open(ctx)
    results, failed = {}, 0
    try:
        steps = auto_plan(ws, conn, min_confidence)
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
                + ("; nothing was changed (--dry-run)" if dry_run else ""))
    return ExitCode.PROBLEMS_FOUND if failed else ExitCode.OK


@command.command("undo")
@click.argument("conflict_id", shell_complete=complete.conflicts)
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
