"""The semantic index on disk: passage vectors keyed by what they were computed from.

IO boundary for ``semantic.sqlite3`` in the clone's shared state folder
(``<git-common-dir>/dmm/``, see dmm.state), a cache shared by the clone's work trees, where no
commit can reach it, deleted at any time. Rows are keyed by ``chunks.text_key``
(model, cutting, title, body), not by file: moving a memory, changing its tags or rebuilding
the memory cache (`dmm reindex`) costs no embedding; an edited memory gets a new key and only
it is embedded again. Vectors are float16 (384 x 2 bytes a passage): cosines change by less
than 0.001, and 10,000 memories take ~25 MB instead of ~50.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dmm.index.db import in_chunks
from dmm.priority import step_aside

DB_NAME = "semantic.sqlite3"
SCHEMA_VERSION = 1
DDL = """
CREATE TABLE IF NOT EXISTS vectors (
    key TEXT PRIMARY KEY,     -- chunks.text_key of the memory
    n INTEGER NOT NULL,       -- passages
    vecs BLOB NOT NULL        -- n x DIMENSION float16, row-major
) WITHOUT ROWID;
"""


def connect(folder: Path | None) -> sqlite3.Connection:
    """The vector cache in ``folder``; an in-memory one when there is no usable folder (None)
    or the file is a symbolic link (never written through). A damaged or older file is
    replaced, never fatal."""
    from dmm import fsutil

    path = folder / DB_NAME if folder is not None else None
    try:
        if path is not None:
            fsutil.refuse_link(path)
    except fsutil.LinkRefused:
        path = None
    if path is None:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.executescript(DDL)
        return conn
    for _ in range(2):
        try:
            conn = sqlite3.connect(path, timeout=30.0, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA synchronous = NORMAL")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise sqlite3.DatabaseError("an older semantic index")
            conn.executescript(DDL)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            return conn
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - it may never have opened
                pass
            for suffix in ("", "-journal", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
    raise sqlite3.DatabaseError(f"cannot open the semantic index at {path}")


def keys(conn: sqlite3.Connection, wanted: list[str]) -> set[str]:
    """Which of ``wanted`` have vectors (a look at the primary key only: fast). Each chunk
    read is its own statement: a request being answered goes first (dmm/priority.py)."""
    out: set[str] = set()
    for part, marks in in_chunks(wanted):
        step_aside()
        out.update(k for (k,) in conn.execute(
            f"SELECT key FROM vectors WHERE key IN ({marks})", part))
    return out


def known(conn: sqlite3.Connection, keys: list[str]) -> dict[str, tuple[int, bytes]]:
    out: dict[str, tuple[int, bytes]] = {}
    for part, marks in in_chunks(keys):
        step_aside()
        for key, n, vecs in conn.execute(
                f"SELECT key, n, vecs FROM vectors WHERE key IN ({marks})", part):
            out[key] = (n, vecs)
    return out


def store(conn: sqlite3.Connection, rows: list[tuple[str, int, bytes]]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany("INSERT OR REPLACE INTO vectors(key, n, vecs) VALUES (?, ?, ?)", rows)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def prune(conn: sqlite3.Connection, keep: set[str]) -> int:
    """Forget the vectors of texts no memory has any more; returns how many."""
    gone = [k for (k,) in conn.execute("SELECT key FROM vectors") if k not in keep]
    if gone:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("DELETE FROM vectors WHERE key = ?", [(k,) for k in gone])
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return len(gone)
