"""Open the cache database, recreating it when it is missing, corrupt or of an old schema.

IO boundary for .dmm/index/. Writers serialise on an flock of .dmm/index/lock so that two dmm
processes never build or update the cache at the same time; readers rely on SQLite's own
locking (busy timeout). A broken cache is never fatal: it is deleted and rebuilt.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from dmm.errors import BusyError
from dmm.fsutil import file_lock, write_new
from dmm.index.schema import DDL, SCHEMA_VERSION
from dmm.text.lexicon import read_lexicon

DB_NAME = "cache.sqlite3"
INDEX_GITIGNORE = "# dmm cache: rebuilt on demand, never committed\n*\n"
BUSY_TIMEOUT_S = 30.0


def write_lock(index_dir: Path) -> contextlib.AbstractContextManager:
    """Exclusive lock for anything that writes the cache (held by one process at a time)."""
    return file_lock(index_dir / "lock")


def connect(index_dir: Path) -> sqlite3.Connection:
    """A connection to a cache with the current schema (created or rebuilt if needed)."""
    _ensure_gitignore(index_dir)
    path = index_dir / DB_NAME
    for _ in range(3):
        try:
            conn = _open(path)
            if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
                return conn
            conn.close()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise BusyError("the dmm cache is locked by another process",
                                hint="wait for the other dmm command to finish") from exc
        except sqlite3.DatabaseError:
            pass  # not a database / malformed: rebuilt below
        with write_lock(index_dir):
            if not _is_current(path):
                create(path)
    raise BusyError(f"could not open the cache at {path}")


def create(path: Path) -> None:
    """Write an empty cache with the current schema next to ``path``, then move it in place.

    Building aside and renaming keeps another process from ever seeing a half-made cache.
    Callers hold write_lock.
    """
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.executescript(DDL)
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO lexicon(word, nbrs) VALUES (?, ?)", read_lexicon())
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    finally:
        conn.close()
    for suffix in ("-journal", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    os.replace(tmp, path)


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _is_current(path: Path) -> bool:
    if not path.exists():
        return False
    try:
        conn = _open(path)
        try:
            return conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False


def _ensure_gitignore(index_dir: Path) -> None:
    """The cache is never committed: .dmm/index/ ignores itself."""
    ignore = index_dir / ".gitignore"
    if not ignore.exists():
        write_new(ignore, INDEX_GITIGNORE)
