"""`dmm log`."""

from __future__ import annotations

import click

from dmm.audit import EVENTS
from dmm.cli import complete
from dmm.cli.common import emit_json, json_option, message, say_history_gap, workspace
from dmm.cli.tables import Col, clip, short_commit, short_date
from dmm.cli.terminal import no_headers_option, paged, paint_kind, table

# on a narrow terminal the commit, the change and the proposal or conflict it was about (what
# `review show` and `conflicts show` take) stay; reason, author and date go
COLUMNS = (Col("commit", "id", short=short_commit), Col("date", short=short_date, drop=4),
           Col("event"), Col("change", "title"), Col("proposal or conflict"),
           Col("by", "text", drop=3, min=8), Col("reason", "text", drop=1, min=16))

# a reason's first line, as the table shows it (piped too): a branch may carry a 10 MB one.
# --json gives every reason whole, as git holds it.
REASON_CHARS = 200


@click.command("log")
@click.option("--memory", "memory", metavar="MEMORY", shell_complete=complete.memories,
              help="Only events that touched this memory (its id or path), a removed one too: "
                   "its proposals, their decisions, the resolutions naming it and their undos.")
@click.option("--path", "old_path", hidden=True, shell_complete=complete.memories)  # deprecated
@click.option("--decision", type=click.Choice([*EVENTS, "resolved:flag"]), metavar="EVENT",
              help="Only this event: " + ", ".join(EVENTS) + ".")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000), default=50, show_default=True)
@no_headers_option
@json_option
@click.pass_context
def command(ctx, memory, old_path, decision, limit, no_headers, as_json) -> int:
    """The audit log: every proposal, decision and conflict resolution, who, when, why and the
    commit, newest first. The table shows the first line of each reason, at most 200
    characters; --json gives it whole.

    Read from git alone (commit trailers on the canonical main branch, dmm/audit and
    dmm/proposals/*), so `git log --first-parent` tells the same story of approvals. A name a
    record claims for someone other than its author is shown as claimed; with signing set up,
    each decision as verified or not (docs/team.md). An event that names several
    memories (a merge of two conflicting memories) is listed under each of them.

    \b
    Examples:
      dmm log --limit 10
      dmm log --memory mem_2026_01_10_001
      dmm log --memory project/api/errors.md
      dmm log --decision resolved:deprecate --json
    """
    from dmm.audit import entries, touching
    from dmm.gitrepo import Git
    from dmm.proposals.model import known_type

    if memory and old_path and memory != old_path:
        raise click.UsageError("give the memory once (--path is the old name of --memory)")
    memory = memory or old_path
    decision = "flagged" if decision == "resolved:flag" else decision  # its old name
    ws = workspace(ctx)
    say_history_gap(Git(ws.root))
    found = entries(Git(ws.root), decision=None if memory else decision)
    if memory:
        found = [e for e in touching(found, *_names(ws, memory, found))
                 if not decision or e.event == decision]
    found = found[:limit]
    if as_json:
        emit_json({"entries": [e.to_dict() for e in found], "total": len(found)})
        return 0
    if not found:
        message(f"No dmm events about {memory} match." if memory else
                "No dmm events match." if decision else "No dmm events yet.")
        return 0
    rows = []
    for e in found:
        if e.conflict_id and not e.proposal_id:  # a conflict resolution, committed directly
            what, about = ", ".join(e.memory_ids), e.conflict_id
        else:
            moved = f" -> {e.new_path}" if e.new_path and e.new_path != e.path else ""
            what, about = f"{known_type(e.type)} {e.path}{moved}", e.proposal_id
        rows.append((e.commit[:12], e.date[:16].replace("T", " "), e.event, what, about,
                     e.who_shown(), clip((e.reason or "").strip().split("\n")[0], REASON_CHARS)))
    with paged():
        click.echo(table(rows, COLUMNS, no_headers, colours={2: paint_kind}))
    return 0


def _names(ws, memory: str, events) -> tuple[set[str], set[str]]:
    """The ids and paths one memory went by: from the store when it is there, else from the
    events that named it (a memory removed since); a name nobody knows is an error."""
    from dmm.errors import DmmError, NotFoundError
    from dmm.index.refresh import open_fresh
    from dmm.lookup import find_memory

    conn, _ = open_fresh(ws)
    known = True
    try:
        current = find_memory(ws, conn, memory)[0]
        ids, paths = {current.id}, {current.path}
    except DmmError:
        known = False
        is_path = "/" in memory or memory.endswith(".md")
        if is_path:
            paths = {ws.memory_relpath(memory)}
            ids = {i for e in events if paths & {e.path, e.new_path} for i in e.memory_ids[:1]}
            ids |= _id_in_git(ws, next(iter(paths)))
        else:
            ids, paths = {memory}, set()
    finally:
        conn.close()
    paths |= {p for e in events if ids & set(e.memory_ids) for p in (e.path, e.new_path) if p}
    if not known and not any(ids & set(e.memory_ids) or paths & {e.path, e.new_path}
                             for e in events):
        raise NotFoundError(f"no memory {memory!r}: neither in the store nor named by any dmm "
                            "event", hint="`dmm list` shows the memories, by id and path")
    return ids, paths



def _id_in_git(ws, path: str) -> set[str]:
    """The id a removed memory file had, from the last commit that held it."""
    import re

    from dmm.gitrepo import Git
    from dmm.proposals.model import MEMORY_ROOT

    git = Git(ws.root)
    last = git.run("rev-list", "-1", "HEAD", "--", MEMORY_ROOT + path, check=False).stdout.strip()
    for rev in (last, f"{last}^") if last else ():
        blob = git.show_blob(rev, MEMORY_ROOT + path)
        found = re.search(rb"^id:\s*['\"]?([\w.-]+)", blob or b"", re.M)
        if found:
            return {found.group(1).decode()}
    return set()
