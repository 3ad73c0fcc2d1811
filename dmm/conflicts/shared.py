"""Scan results every work tree of a clone can use: conflicts are a fact of the memories, not
of the work tree that scanned them.

Each work tree has its own cache (``<git-dir>/dmm/cache.sqlite3``: its memory files may differ),
so a linked work tree (`git worktree add`, the set-up agents are given) started "never
scanned" while the main one knew the conflicts among the very same files. After every scan
that brings a cache up to date, its conflicts are written to the clone's shared state folder
(``<git-common-dir>/dmm/scans/``), named by a hash of everything the result depends on: each
memory's id, path and content digest, the analyzers' fingerprint (version, fitted
weights, the ``[conflicts]`` settings), and the judge whose verdicts the scan applied (its
model and prompt version, or none): a language model's findings are adopted only by a work
tree whose own scan would apply the same model's verdicts, never by one with the judge off. A cache that was never scanned (or scanned with other
settings) adopts the result named by its own memories, when there is one: the same files
scanned with the same settings, so the same conflicts a scan of its own would find.

Another work tree's branch may hold other memories (someone else's, or an attacker's): its
result is named by other contents and is never adopted here; a memory that differs by one
byte changes the name. Decisions (dismissed, resolved) stay each work tree's own, read from
its committed ``.dmm/conflicts/`` as always. The folder is in the git folder, where no commit
can put a file; what is read there is checked as a whole (a damaged file is ignored).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

FOLDER = "scans"
KEEP = 8  # results kept (the newest): the states of the store the work trees are likely at
MAX_BYTES = 64 << 20


def key(conn: sqlite3.Connection, fingerprint: str) -> str:
    """The name of the scan result of the memories ``conn`` holds, scanned with
    ``fingerprint``."""
    digest = hashlib.sha256(fingerprint.encode())
    for row in conn.execute("SELECT id, path, digest FROM memories ORDER BY path, id"):
        digest.update("\0".join(row).encode() + b"\n")
    return digest.hexdigest()


def _folder(ws) -> Path | None:
    from dmm import state

    shared = state.shared_folder(ws)
    return None if shared is None else shared / FOLDER


def _named(fingerprint: str, judge: str) -> str:
    """What a kept result is named by besides the memories: the analyzers and the judge."""
    return f"{fingerprint}\0judge:{judge}" if judge else fingerprint


def publish(ws, conn: sqlite3.Connection, fingerprint: str, judge: str = "") -> None:
    """Keep the conflicts of the up-to-date cache ``conn`` for the other work trees (best
    effort: a folder that cannot be written costs them a scan, never this command).
    ``judge``: the judge whose verdicts the scan applied ("" none)."""
    from dmm.fsutil import write_atomic

    folder = _folder(ws)
    if folder is None:
        return
    records = [json.loads(r[0]) for r in conn.execute("SELECT record FROM conflicts")]
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder.is_symlink() or not folder.is_dir():
            return
        path = folder / f"{key(conn, _named(fingerprint, judge))}.json"
        write_atomic(path, json.dumps({"fingerprint": fingerprint, "judge": judge,
                                       "conflicts": records}))
        _prune(folder)
    except OSError:
        return


def _prune(folder: Path) -> None:
    found = []
    for entry in os.scandir(folder):
        if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
            found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
    for _, path in sorted(found, reverse=True)[KEEP:]:
        try:
            os.unlink(path)
        except OSError:
            pass


def _checked(c):
    """A conflict as a scan makes it: two memories, the id their pair gives."""
    from dmm.conflicts.model import conflict_id

    ids = [m.memory_id for m in c.memories]
    if len(ids) != 2 or c.conflict_id != conflict_id(*ids):
        raise ValueError("not a scanned conflict")
    return c


def _any_result(folder: Path) -> bool:
    """Whether ``folder`` holds a kept scan result."""
    try:
        with os.scandir(folder) as entries:
            return any(e.name.endswith(".json") for e in entries)
    except OSError:  # absent (no scan kept yet) or unreadable
        return False


def adopt(ws, conn: sqlite3.Connection, fingerprint: str, judge: str = "") -> bool:
    """Take into the cache ``conn``, when it was never scanned with ``fingerprint``, the scan
    result another work tree kept for exactly these memories; True when it did. The caller
    holds the cache's write lock."""
    from dmm.conflicts import store

    if store.scanned_with(conn) == fingerprint:
        return False
    folder = _folder(ws)
    if folder is None or not _any_result(folder):
        return False  # nothing to adopt: naming the result hashes every memory's digest
    name = key(conn, _named(fingerprint, judge))
    try:
        from dmm.fsutil import UnreadableFile, read_regular

        data = json.loads(read_regular(folder / f"{name}.json", MAX_BYTES))
        if data.get("fingerprint") != fingerprint or data.get("judge", "") != judge:
            return False
        found = [_checked(store.from_dict(d)) for d in data["conflicts"]]
    except (OSError, UnreadableFile, ValueError, TypeError, KeyError, AttributeError):
        return False
    if key(conn, _named(fingerprint, judge)) != name:
        return False  # the cache moved on while the file was read
    store.save(conn, found, None, "adopted", fingerprint)
    return True
