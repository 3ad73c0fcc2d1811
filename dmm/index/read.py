"""Read memories and problems back out of a fresh cache (no file IO)."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from typing import TYPE_CHECKING

from dmm.memory import Memory, Problem
from dmm.render import count

if TYPE_CHECKING:
    from dmm.memory.select import Selection

COLUMNS = ("m.doc, path, id, title, body, tags, scope, priority, confidence, status, created, "
           "expires, supersedes, related, tokens")
FROM = "memories m JOIN bodies b ON b.doc = m.doc"


def to_memory(row: tuple) -> Memory:
    (_doc, path, mem_id, title, body, tags, scope, priority, confidence, status, created,
     expires, supersedes, related, tokens) = row
    try:
        return _memory(path, mem_id, title, body, tags, scope, priority, confidence, status,
                       created, expires, supersedes, related, tokens)
    except (ValueError, TypeError) as exc:  # a row the cache did not write: it is damaged
        raise sqlite3.DatabaseError(f"damaged cache row for {path}: {exc}") from None


def _memory(path, mem_id, title, body, tags, scope, priority, confidence, status, created,
            expires, supersedes, related, tokens) -> Memory:
    return Memory(id=mem_id, path=path, title=title, body=body, tags=json.loads(tags),
                  scope=scope, priority=priority, confidence=confidence, status=status,
                  created=dt.date.fromisoformat(created) if created else None,
                  expires=dt.date.fromisoformat(expires) if expires else None,
                  supersedes=json.loads(supersedes), related=json.loads(related), tokens=tokens)


# the same columns with an empty body, for readers that never look at it (`dmm list`)
NO_BODY = COLUMNS.replace(" body,", " '',")


def memories(conn: sqlite3.Connection, where: str = "", params: tuple = (),
             limit: int | None = None, bodies: bool = True) -> list[Memory]:
    sql = (f"SELECT {COLUMNS} FROM {FROM} {where} ORDER BY path" if bodies else
           f"SELECT {NO_BODY} FROM memories m {where} ORDER BY path")
    if limit is not None:
        sql, params = sql + " LIMIT ?", (*params, limit)
    return [to_memory(row) for row in conn.execute(sql, params)]


def active_paths(conn: sqlite3.Connection, ids: list[str]) -> dict[str, str | None]:
    """For each of ``ids`` the cache knows: the path of its active file, or None when every
    file with that id is deprecated."""
    known: dict[str, str | None] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for memory_id, path, status, confidence in conn.execute(
                f"SELECT id, path, status, confidence FROM memories WHERE id IN ({marks}) "
                "ORDER BY path", chunk):
            if status == "active" and confidence != "deprecated":
                known[memory_id] = known.get(memory_id) or path
            else:
                known.setdefault(memory_id, None)
    return known


def memories_by_doc(conn: sqlite3.Connection, docs: list[int]) -> dict[int, Memory]:
    out: dict[int, Memory] = {}
    for start in range(0, len(docs), 500):
        chunk = docs[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(f"SELECT {COLUMNS} FROM {FROM} WHERE m.doc IN ({marks})", chunk):
            out[row[0]] = to_memory(row)
    return out


def find(conn: sqlite3.Connection, key: str) -> list[Memory]:
    """Memories whose id or path (relative to .dmm/memory/) is ``key``."""
    return memories(conn, "WHERE id = ? OR path = ?", (key, key))


def problems(conn: sqlite3.Connection, today: dt.date | None = None, *,
             ephemeral_days: int = 0) -> list[Problem]:
    """Every problem: per file (kept from the last read), store-wide (duplicate ids) and
    those of the day: active memories past their `expires` (queries leave them out) and,
    when ``ephemeral_days`` is set, ephemeral notes older than that with no `expires`."""
    found = [Problem(path, message, field, severity) for path, field, severity, message in
             conn.execute("SELECT path, field, severity, message FROM problems ORDER BY path")]
    today = today or dt.date.today()
    found += [Problem(path, f"expired on {expires}: queries leave it out; deprecate it or "
                            "extend `expires`", "expires", "warning")
              for path, expires in conn.execute(
                  "SELECT path, expires FROM memories WHERE expires IS NOT NULL AND "
                  "expires < ? AND status = 'active'", (today.isoformat(),))]
    if ephemeral_days:
        cutoff = today - dt.timedelta(days=ephemeral_days)
        found += [Problem(path, f"ephemeral note from {created}, "
                                f"{count((today - dt.date.fromisoformat(created)).days, 'day')} "
                                "old, with no `expires`: promote it if it still holds, else "
                                "deprecate it",
                          "created", "warning")
                  for path, created in conn.execute(
                      "SELECT path, created FROM memories WHERE scope = 'ephemeral' AND "
                      "status = 'active' AND expires IS NULL AND created < ?",
                      (cutoff.isoformat(),))]
    dup_ids = [row[0] for row in conn.execute(
        "SELECT id FROM memories GROUP BY id HAVING count(*) > 1")]
    if dup_ids:
        from dmm.memory.validate import check_store

        marks = ",".join("?" * len(dup_ids))
        found += check_store(memories(conn, f"WHERE id IN ({marks})", tuple(dup_ids)))
    return sorted(found, key=lambda p: (p.path, p.severity, p.field or ""))


def ids_and_paths(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(id, path) of every memory: the names a mistyped one is compared with."""
    return conn.execute("SELECT id, path FROM memories").fetchall()


def invalid_paths(conn: sqlite3.Connection, under: str = "") -> list[str]:
    """The memory files left out of the store for their errors (under the folder ``under``),
    by path: what a listing or a commit must name rather than drop without a word."""
    return [path for (path,) in conn.execute(
        "SELECT DISTINCT path FROM problems WHERE severity = 'error' ORDER BY path")
        if not under or path.startswith(under.rstrip("/") + "/")]


def counts(conn: sqlite3.Connection) -> dict:
    """Memories by scope and by status, for `dmm status`."""
    by_scope = dict(conn.execute("SELECT scope, count(*) FROM memories GROUP BY scope"))
    active = dict(conn.execute("SELECT scope, count(*) FROM memories WHERE status = 'active' "
                               "GROUP BY scope"))
    by_status = dict(conn.execute("SELECT status, count(*) FROM memories GROUP BY status"))
    total = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    return {"total": total, "by_scope": by_scope, "active_by_scope": active,
            "by_status": by_status}


def listing(conn: sqlite3.Connection, selection: Selection, limit: int | None = None,
            ) -> tuple[list[Memory], int]:
    """The memories ``selection`` chooses, in its order (`dmm list`, the MCP `memory_list`,
    `GET /memories`); (at most ``limit`` of them, how many it chooses)."""
    from dmm.memory.select import select

    # the bodies (most of the cache's bytes) only when --grep looks into them
    chosen = select(memories(conn, bodies=bool(selection.words)), selection)
    return (chosen[:limit] if limit else chosen), len(chosen)
