"""Read memories and problems back out of a fresh cache (no file IO)."""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from typing import TYPE_CHECKING, Iterator

from dmm.index.db import in_chunks
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
    return Memory(id=mem_id, path=path, title=title, body=body, tags=_listed(tags),
                  scope=scope, priority=priority, confidence=confidence, status=status,
                  created=dt.date.fromisoformat(created) if created else None,
                  expires=dt.date.fromisoformat(expires) if expires else None,
                  supersedes=_listed(supersedes), related=_listed(related), tokens=tokens)


def _listed(text: str) -> list:
    """A JSON list column; the empty one most memories have (no `supersedes`, no `related`)
    without the decoder, which costs microseconds a call, 1-2 per row read."""
    return [] if text == "[]" else json.loads(text)


# the same columns with an empty body, for readers that never look at it (`dmm list`)
NO_BODY = COLUMNS.replace(" body,", " '',")
# and with empty lists too, for readers of the scalar fields alone (a conflict's severity)
SCALARS = NO_BODY.replace(" tags,", " '[]',").replace(" supersedes, related,", " '[]', '[]',")


def memories(conn: sqlite3.Connection, where: str = "", params: tuple = (),
             limit: int | None = None, bodies: bool = True,
             lists: bool = True) -> list[Memory]:
    """The memories ``where`` selects, by path; ``bodies`` / ``lists`` False: with empty
    bodies / tags, supersedes and related (what a reader never looks at is not decoded)."""
    columns = NO_BODY if lists else SCALARS
    sql = (f"SELECT {COLUMNS} FROM {FROM} {where} ORDER BY path" if bodies else
           f"SELECT {columns} FROM memories m {where} ORDER BY path")
    if limit is not None:
        sql, params = sql + " LIMIT ?", (*params, limit)
    return [to_memory(row) for row in conn.execute(sql, params)]


def active_paths(conn: sqlite3.Connection, ids: list[str]) -> dict[str, str | None]:
    """For each of ``ids`` the cache knows: the path of its active file, or None when every
    file with that id is deprecated."""
    known: dict[str, str | None] = {}
    for chunk, marks in in_chunks(ids):
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
    for chunk, marks in in_chunks(docs):
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
    found, _ = _problems(conn, today, ephemeral_days, None)
    return sorted(found, key=lambda p: (p.path, p.severity, p.field or ""))


def problem_page(conn: sqlite3.Connection, limit: int, today: dt.date | None = None, *,
                 ephemeral_days: int = 0) -> tuple[list[Problem], int, int]:
    """(the first ``limit`` of ``problems``, errors first, then by path; how many errors and
    warnings there are in all): what a summary shows (`dmm status`), counted in SQL and read
    a page at a time, so that a store with thousands of warnings costs what the page shows."""
    found, counts = _problems(conn, today, ephemeral_days, limit)
    found.sort(key=lambda p: (p.severity != "error", p.path, p.severity, p.field or ""))
    errors = counts.get("error", 0)
    return found[:limit], errors, sum(counts.values()) - errors


# the problems of the day: (field, SQL after SELECT path, <column> FROM memories); `+status`
# keeps SQLite on the partial index of `expires` (a few rows) rather than the one on status
# (every active memory: 33 ms at 50,000)
_EXPIRED = "WHERE expires IS NOT NULL AND expires < ? AND +status = 'active'"
_OLD_EPHEMERAL = ("WHERE scope = 'ephemeral' AND status = 'active' AND expires IS NULL AND "
                  "created < ?")


def _problems(conn: sqlite3.Connection, today: dt.date | None, ephemeral_days: int,
              limit: int | None) -> tuple[list[Problem], dict[str, int]]:
    """``problems`` from each source, at most ``limit`` of each (None: all) in the order a
    page shows them, and how many of each severity there are in all."""
    page = "" if limit is None else f" LIMIT {int(limit)}"
    counts: dict[str, int] = dict(conn.execute(
        "SELECT severity, count(*) FROM problems GROUP BY severity").fetchall()) \
        if limit is not None else {}
    found = [Problem(path, message, field, severity) for path, field, severity, message in
             conn.execute("SELECT path, field, severity, message FROM problems "
                          "ORDER BY severity != 'error', path" + page)]
    today = today or dt.date.today()
    day_rows = [(_EXPIRED, "expires", (today.isoformat(),),
                 lambda expires: f"expired on {expires}: queries leave it out; deprecate it "
                                 "or extend `expires`")]
    if ephemeral_days:
        cutoff = today - dt.timedelta(days=ephemeral_days)
        day_rows.append((_OLD_EPHEMERAL, "created", (cutoff.isoformat(),),
                         lambda created: f"ephemeral note from {created}, "
                         f"{count((today - dt.date.fromisoformat(created)).days, 'day')} old, "
                         "with no `expires`: promote it if it still holds, else deprecate it"))
    for where, field, params, say in day_rows:
        if limit is not None:
            counts["warning"] = counts.get("warning", 0) + conn.execute(
                f"SELECT count(*) FROM memories {where}", params).fetchone()[0]
        found += [Problem(path, say(value), field, "warning") for path, value in conn.execute(
            f"SELECT path, {field} FROM memories {where} ORDER BY path{page}", params)]
    dup_ids = [row[0] for row in conn.execute(
        "SELECT id FROM memories GROUP BY id HAVING count(*) > 1")]
    if dup_ids:
        from dmm.memory.validate import check_store

        marks = ",".join("?" * len(dup_ids))
        store_wide = check_store(memories(conn, f"WHERE id IN ({marks})", tuple(dup_ids)))
        for p in store_wide:
            counts[p.severity] = counts.get(p.severity, 0) + 1
        found += store_wide
    return found, counts


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
    """Memories by scope and by status, for `dmm status`: one pass over the (status, scope)
    index, not over the rows."""
    by_scope: dict[str, int] = {}
    active: dict[str, int] = {}
    by_status: dict[str, int] = {}
    for status, scope, n in conn.execute(
            "SELECT status, scope, count(*) FROM memories "
            "GROUP BY status, scope"):
        by_scope[scope] = by_scope.get(scope, 0) + n
        by_status[status] = by_status.get(status, 0) + n
        if status == "active":
            active[scope] = n
    return {"total": sum(by_status.values()), "by_scope": dict(sorted(by_scope.items())),
            "active_by_scope": dict(sorted(active.items())),
            "by_status": dict(sorted(by_status.items()))}


def listing(conn: sqlite3.Connection, selection: Selection, limit: int | None = None,
            today: dt.date | None = None) -> tuple[list[Memory], int]:
    """The memories ``selection`` chooses, in its order (`dmm list`, the MCP `memory_list`,
    `GET /memories`); (at most ``limit`` of them, how many it chooses).

    Status, scope, folder and age are filters of the query and the order is its ORDER BY, so
    a page costs its rows plus one count (both in SQLite's C, over narrow rows), not a Memory
    per memory of the store. Tags (compared in Python's case) and words (in the bodies) are
    checked on the rows the query gives, which then all have to be read for the count."""
    sql, args, exact = _listing_query(selection, today)
    if exact:
        total = conn.execute(f"SELECT count(*) FROM memories m {sql[0]}", args).fetchone()[0]
        page = conn.execute(f"{sql[1]} LIMIT ?", (*args, -1 if limit is None else limit))
        return [to_memory(row) for row in page], total
    shown, total = [], 0
    for memory in _checked(conn.execute(sql[1], args), selection, today):
        total += 1
        if limit is None or len(shown) < limit:
            shown.append(memory)
    return shown, total


def iter_listing(conn: sqlite3.Connection, selection: Selection,
                 today: dt.date | None = None) -> Iterator[Memory]:
    """Every memory ``selection`` chooses, in its order, one at a time (`dmm list --json`
    streams them: the first is written before the last is read)."""
    sql, args, exact = _listing_query(selection, today)
    rows = conn.execute(sql[1], args)
    return (to_memory(row) for row in rows) if exact else _checked(rows, selection, today)


def _checked(rows: Iterator[tuple], selection: Selection,
             today: dt.date | None) -> Iterator[Memory]:
    """The memories of ``rows`` whose tags and words match (what SQL cannot decide exactly:
    Python's case rules, words anywhere in the text)."""
    from dmm.memory.select import select

    for row in rows:
        memory = to_memory(row)
        if select([memory], selection, today):  # the rule of everywhere else, row by row
            yield memory


# a tag made of these characters can be looked for in the tags' JSON text by LIKE (ASCII
# case-insensitive) without missing a match: no JSON escapes, and no 'k', which the Kelvin
# sign (U+212A) lowers to in Python
_LIKE_SAFE_TAG = re.compile(r"[a-jl-z0-9 ._/:+-]+", re.ASCII)


def _listing_query(s: Selection, today: dt.date | None) -> tuple[tuple[str, str], list, bool]:
    """((WHERE clause, whole SELECT with ORDER BY), its arguments, whether the query alone
    decides: False when tags or words must still be checked row by row)."""
    from dmm.memory.select import SORTS

    today = today or dt.date.today()
    where, args = [], []
    active = "(m.status = 'active' AND m.confidence != 'deprecated')"  # Memory.is_active
    if s.status != "all":
        where.append(active if s.status == "active" else f"NOT {active}")
    if s.scopes:
        where.append(f"m.scope IN ({','.join('?' * len(s.scopes))})")
        args += list(s.scopes)
    prefix = s.under.strip("/")
    if prefix:  # the folder itself or below it: a range of the path index ('0' follows '/')
        where.append("(m.path = ? OR (m.path >= ? AND m.path < ?))")
        args += [prefix, prefix + "/", prefix + "0"]
    for days, op in ((s.older_than, "<"), (s.newer_than, ">")):
        if days is not None:  # more (fewer) whole days old than ``days``: created before (after)
            where.append(f"m.created {op} ?")
            args.append(_days_before(today, days))
    for tag in s.tags:
        if _LIKE_SAFE_TAG.fullmatch(tag.lower()):  # narrows; the row check decides
            where.append("m.tags LIKE ? ESCAPE '\\'")
            args.append("%" + re.sub(r"([%_\\])", r"\\\1", tag.lower()) + "%")
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    if s.sort not in SORTS:
        raise ValueError(f"unknown sort {s.sort!r}")
    # select() sorts the rows with a value, then those without (`created` only), each in path
    # order among equals (a stable sort of rows read in path order)
    order = (f"m.{s.sort} IS NULL, m.{s.sort}{' DESC' if s.reverse else ''}"
             + (", m.path" if s.sort != "path" else ""))
    select_sql = (f"SELECT {COLUMNS} FROM {FROM} {clause} ORDER BY {order}" if s.words else
                  f"SELECT {NO_BODY} FROM memories m {clause} ORDER BY {order}")
    return (clause, select_sql), args, not s.tags and not any(w.strip() for w in s.words)


def _days_before(today: dt.date, days: int) -> str:
    """The ISO date ``days`` before ``today`` (the earliest date for more days than that)."""
    try:
        return (today - dt.timedelta(days=days)).isoformat()
    except OverflowError:
        return dt.date.min.isoformat()
