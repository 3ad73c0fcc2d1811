"""The hook entry point: an incremental conflict scan after git changed memory files.

Runs inside git's post-commit, post-merge and post-rewrite hooks. It never writes git's index
or makes commits; it refreshes the cache, scans the memories that changed since the last scan
and reports new conflicts in one line on stderr (and in `dmm status`). Any failure is reported
and swallowed: a hook must never break the git command that ran it.
"""

from __future__ import annotations

from dmm.workspace import Workspace


def run(ws: Workspace) -> str | None:
    """Scan; return the one-line notice for stderr, or None when nothing new was found."""
    from dmm.conflicts.service import run_scan
    from dmm.index.refresh import open_fresh

    conn, _ = open_fresh(ws)
    try:
        result = run_scan(ws, conn)
    finally:
        conn.close()
    if result.conflicts_new:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(result.by_type.items()))
        return (f"dmm: {result.conflicts_new} new memory conflict(s) found ({kinds}): "
                "run `dmm conflicts list`")
    return None
