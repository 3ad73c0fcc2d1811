"""`dmm conflicts scan|list|show|check|flag|stats`; resolving (resolve, dismiss, undo) is in
conflicts_resolve_cmd.py."""

from __future__ import annotations

import click

from dmm.cli import complete
from dmm.cli.common import emit_json, json_option, message, open_index, progress_bar
from dmm.cli.terminal import no_headers_option, paged
from dmm.conflicts.model import ANALYZERS, METHOD_NAMES, STATUSES, TYPES
from dmm.errors import ExitCode, NotFoundError
from dmm.lookup import memory_ids
from dmm.memory.model import SCOPES
from dmm.render import count


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
      dmm conflicts check --memory mem_2026_01_01_001 --memory mem_2026_02_01_004
      dmm conflicts dismiss conflict_1a2b3c4d5e6f --reason "different services"
      dmm conflicts resolve conflict_1a2b3c4d5e6f --action deprecate \\
          --target mem_2026_01_01_001 --reason "replaced by the February rule"
      dmm conflicts resolve --auto --dry-run
    """


@command.command("scan")
@click.option("--full", is_flag=True, help="Scan every pair (default: only memories changed "
                                           "since the last scan).")
@click.option("--narrative", is_flag=True,
              help="Instead of the rules: have the judge (a language model you configured in "
                   "[judge] of .dmm/config.toml) read each scope's memories in the order git "
                   "added them and point out reversals, stale claims and values that drifted. "
                   "Each answer becomes a conflict with a yes/no question for a person.")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES),
              help="Scan only the memories of this scope, against the whole store (repeat "
                   "for several). With --narrative: read only this scope (default: all but "
                   "ephemeral).")
@click.option("--since", metavar="COMMIT", help="Scan the memories changed since this commit.")
@click.option("--memory", metavar="MEMORY",
              help="Scan one memory (its id or path) against the store.",
              shell_complete=complete.memories)
@click.option("--methods", metavar="LIST",
              help="Comma-separated analyzers to run (default all): "
                   f"{', '.join(ANALYZERS)}; or the short names "
                   f"{', '.join(METHOD_NAMES)} (rule: also ask the judge, as "
                   "--include-rule-extraction).")
@click.option("--include-rule-extraction/--no-rule-extraction", "rule_extraction",
              default=None,
              help="Also ask the judge, the language model set in [judge] of "
                   ".dmm/config.toml, whether each memory scanned contradicts its nearest "
                   "ones (their text goes to that model; docs/conflicts.md#the-judge). "
                   "Default: as [judge] use_rule_extraction says.")
@json_option
@click.pass_context
def scan_cmd(ctx, full, narrative, scopes, since, memory, methods, rule_extraction,
             as_json) -> int:
    """Scan for conflicts and store them (the git hooks run this after memory commits).

    With --narrative, the judge reads each scope's story instead, in batches of
    narrative.batch_tokens; dmm says how many batches and about how many tokens it sends to
    which model before it sends them. A batch the model fails on (a timeout, malformed
    output) is reported and skipped; every other conflict stands.

    \b
    Examples:
      dmm conflicts scan
      dmm conflicts scan --full --json
      dmm conflicts scan --memory project/api/errors.md
      dmm conflicts scan --full --include-rule-extraction
      dmm conflicts scan --scope global --methods tag,semantic
      dmm conflicts scan --narrative --scope project
    """
    from dmm.conflicts.service import run_scan

    if narrative:
        if full or since or memory or methods or rule_extraction is not None:
            raise click.UsageError("--narrative is a pass of its own: give it without --full, "
                                   "--since, --memory, --methods or --include-rule-extraction")
        return _narrative(ctx, list(scopes), as_json)

    ws, conn = open_index(ctx)
    try:
        if memory:
            memory = memory_ids(ws, conn, [memory])[0]
        progress, finish = progress_bar("scanning for conflicts")
        judging, judged = progress_bar("judging pairs", min_items=1)
        try:
            result = run_scan(ws, conn, full=full, since=since, memory=memory,
                              methods=_ids(methods) if methods else None, progress=progress,
                              rule_extraction=rule_extraction, announce=_announce,
                              judge_progress=judging, scopes=list(scopes) or None)
        finally:
            judged()
            finish()
    finally:
        conn.close()
    for line in result.errors:  # the judge's: the rules' answer stands, the exit code too
        message(f"warning: {line}")
    if as_json:
        emit_json(result.to_dict())
    else:
        message(f"{result.scan_type} scan of {count(result.memories_scanned, 'memory')} in "
                f"{result.duration_ms} ms: {count(result.conflicts_detected, 'conflict')}, "
                f"{result.conflicts_new} new")
        for kind, n in sorted(result.by_type.items()):
            message(f"  {kind}: {n}")
        for artifact in result.artifacts:
            message(f"  left out, {count(artifact['count'], 'finding')}: {artifact['why']}")
        if result.judge:
            j = result.judge
            message(f"  judge {j['model']}: {count(j['candidates'], 'pair')} to judge, "
                    f"{j['cached']} judged before, {j['sent']} sent, {j['failed']} failed, "
                    f"{j['skipped']} left for later; {j['conflicts']} said conflict")
    return 0


def _narrative(ctx, scopes: list[str], as_json: bool) -> int:
    from dmm.conflicts.narrative_scan import narrative_pass

    def announce(batches: int, tokens: int, cached: int, model: str, where: str) -> None:
        message(f"note: the narrative pass reads {count(batches, 'batch', 'batches')} of "
                f"{', '.join(scopes) or 'every scope but ephemeral'}"
                + (f" ({cached} answered before)" if cached else "")
                + (f": sending about {tokens:,} tokens to {model} at {where}"
                   if batches > cached else ": nothing to send"))

    ws, conn = open_index(ctx)
    try:
        progress, finish = progress_bar("asking the judge", min_items=2)
        try:
            result = narrative_pass(ws, conn, scopes or None, announce=announce,
                                    progress=progress)
        finally:
            finish()
    finally:
        conn.close()
    if as_json:
        emit_json(result.to_dict())
        return 0
    message(f"narrative scan in {result.duration_ms} ms: "
            f"{count(result.conflicts_detected, 'conflict')}, {result.conflicts_new} new"
            + (f", {result.already_known} already known" if result.already_known else "")
            + (f" ({result.batches_cached} of {result.batches} batches answered from the "
               "cache)" if result.batches_cached else ""))
    for q in result.questions:
        click.echo(f"{q['conflict_id']}  {' <> '.join(q['memories'])}  {q['question']}")
    for line in result.errors:
        message(f"  not judged, {line} (the other batches and every other conflict stand)")
    for line in result.dropped:
        message(f"  left out, {line}")
    if result.batches_left:
        message(f"  {count(result.batches_left, 'batch', 'batches')} not sent: this run's "
                "token limit (judge.max_tokens) was reached; run the pass again for the rest")
    return 0


def _announce(pairs: int, tokens: int, model: str, where: str) -> None:
    """Said before the judge is sent anything: what, to whom, about how much."""
    message(f"note: sending {count(pairs, 'pair')} of memories (about {tokens:,} tokens) to "
            f"{model} at {where}")


def _table(found, no_headers: bool = False) -> str:
    """Conflicts one per row; on a terminal the titles get whatever width is left."""
    from dmm.cli.tables import Col
    from dmm.cli.terminal import paint_kind, table

    rows = [(c.conflict_id, c.type, c.severity or "", c.confidence, c.status,
             f"{c.memories[0].memory_id} <> {c.memories[1].memory_id}",
             f"{c.memories[0].title} / {c.memories[1].title}") for c in found]
    return table(rows, (Col("conflict", "id"), Col("type"), Col("severity", drop=3),
                        Col("score", drop=2), Col("status", drop=4), Col("memories", drop=1),
                        Col("titles", "title")),
                 no_headers, colours={1: paint_kind})


CONFLICT_SORTS = ("score", "severity", "type", "status", "conflict", "detected")


def _sorted(found: list, sort: str, reverse: bool) -> list:
    """Conflicts in the order asked (score: the surest first, as the service gives them;
    severity: the gravest first, the surest first within each)."""
    if sort == "score":
        return list(reversed(found)) if reverse else found
    from dmm.conflicts.severity import rank

    key = {"severity": lambda c: (-rank(c.severity), -c.confidence, c.conflict_id),
           "type": lambda c: (c.type, -c.confidence),
           "status": lambda c: (c.status, -c.confidence),
           "conflict": lambda c: c.conflict_id,
           "detected": lambda c: c.detected_at or ""}[sort]
    return sorted(found, key=key, reverse=reverse)


@command.command("list")
@click.option("--status", type=click.Choice(STATUSES + ("all",)), default="unresolved",
              show_default=True, help="Which conflicts (dismissed ones only on request).")
@click.option("--type", "type_", type=click.Choice(TYPES))
@click.option("--memory", metavar="MEMORY",
              help="Only conflicts involving this memory (its id or path).",
              shell_complete=complete.memories)
@click.option("--min-score", "min_confidence", type=click.FloatRange(0, 1), default=0.0,
              help="Only conflicts detected at least this surely (their score, 0 to 1).")
@click.option("--min-confidence", "old_min", type=click.FloatRange(0, 1), hidden=True)
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES),
              help="Only conflicts one of whose memories is in this scope (repeat for "
                   "several).")
@click.option("--sort", type=click.Choice(CONFLICT_SORTS), default="score", show_default=True,
              help="score: the surest first; severity: the gravest first (low, medium, high, "
                   "critical, from scope, recency, trust and type: docs/conflicts.md); the "
                   "others in their order.")
@click.option("--reverse", is_flag=True, help="The other way round.")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000))
@no_headers_option
@json_option
@click.pass_context
def list_cmd(ctx, status, type_, memory, min_confidence, old_min, scopes, sort, reverse,
             limit, no_headers, as_json) -> int:
    """List conflicts, the surest first (scanning changed memories first), with their
    severity. A deferral that has run out (--until) is listed as unresolved again.

    \b
    Examples:
      dmm conflicts list
      dmm conflicts list --sort severity --scope global
      dmm conflicts list --type duplicate --min-score 0.7
      dmm conflicts list --status all --no-headers
    """
    from dmm.conflicts.service import conflicts, stats

    min_confidence = old_min if old_min is not None else min_confidence
    ws, conn = open_index(ctx)
    try:
        # in the service's order (the default) a page is read from the index alone
        page = limit if sort == "score" and not reverse else None
        chosen, total = conflicts(ws, conn, memory_ids(ws, conn, [memory]) if memory else None,
                                  status=status, type_=type_, min_confidence=min_confidence,
                                  scopes=list(scopes) or None, limit=page)
        chosen = _sorted(chosen, sort, reverse)[:limit or None]
        summary = stats(ws, conn, scan=False) if as_json else None  # list just scanned
    finally:
        conn.close()
    if as_json:
        emit_json({"conflicts": [c.to_dict() for c in chosen], "total": total,
                   "stats": summary})
    elif not chosen:
        message("No conflicts.")
    else:
        with paged():
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

    ws, conn = open_index(ctx)
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
    with paged():
        _print_conflict(c, texts)
    return 0


def _print_conflict(c, texts: dict) -> None:
    from dmm.cli.terminal import paint, paint_kind

    click.echo(f"{paint(c.conflict_id, bold=True)}: {paint_kind(c.type)} ({c.status}), "
               f"severity {c.severity}, score {c.confidence:.2f}, "
               f"found by {', '.join(c.methods)}")
    click.echo(c.description)
    if c.question:
        click.echo(f"question for a person: {c.question}")
    click.echo(f"evidence: {c.evidence}")
    a, b = (texts.get(m.memory_id) for m in c.memories)
    if a and b:
        import shutil

        from dmm.cli.side_by_side import side_by_side

        click.echo("")
        click.echo(side_by_side(a, b, shutil.get_terminal_size((100, 24)).columns))
        click.echo("")
    else:
        for m in c.memories:
            click.echo(f"  {m.role:<9} {m.memory_id}  {m.scope:<9} {m.created or ''}  {m.path}")
    if c.decision:
        d = c.decision
        action = f" ({d['action']})" if d.get("action") and d["action"] != d["status"] else ""
        click.echo(f"decision: {d['status']}{action} by {d.get('by')} at {d.get('at')}: "
                   f"{d.get('reason')}")
        if d.get("suppressed_until"):
            click.echo(f"  deferred until {d['suppressed_until']}"
                       + (" (over: open again)" if c.status != d["status"] else ""))
        for label in ("created", "deprecated", "modified"):
            for memory in d.get(label) or ():
                click.echo(f"  {label}: {memory}")
        for memory, text in (d.get("clarifications") or {}).items():
            click.echo(f"  clarified: {memory}: {text}")
    if c.status in ("unresolved", "flagged"):
        from dmm.shellcmd import command as shell_command

        older = c.memories[-1].memory_id  # the newer (or superseding) memory is listed first
        resolve = ("dmm", "conflicts", "resolve", c.conflict_id)
        click.echo("to resolve it (each is one commit; add --propose to make it a proposal):")
        # the ids are quoted words; the "..." after them are for the person to fill in
        for line in (shell_command(*resolve, "--action", "deprecate", "--target", older)
                     + ' --reason "..."',
                     shell_command(*resolve, "--action", "merge", "--file", "merged.md")
                     + ' --reason "..."',
                     shell_command(*resolve, "--action", "clarify", "--clarify")
                     + f' {shell_command(older)}="..." --reason "..."',
                     shell_command("dmm", "conflicts", "dismiss", c.conflict_id)
                     + ' --reason "why they do not conflict"',
                     "dmm conflicts resolve --interactive"):
            click.echo(f"  {line}")


def memories_option(help: str):
    """--memory MEMORY, repeated (or MEMORY,MEMORY): how every command names several
    memories; --memories is its old spelling."""
    def wrap(f):
        f = click.option("--memories", "old_memories", multiple=True, hidden=True,
                         shell_complete=complete.memories)(f)
        return click.option("--memory", "memories", multiple=True, metavar="MEMORY",
                            shell_complete=complete.memories, help=help)(f)
    return wrap


def _named(memories: tuple[str, ...], old: tuple[str, ...], at_least: int) -> list[str]:
    names = [i for raw in memories + old for i in _ids(raw)]
    if len(names) < at_least:
        raise click.UsageError(f"name at least {at_least} memories with --memory "
                               "(repeat it, or MEMORY,MEMORY)")
    return names


@command.command("check")
@memories_option("A memory you are about to rely on: id or path (repeat, or MEMORY,MEMORY).")
@no_headers_option
@json_option
@click.pass_context
def check_cmd(ctx, memories, old_memories, no_headers, as_json) -> int:
    """Check whether the memories you are about to rely on are safe to use: every open
    conflict that involves any of them, with each other or with any other memory. Exits 1
    when there is one.

    \b
    Examples:
      dmm conflicts check --memory mem_2026_01_10_001 --memory project/api/errors.md
      dmm conflicts check --memory mem_2026_01_10_001,mem_2026_02_01_004 --json
    """
    from dmm.conflicts.service import check

    ws, conn = open_index(ctx)
    try:
        found = check(ws, conn, memory_ids(ws, conn, _named(memories, old_memories, 1)))
    finally:
        conn.close()
    if as_json:
        emit_json({"has_conflicts": bool(found), "conflicts": [c.to_dict() for c in found]})
    elif found:
        click.echo(_table(found, no_headers))
    else:
        message("No open conflict involves these memories.")
    return ExitCode.PROBLEMS_FOUND if found else ExitCode.OK


@command.command("flag")
@memories_option("One of the two memories: id or path (give --memory twice, or A,B).")
@click.option("--description", required=True, help="What contradicts what.")
@click.option("--type", "type_", type=click.Choice(TYPES), default="contradictory",
              show_default=True)
@json_option
@click.pass_context
def flag_cmd(ctx, memories, old_memories, description, type_, as_json) -> int:
    """Flag a conflict you noticed by hand (committed under .dmm/conflicts/).

    \b
    Examples:
      dmm conflicts flag --memory project/a.md --memory project/b.md \\
          --description "two retry limits"
    """
    from dmm.conflicts.service import flag

    ws, conn = open_index(ctx)
    try:
        cid, commit = flag(ws, conn, ids=memory_ids(ws, conn, _named(memories, old_memories, 2)),
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


@command.command("stats")
@json_option
@click.pass_context
def stats_cmd(ctx, as_json) -> int:
    """Counts of conflicts by type, detection method, status and severity; how many were
    settled and how fast (resolution rate, median days from detection to decision), the
    oldest open one, and the last scans.

    \b
    Examples:
      dmm conflicts stats --json
    """
    from dmm.conflicts import store
    from dmm.conflicts.service import stats

    ws, conn = open_index(ctx)
    try:
        data = stats(ws, conn)
        data["recent_scans"] = store.scans(conn, 5)
    finally:
        conn.close()
    if as_json:
        emit_json(data)
        return 0
    click.echo(f"{count(data['total'], 'conflict')}, average score {data['average_confidence']}")
    for key in ("by_type", "by_method", "by_status", "by_severity"):
        click.echo(f"{key.replace('_', ' ')}: " + (", ".join(
            f"{k} {v}" for k, v in sorted(data[key].items())) or "none"))
    rate, median = data["resolution_rate"], data["median_days_to_resolution"]
    click.echo("resolution rate: " + (f"{rate:.0%} (resolved or dismissed)" if rate is not None
                                      else "no conflict yet")
               + ("; median time to resolution: " + (
                   f"{median} days over {count(data['resolutions_timed'], 'decision')}"
                   if median is not None else "not known yet")))
    click.echo(f"oldest unresolved: {data['oldest_unresolved'] or 'none'}")
    if data["recent_scans"]:
        s = data["recent_scans"][0]
        click.echo(f"last scan: {s['scan_type']} at {s['started_at']}, {s['duration_ms']} ms")
    return 0


def _add_resolution_commands() -> None:
    from dmm.cli import conflicts_resolve_cmd

    for sub in (conflicts_resolve_cmd.dismiss_cmd, conflicts_resolve_cmd.defer_cmd,
                conflicts_resolve_cmd.resolve_cmd, conflicts_resolve_cmd.undo_cmd):
        command.add_command(sub)


_add_resolution_commands()
