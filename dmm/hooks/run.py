"""The hook entry point: an incremental conflict scan after git changed memory files.

Runs inside git's post-commit, post-merge and post-rewrite hooks. It never writes git's index
or makes commits; it refreshes the cache, scans the memories that changed since the last scan
and reports new conflicts in one line on stderr (and in `dmm status`). Any failure is reported
and swallowed: a hook must never break the git command that ran it.
"""

from __future__ import annotations

from collections import Counter

from dmm.render import count, some
from dmm.workspace import Workspace


def run(ws: Workspace) -> str | None:
    """Scan; return the one-line notice for stderr, or None when nothing new was found.

    New means new to the store: a conflict the changed memories brought. A cache that was
    rebuilt (`dmm reindex`, a fresh clone, a deleted cache) rescans everything and
    finds every old conflict again: of those, only the ones involving a memory the last
    commit changed are new. A conflict someone already dismissed, resolved or flagged is
    decided, never new."""
    from dmm.conflicts import store
    from dmm.conflicts.service import run_scan
    from dmm.index.refresh import open_fresh

    if not ws.config["scan"]["incremental_on_commit"]:
        return None  # [scan] incremental_on_commit = false: scans are left to the schedule
    conn, _ = open_fresh(ws)
    try:
        invalid = _committed_invalid(ws, conn)
        result = run_scan(ws, conn)
        decided = store.decisions(ws.conflicts_dir)
        found = {cid: row for cid in result.new_conflict_ids if cid not in decided
                 for row in conn.execute("SELECT type, a, b FROM conflicts "
                                         "WHERE conflict_id = ?", (cid,))}
        if found and result.scan_type != "incremental":  # everything rescanned
            changed = _last_commit_memories(ws, conn)
            found = {cid: row for cid, row in found.items() if {row[1], row[2]} & changed}
    finally:
        conn.close()
    lines = [_invalid_line(invalid)] if invalid else []
    if found:
        kinds = Counter(row[0] for row in found.values())
        listed = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        lines.append(f"dmm: {count(len(found), 'new memory conflict')} found ({listed}): "
                     "run `dmm conflicts list`")
    return "\n".join(lines) or None


def _committed_invalid(ws: Workspace, conn) -> list[str]:
    """The memory files the commit at HEAD changed that have errors: the store leaves them
    out (queries, lists), so the committer hears it now. One git call, only when some file
    has errors."""
    from dmm.index.read import invalid_paths

    invalid = invalid_paths(conn)
    if not invalid:
        return []
    changed = _last_commit_paths(ws)
    return invalid if changed is None else sorted(set(changed) & set(invalid))


def _invalid_line(paths: list[str]) -> str:
    return (f"dmm: {count(len(paths), 'memory file')} committed with errors ({some(paths)}) "
            f"{'is' if len(paths) == 1 else 'are'} left out of queries and lists: run "
            "`dmm validate`")


def _last_commit_memories(ws: Workspace, conn) -> set[str]:
    """Ids of the memories the commit at HEAD changed (against its first parent)."""
    paths = _last_commit_paths(ws)
    if paths is None:  # the first commit: everything in it is new
        return {mid for (mid,) in conn.execute("SELECT id FROM memories")}
    return {mid for p in paths for (mid,) in conn.execute(
        "SELECT id FROM memories WHERE path = ?", (p,))}


def _last_commit_paths(ws: Workspace) -> list[str] | None:
    """The memory paths the commit at HEAD changed against its first parent (None: it is
    the first commit)."""
    from dmm.gitrepo import Git

    git = Git(ws.root)
    if git.rev_parse("HEAD~1") is None:
        return None
    names = git.run("diff", "--name-only", "-z", "HEAD~1", "HEAD", "--", ".dmm/memory").stdout
    return [p.removeprefix(".dmm/memory/") for p in names.split("\0") if p]
