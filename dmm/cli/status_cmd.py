"""`dmm status`."""

from __future__ import annotations

import click

from dmm.cli.common import emit_json, json_option, workspace
from dmm.cli.terminal import table
from dmm.memory.model import SCOPES
from dmm.render import count

MAX_PROBLEMS_SHOWN = 10
# --json lists at most this many problems (errors first) beside their counts: a summary costs
# what it shows, whatever the store (50,000 memories may carry 5,000 warnings: a 1 MB answer);
# `dmm validate --json` lists every one
MAX_PROBLEMS_JSON = 100


@click.command("status")
@json_option
@click.pass_context
def command(ctx: click.Context, as_json: bool) -> int:
    """Show what the memory store holds: memories by scope and status, the cache, problems.

    Problems are counted, and the first ones shown, errors first (10; --json: 100, and
    `more_problems` says how many are not listed): `dmm validate` lists every one.

    \b
    Examples:
      dmm status
      dmm status --json
    """
    from dmm import state
    from dmm.index import read
    from dmm.index.refresh import open_fresh

    ws = workspace(ctx)
    conn, report = open_fresh(ws)
    try:
        counts = read.counts(conn)
        problems, errors, warnings = read.problem_page(
            conn, MAX_PROBLEMS_JSON if as_json else MAX_PROBLEMS_SHOWN,
            ephemeral_days=ws.config["store"]["ephemeral_max_days"])
        conflicts = _open_conflicts(conn, ws)
        judge = _judge(ws, conn)
    finally:
        conn.close()
    leftover = state.tracked_problem(ws)  # a committed .dmm/index/: never read, said here
    if leftover:
        problems, errors = [leftover, *problems], errors + 1
    hooks = _hooks(ws)
    cache_file = ws.state_dir / "cache.sqlite3"
    cache = {"path": str(cache_file),  # in the git folder (in another for a linked work tree)
             "bytes": _size(cache_file),
             "was_fresh": report.was_fresh, "files_read": report.read,
             "files_removed": report.removed}
    if as_json:
        emit_json({"root": str(ws.root), "files": report.files, "memories": counts,
                   "cache": cache, "conflicts": conflicts, "hooks": hooks, "judge": judge,
                   "errors": errors, "warnings": warnings,
                   "problems": [p.to_dict() for p in problems[:MAX_PROBLEMS_JSON]],
                   "more_problems": max(0, errors + warnings - MAX_PROBLEMS_JSON)})
        return 0
    click.echo(f"dmm store: {ws.memory_dir}")
    click.echo(f"{count(counts['total'], 'memory')} in {count(report.files, 'file')}\n")
    # by scope: the memories `dmm list` shows (active ones); deprecated ones on their own row
    active = counts["active_by_scope"]
    rows = [(scope, active.get(scope, 0)) for scope in SCOPES]
    rows += [(s, n) for s, n in active.items() if s not in SCOPES]
    rows.append(("(deprecated)", counts["by_status"].get("deprecated", 0)))
    click.echo(table(rows, ("scope", "active memories")))
    click.echo("")
    click.echo(table(sorted(counts["by_status"].items()), ("status", "memories")))
    state = ("fresh" if report.was_fresh else
             f"updated now: {count(report.read, 'file')} read, {report.removed} removed")
    click.echo(f"\ncache: {cache['path']} ({cache['bytes'] // 1024} KiB), {state}")
    scanned = "" if conflicts["last_scan"] else " (never scanned: run `dmm conflicts scan`)"
    click.echo(f"conflicts: {conflicts['unresolved']} unresolved{scanned}"
               + (" (memories changed since the last scan)" if conflicts["stale"] else ""))
    click.echo(f"judge: {judge['summary']}")
    missing = [name for name, state in hooks.items() if state != "installed"]
    click.echo("git hooks: " + ("installed" if not missing else
                                f"{', '.join(missing)} not installed in this clone: conflicts "
                                "are not checked after commits, merges and rebases (run "
                                "`dmm init` or `dmm hooks install`)"))
    click.echo(f"problems: {count(errors, 'error')}, {count(warnings, 'warning')}")
    for p in problems[:MAX_PROBLEMS_SHOWN]:
        click.echo(f"  {p}")
    if errors + warnings > MAX_PROBLEMS_SHOWN:
        click.echo(f"  ... and {errors + warnings - MAX_PROBLEMS_SHOWN} more: run `dmm validate`")
    return 0


def _hooks(ws) -> dict[str, str]:
    """Each git hook's state in this clone (installed, absent, foreign)."""
    from dmm.gitrepo import Git
    from dmm.hooks.install import status

    return {h.name: h.state for h in status(Git(ws.root))}


def _open_conflicts(conn, ws) -> dict:
    """Conflicts as the last scan left them (status never scans: it must stay fast)."""
    from dmm.conflicts import store
    from dmm.conflicts.analyzers import fingerprint
    import datetime as dt

    from dmm.conflicts.model import OPEN, status_of

    today = dt.date.today().isoformat()  # a deferral that ran out is open again
    closed = {cid for cid, d in store.decisions(ws.conflicts_dir).items()
              if status_of(d, today) not in OPEN}
    _, unresolved = store.query(conn, exclude=closed, limit=1)
    last = store.scans(conn, 1)
    return {"unresolved": unresolved, "last_scan": last[0]["started_at"] if last else None,
            "stale": bool(last) and store.needs_scan(conn, fingerprint(ws.config["conflicts"]))}


def _judge(ws, conn) -> dict:
    """The judge's state: off, or which model and where memory text goes (opening the model
    imports llm: paid only when the judge is on)."""
    from dmm.judge.settings import judge_settings

    settings = judge_settings(ws)
    out = {"enabled": settings.enabled, "model": settings.model, "where": None,
           "use_rule_extraction": settings.use_rule_extraction,
           "verdicts_cached": conn.execute("SELECT count(*) FROM verdicts").fetchone()[0]}
    if settings.blocked:
        out["summary"] = f"off: {settings.blocked}"
        out["error"] = settings.blocked
        return out
    if not settings.enabled:
        out["summary"] = ("off: no memory text leaves this machine ([judge] in "
                          ".dmm/config.toml turns it on; docs/conflicts.md#the-judge)")
        return out
    from dmm.judge.client import JudgeUnavailable, open_judge

    try:
        judge = open_judge(settings)
    except JudgeUnavailable as exc:
        out["summary"] = f"on but unavailable: {exc.message}"
        out["error"] = exc.message
        return out
    out["where"] = judge.where
    when = ("every scan" if settings.use_rule_extraction
            else "`dmm conflicts scan --include-rule-extraction`")
    out["summary"] = (f"{judge.model_id}; memory text goes to {judge.where} on {when} "
                      f"({out['verdicts_cached']} verdicts cached)")
    return out


def _size(path) -> int:
    """0 when there is no cache file, or this user may not look at it (another user's git
    folder: the command answered from an in-memory cache)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
