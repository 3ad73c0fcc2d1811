"""Shell completion of the values a command takes: memory ids and paths, proposal ids, conflict
ids (click's completion API; commands and options complete by themselves).

Enable it once per shell, for example in ~/.bashrc: eval "$(_DMM_COMPLETE=bash_source dmm)"
(zsh: zsh_source, fish: fish_source). A completer reads what is at hand without refreshing
anything (the cache as it is, the memory files, git's refs), and never fails: at worst it
offers nothing.
"""

from __future__ import annotations

import re
import sqlite3

import click
from click.shell_completion import CompletionItem

from dmm.workspace import Workspace


def _workspace(ctx: click.Context) -> Workspace | None:
    try:
        return Workspace.find((ctx.find_root().obj or {}).get("repo"))
    except Exception:  # noqa: BLE001 - not in a store: nothing to offer
        return None


def _cached(ws: Workspace, sql: str) -> list[tuple]:
    from dmm.index.db import DB_NAME

    path = ws.state_dir / DB_NAME
    if not path.exists():
        return []
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.2)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []


_ID = re.compile(r"^id:\s*['\"]?([\w.-]+)", re.M)


def _id_of(path) -> re.Match | None:
    from dmm.fsutil import UnreadableFile, read_regular

    try:  # never through a link, never a FIFO that would hang the shell
        return _ID.search(read_regular(path, 1024 * 1024)[:2000].decode("utf-8", "replace"))
    except (OSError, UnreadableFile):
        return None


def memories(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Memory ids (from the cache) and store-relative paths (from the files)."""
    ws = _workspace(ctx)
    if ws is None:
        return []
    head, _, last = incomplete.rpartition(",")  # --memories A,B: complete the last one
    prefix = f"{head}," if head else ""
    from dmm.store import scan

    root = ws.memory_dir
    files = sorted(rel for rel in scan(root) if rel.endswith(".md"))
    found = _cached(ws, "SELECT id, title FROM memories") or [
        (m.group(1), "") for m in (_id_of(root / rel) for rel in files) if m]  # no cache yet
    found += [(rel, "") for rel in files]
    return [CompletionItem(prefix + value, help=title or None) for value, title in sorted(found)
            if value.startswith(last)]


def _open_proposals(ws: Workspace) -> list[str]:
    try:
        from dmm.gitrepo import Git

        refs = Git(ws.root).run("for-each-ref", "--format=%(refname)",
                                "refs/heads/dmm/proposals/", "refs/remotes/", check=False).stdout
    except Exception:  # noqa: BLE001 - git missing or failing: nothing to offer
        return []
    # this clone's proposals and the team's (remote-tracking refs: docs/team.md)
    return sorted({ref.rsplit("/", 1)[-1] for ref in refs.splitlines()
                   if ref.startswith("refs/heads/dmm/proposals/") or "/dmm/proposals/" in ref})


def proposals(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Open proposals: the branches under dmm/proposals/."""
    ws = _workspace(ctx)
    if ws is None:
        return []
    return [CompletionItem(n) for n in sorted(_open_proposals(ws)) if n.startswith(incomplete)]


def any_proposals(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Open proposals, then decided ones (`review show` shows both)."""
    ws = _workspace(ctx)
    if ws is None:
        return []
    opened = sorted(_open_proposals(ws))
    try:
        from dmm.gitrepo import Git
        from dmm.proposals.decided import closed_proposals

        closed = [(p["proposal_id"], p["status"]) for p in closed_proposals(Git(ws.root))]
    except Exception:  # noqa: BLE001 - nothing more to offer
        closed = []
    return [CompletionItem(n, help=help) for n, help in
            [(n, "open") for n in opened] + sorted(closed) if n.startswith(incomplete)]


def conflicts(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Conflict ids the cache knows, with the two titles as help."""
    ws = _workspace(ctx)
    if ws is None:
        return []
    rows = _cached(ws, "SELECT conflict_id, description FROM conflicts")
    return [CompletionItem(cid, help=(text or "")[:80] or None) for cid, text in sorted(rows)
            if cid.startswith(incomplete)]


def decided_conflicts(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Conflicts with a committed decision (`conflicts undo` reverts one), newest first."""
    ws = _workspace(ctx)
    if ws is None:
        return []
    from dmm.conflicts.store import decisions

    found = sorted(decisions(ws.conflicts_dir).items(), key=lambda kv: kv[1].get("at") or "",
                   reverse=True)
    return [CompletionItem(cid, help=f"{d.get('status')}: {d.get('action') or ''} "
                                     f"{d.get('reason') or ''}"[:80])
            for cid, d in found if cid.startswith(incomplete)]


def _conflict_pair(ctx: click.Context) -> list[tuple[str, str]]:
    """The two memories (id, title) of the conflict named on the command line, if any."""
    import os

    ws = _workspace(ctx)
    # click leaves the parsed arguments out when the line ends with an option awaiting its
    # value ("--target "); the words of the line (COMP_WORDS, in bash, zsh and fish alike)
    # still hold the conflict id
    words = [ctx.params.get("conflict_id") or "", *os.environ.get("COMP_WORDS", "").split()]
    cid = next((w for w in words if re.fullmatch(r"conflict_[0-9a-f]+", w)), "")
    if ws is None or not cid:
        return []
    rows = _cached(ws, f"SELECT a, b FROM conflicts WHERE conflict_id = '{cid}'")
    ids = list(rows[0]) if rows else []
    titles = dict(_cached(ws, "SELECT id, title FROM memories"))
    return [(i, titles.get(i, "")) for i in ids]


def conflict_memories(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """--target: the two memories of the conflict given (else any memory)."""
    pair = _conflict_pair(ctx)
    if not pair:
        return memories(ctx, param, incomplete)
    return [CompletionItem(i, help=t or None) for i, t in pair if i.startswith(incomplete)]


def clarifications(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """--clarify MEMORY_ID=TEXT: the conflict's memories, each followed by '='."""
    return [CompletionItem(f"{i}=", help=t or None) for i, t in _conflict_pair(ctx)
            if f"{i}=".startswith(incomplete)]
