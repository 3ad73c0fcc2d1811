"""Write and read the usage log (IO boundary: ``usage.sqlite3`` in the clone's shared state
folder, ``<git-common-dir>/dmm/``: one log for every work tree of a clone, where no commit can
reach it; see dmm.state)."""

from __future__ import annotations

import datetime as dt
import secrets
import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS query_log (
    query_id TEXT PRIMARY KEY,
    query_text TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    budget INTEGER NOT NULL,
    tokens_used INTEGER NOT NULL,
    memories_returned INTEGER NOT NULL,
    baseline_count INTEGER NOT NULL,
    retrieved_count INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_query_log_timestamp ON query_log(timestamp DESC);
CREATE TABLE IF NOT EXISTS memory_usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL,
    path TEXT NOT NULL,
    query_id TEXT NOT NULL REFERENCES query_log(query_id),
    timestamp TEXT NOT NULL,
    relevance_score REAL,
    was_included INTEGER NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('baseline', 'retrieved'))
);
CREATE INDEX IF NOT EXISTS idx_memory_usage_memory ON memory_usage(memory_id);
"""


def connect(ws) -> sqlite3.Connection:
    """The usage log of ``ws``'s clone, created when missing; a damaged one is replaced (it is
    local telemetry, and a file SQLite cannot read holds nothing to keep). An in-memory log
    when the state folder cannot be written or the log is a link (see dmm.index.db.usable)."""
    from dmm import fsutil, state
    from dmm.index import db

    folder = state.shared_folder(ws)
    if folder is None:
        return _open(":memory:")
    path = folder / state.USAGE_LOG
    try:
        return _open(db.sqlite_file(path))
    except fsutil.LinkRefused as exc:
        db.NOTICES.append(f"usage log not kept: {exc}")
        return _open(":memory:")
    except sqlite3.DatabaseError as exc:
        text = str(exc)
        if "locked" in text or "full" in text or "readonly" in text:
            raise
        with fsutil.file_lock(folder / "usage.lock"):
            if path.is_dir() and not path.is_symlink():
                import shutil

                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        db.NOTICES.append(f"the usage log was damaged ({text}); a new one was started")
        return _open(path)


def _open(path) -> sqlite3.Connection:
    from dmm.index.db import BUSY_TIMEOUT_S, busy_timeout

    conn = sqlite3.connect(path, timeout=min(10.0, busy_timeout(), BUSY_TIMEOUT_S),
                           isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = OFF")  # telemetry: losing the last row is fine
        if conn.execute("PRAGMA user_version").fetchone()[0] != 1:
            conn.executescript(SCHEMA)
            conn.execute("PRAGMA user_version = 1")
        conn.execute("SELECT count(*) FROM query_log").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def log_query(ws, pack, duration_ms: int) -> str:
    """Record one `dmm query` and every memory it returned or left out for lack of budget."""
    query_id = f"q_{dt.datetime.now(dt.timezone.utc):%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"
    stamp = now()
    stats = pack.stats()
    rows = [(e.memory.id, e.memory.path, query_id, stamp, e.relevance, 1, "baseline")
            for e in pack.baseline]
    rows += [(e.memory.id, e.memory.path, query_id, stamp, e.relevance, 1, "retrieved")
             for e in pack.retrieved]
    rows += [(e.memory.id, e.memory.path, query_id, stamp, e.relevance, 0, "retrieved")
             for e in pack.excluded]
    conn = connect(ws)
    try:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO query_log VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (query_id, pack.task, stamp, pack.budget, stats["total_tokens"],
                      stats["baseline_count"] + stats["retrieved_count"],
                      stats["baseline_count"], stats["retrieved_count"], duration_ms))
        conn.executemany("INSERT INTO memory_usage(memory_id, path, query_id, timestamp, "
                         "relevance_score, was_included, source) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         rows)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return query_id


STATS_SQL = """
    SELECT memory_id, max(path), count(*), sum(was_included), avg(relevance_score),
           max(timestamp), min(timestamp)
    FROM memory_usage {where} GROUP BY memory_id"""


def memory_stats(ws, memory_id: str | None = None, top: int | None = None) -> list[dict]:
    """Usage statistics per memory (of one, with ``memory_id``). ``top``: the most retrieved
    first (ties by path), at most ``top`` of them (0: all): ordered and cut in SQL, so only
    the rows shown become dicts."""
    conn = connect(ws)
    try:
        where, args = ("WHERE memory_id = ?", (memory_id,)) if memory_id else ("", ())
        sql = STATS_SQL.format(where=where)
        if top is not None:
            sql += " ORDER BY count(*) DESC, max(path) LIMIT ?"
            args = (*args, top or -1)
        rows = conn.execute(sql, args).fetchall()
    finally:
        conn.close()
    today = dt.datetime.now(dt.timezone.utc)
    out = []
    for mid, path, retrievals, inclusions, avg_rel, last, first in rows:
        days = (today - dt.datetime.fromisoformat(last)).days if last else None
        out.append({"memory_id": mid, "path": path, "total_retrievals": retrievals,
                    "total_inclusions": inclusions or 0,
                    "inclusion_rate": round((inclusions or 0) / retrievals, 3),
                    "avg_relevance_score": round(avg_rel or 0.0, 3),
                    "last_retrieved_at": last, "first_retrieved_at": first,
                    "days_since_last_retrieval": days})
    return out


def queries(ws, limit: int, after: str | None = None) -> list[dict]:
    if after:
        import datetime as dt

        from dmm.errors import InvalidInputError

        try:
            dt.datetime.fromisoformat(after)
        except ValueError:
            raise InvalidInputError(f"after: {after!r} is not a date or time (ISO 8601, e.g. "
                                    "2026-11-01 or 2026-11-01T09:30)") from None
    conn = connect(ws)
    try:
        sql = "SELECT * FROM query_log"
        args: tuple = ()
        if after:
            sql += " WHERE timestamp > ?"
            args = (after,)
        sql += " ORDER BY timestamp DESC, rowid DESC LIMIT ?"
        cur = conn.execute(sql, args + (limit,))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]
    finally:
        conn.close()
