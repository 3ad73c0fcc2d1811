"""The hook entry point: an incremental conflict scan after git changed memory files.

Runs inside git's post-commit, post-merge and post-rewrite hooks. It never writes git's index
or makes commits; it refreshes the cache, scans the memories that changed since the last scan
and reports new conflicts in one line on stderr (and in `dmm status`). Any failure is reported
and swallowed: a hook must never break the git command that ran it.

The committer never waits for a large change: when more than FOREGROUND_MAX memories need a
scan (a commit of many memories, a merge, a cache never scanned), the hook starts a detached
background process for it and says so in one line; the git command returns at once. One such
scan runs at a time per clone (an flock in its shared state folder: another waits for it, then
scans whatever is still unscanned); each writes what it found to LOG_NAME in the work tree's
state folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from dmm.render import count, some
from dmm.workspace import Workspace

FOREGROUND_MAX = 10  # memories to scan: more are scanned in the background
LOG_NAME = "hook-scan.log"  # in the work tree's state folder (<git-dir>/dmm/)
LOCK_NAME = "hook-scan.lock"  # in the clone's shared state folder: one scan at a time
LOG_MAX_BYTES = 256 * 1024  # the log starts again beyond this


def run(ws: Workspace, background: bool = True, hook: str | None = None) -> str | None:
    """Scan, or hand a large scan to a background process (``background``); return the
    one-line notice for stderr, or None when nothing new was found. ``hook``: the git hook
    running, whose commits say which memory files changed: only those are looked at."""
    paths = _changed_paths(ws, hook) if hook else None
    background = background and ws.config["scan"]["incremental_on_commit"]
    if background and paths is not None and len(paths) > FOREGROUND_MAX:
        pending = len(paths)  # many files: not even read here
    else:
        pending = _scan_here(ws, paths, background)
        if not isinstance(pending, int):
            return pending[0]
    log = start_background(ws)
    return (f"dmm: scanning {count(pending, 'changed memory', 'changed memories')} for "
            f"conflicts in the background (log: {log}); run `dmm conflicts list` once it is "
            "done")


def _scan_here(ws: Workspace, paths: list[str] | None, background: bool):
    """Scan here when few memories need it: (the notice,); else how many need it."""
    from dmm.index.refresh import open_fresh

    conn, _ = open_fresh(ws, paths=paths)
    try:
        pending = _pending(ws, conn) if background else 0
        if pending <= FOREGROUND_MAX:
            notice = scan(ws, conn, publish=not background)
            if background and _other_worktrees(ws):  # what they adopt: costs in proportion
                start_background(ws, publish_only=True)  # to the conflicts
            return (notice,)
    finally:
        conn.close()
    return pending


def _other_worktrees(ws: Workspace) -> bool:
    """Whether the clone has linked work trees (`git worktree add`), which adopt this scan's
    result: git keeps one folder for each in <git-common-dir>/worktrees/."""
    try:
        return any((ws.shared_state_dir.parent / "worktrees").iterdir())
    except OSError:
        return False


def _pending(ws: Workspace, conn) -> int:
    """How many memories the next scan covers: those changed since the last scan, or every
    memory when this cache never scanned (or scanned with other settings)."""
    from dmm.conflicts import store
    from dmm.conflicts.analyzers import fingerprint

    delta = store.changed_since_scan(conn, fingerprint(ws.config["conflicts"]))
    if delta is not None:
        return len(delta[0])
    return conn.execute("SELECT count(*) FROM memories").fetchone()[0]


def start_background(ws: Workspace, publish_only: bool = False) -> Path:
    """Start the detached scan (`dmm hooks run --detached`); returns its log's path. Its
    input, output and session are its own: git, and whoever reads git's output, never wait
    for it. ``publish_only``: the hook scanned; only keep the result for the other work
    trees."""
    log = ws.state_dir / LOG_NAME
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists() and log.stat().st_size > LOG_MAX_BYTES:
        log.unlink()
    with open(log, "a", encoding="utf-8") as out:
        # -I: this installed dmm, never a dmm/ package of the repository it runs in
        subprocess.Popen([sys.executable, "-I", "-m", "dmm", "hooks", "run", "--detached",
                          *(["--publish-only"] if publish_only else []), "post-commit"],
                         cwd=ws.root, stdin=subprocess.DEVNULL, stdout=out,
                         stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
    return log


def detached(ws: Workspace, publish_only: bool = False) -> None:
    """The background scan: wait for any other one of the clone, then scan what is still
    unscanned, writing what it found (or why it failed) to the log on stdout.
    ``publish_only``: keep the scan the hook made for the other work trees, as the cache holds
    it (never refreshed here: files changed since are the next commit's, and its hook's to
    report as new)."""
    from dmm.conflicts import service, store
    from dmm.conflicts.analyzers import fingerprint
    from dmm.fsutil import file_lock
    from dmm.index import db
    from dmm.index.refresh import open_fresh

    started = time.monotonic()
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {'publish' if publish_only else 'scan'} "
          f"started (pid {os.getpid()})", flush=True)
    with file_lock(ws.shared_state_dir / LOCK_NAME):
        conn = db.connect(ws.state_dir) if publish_only else open_fresh(ws)[0]
        try:
            if not publish_only:
                notice = scan(ws, conn) or "no new memory conflict"
            elif not store.needs_scan(conn, fingerprint(ws.config["conflicts"])):
                service.publish(ws, conn)
                notice = "kept for the other work trees"
            else:
                notice = "the cache moved on: the next scan keeps its result"
        finally:
            conn.close()
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {'publish' if publish_only else 'scan'} done "
          f"in {time.monotonic() - started:.1f} s: {notice}", flush=True)


def scan(ws: Workspace, conn, publish: bool = True) -> str | None:
    """Scan with the fresh cache ``conn``; return the one-line notice, or None when nothing
    new was found. ``publish``: as service.run_scan's.

    New means new to the store: a conflict the changed memories brought. A cache that was
    rebuilt (`dmm reindex`, a fresh clone, a deleted cache) rescans everything and
    finds every old conflict again: of those, only the ones involving a memory the last
    commit changed are new. A conflict someone already dismissed, resolved or flagged is
    decided, never new."""
    from dmm.conflicts import store
    from dmm.conflicts.service import run_scan

    invalid = _committed_invalid(ws, conn)
    lines = [_invalid_line(invalid)] if invalid else []
    if not ws.config["scan"]["incremental_on_commit"]:
        return "\n".join(lines) or None  # [scan] incremental_on_commit = false: the schedule's
    result = run_scan(ws, conn, publish=publish)
    decided = store.decisions(ws.conflicts_dir)
    found = {cid: row for cid in result.new_conflict_ids if cid not in decided
             for row in conn.execute("SELECT type, a, b FROM conflicts "
                                     "WHERE conflict_id = ?", (cid,))}
    if found and result.scan_type != "incremental":  # everything rescanned
        changed = _last_commit_memories(ws, conn)
        found = {cid: row for cid, row in found.items() if {row[1], row[2]} & changed}
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


def _changed_paths(ws: Workspace, hook: str) -> list[str] | None:
    """The memory files (relative to .dmm/memory/) the git command running ``hook`` changed:
    the last commit's (post-commit), or those between ORIG_HEAD and HEAD (a merge); None
    when git cannot say (the cache then looks at every file): a rewrite (an amend leaves
    ORIG_HEAD where an older command put it). A first commit changed every file it holds."""
    from dmm.gitrepo import Git

    if hook not in ("post-commit", "post-merge"):
        return None
    git = Git(ws.root)
    base = "HEAD~1" if hook == "post-commit" else "ORIG_HEAD"
    if git.rev_parse(base) is not None:
        done = git.run("diff", "--no-renames", "--name-only", "-z", base, "HEAD", "--",
                       ".dmm/memory", check=False)
    elif hook == "post-commit" and git.rev_parse("HEAD") is not None:  # the first commit
        done = git.run("ls-tree", "-r", "-z", "--name-only", "HEAD", "--", ".dmm/memory",
                       check=False)
    else:
        return None
    if done.returncode != 0:
        return None
    return [p.removeprefix(".dmm/memory/") for p in done.stdout.split("\0") if p]


def _last_commit_memories(ws: Workspace, conn) -> set[str]:
    """Ids of the memories the commit at HEAD changed (against its first parent)."""
    paths = _last_commit_paths(ws)
    if paths is None:  # the first commit: everything in it is new
        return {mid for (mid,) in conn.execute("SELECT id FROM memories")}
    return {mid for p in paths for (mid,) in conn.execute(
        "SELECT id FROM memories WHERE path = ?", (p,))}


def _last_commit_paths(ws: Workspace) -> list[str] | None:
    """The memory paths the commit at HEAD changed against its first parent (None: it is
    the first commit, or git cannot say)."""
    return _changed_paths(ws, "post-commit")
