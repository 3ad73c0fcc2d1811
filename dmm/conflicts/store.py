"""Where conflicts live: detected ones in the cache, human decisions in committed files.

Detected conflicts are derived data (tables `conflicts`, `conflict_scans` of the cache); a lost
cache is rebuilt by the next scan, with the same conflict ids. Decisions people make (flag, and
every resolution: deprecate, merge, clarify, dismiss, defer) are JSON files under
.dmm/conflicts/, committed to git, so they survive a deleted cache, pushes and clones; a
dismissed pair is never reported again.
"""

from __future__ import annotations

import json
import marshal
import sqlite3
from pathlib import Path

from dmm.conflicts.model import ANALYZERS, PASSES, Conflict, ConflictMemory, status_of
from dmm.index import db
from dmm.index.db import in_chunks
from dmm.index.refresh import touched_paths
from dmm.workspace import DMM_DIR


def save(conn: sqlite3.Connection, conflicts: list[Conflict], focus: set[str] | None,
         scan_id: str, fingerprint: str, methods: set[str] | None = None,
         complete: bool = True) -> tuple[list[str], int]:
    """Replace the stored conflicts (all, or those touching ``focus``); (ids of the conflicts
    this cache had not stored before, how many it had).
    ``fingerprint``: the analyzers' version and settings the scan ran with. ``methods``: a
    partial scan ran only these analyzers, so it replaces only what they alone found (a
    conflict another analyzer also found stays as it was) and leaves the store marked as not
    scanned by the others. ``complete``: False for a scan of part of the store chosen by a
    person (a scope), which does not bring the rest up to date either."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        # a conflict this cache ever reported is not new when it comes back (an undone
        # resolution reopens it; a memory edited back and forth)
        ids = None if focus is None else [c.conflict_id for c in conflicts]
        first_seen = {**_seen(conn, ids), **_stored(conn, "conflict_id, detected_at",
                                                    "conflict_id", ids)}
        kept = set()  # found by an analyzer this scan did not run: not this scan's to judge
        if methods is not None:
            for cid, record in conn.execute("SELECT conflict_id, record FROM conflicts"):
                found_by = set(_cached_json(record).get("methods") or ())
                if not found_by <= methods:
                    kept.add(cid)
        carried = _found_by_passes(conn, methods or set(ANALYZERS))
        kept |= set(carried)
        if focus is None:
            stale = conn.execute("SELECT conflict_id, a, b FROM conflicts").fetchall()
        else:  # only the rows of its focus can be replaced (read by the indexes on a and b)
            rows = {**_stored(conn, "conflict_id, a, b", "a", sorted(focus)),
                    **_stored(conn, "conflict_id, a, b", "b", sorted(focus))}
            stale = [(cid, a, b) for cid, (a, b) in rows.items()]
        gone = [cid for cid, a, b in stale if cid not in kept
                and (focus is None or a in focus or b in focus)]
        for chunk, marks in in_chunks(gone):
            conn.execute(f"DELETE FROM conflicts WHERE conflict_id IN "
                         f"({marks})", chunk)
        # conflicts of memories that no longer exist go too
        conn.execute("DELETE FROM conflicts WHERE a NOT IN (SELECT id FROM memories) "
                     "OR b NOT IN (SELECT id FROM memories)")
        new = []
        for c in conflicts:
            if c.conflict_id in carried:  # the pass's question stays with what a scan found
                _carry(c, carried[c.conflict_id])
            elif c.conflict_id in kept:
                continue
            if c.conflict_id in first_seen:
                c.detected_at = first_seen[c.conflict_id]
            else:
                new.append(c.conflict_id)
            ids = sorted(m.memory_id for m in c.memories)
            # the scan that last found it: a finding kept from an earlier pass (the narrative
            # pass keeps its answers when the model fails) keeps the scan that found it
            c.scan_id = c.scan_id or scan_id
            conn.execute("INSERT OR REPLACE INTO conflicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (c.conflict_id, ids[0], ids[1], c.type, c.detection_method,
                          c.confidence, c.description, c.evidence, json.dumps(c.to_dict()),
                          c.detected_at, c.scan_id))
        conn.executemany("INSERT OR REPLACE INTO seen_conflicts VALUES (?, ?)",
                         [(c.conflict_id, c.detected_at) for c in conflicts])
        # only a scan by every analyzer of everything that changed brings the store up to date
        if methods is None and complete:
            _record_scanned(conn)
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('touched', ?)",
                         (marshal.dumps([]),))
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('scanned_with', ?)",
                         (fingerprint,))
            conn.execute("INSERT OR REPLACE INTO meta(key, value) SELECT 'scanned_generation', "
                         "value FROM meta WHERE key = 'generation'")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite has already rolled back after some errors
            conn.execute("ROLLBACK")
        raise
    return new, len(conflicts) - len(new)


def _stored(conn: sqlite3.Connection, columns: str, column: str,
            values: list[str] | None) -> dict:
    """Rows of the conflicts table ({first column: the rest}), all, or those whose
    ``column`` is one of ``values``."""
    if values is None:
        return {row[0]: row[1] if len(row) == 2 else row[1:]
                for row in conn.execute(f"SELECT {columns} FROM conflicts")}
    out = {}
    for chunk, marks in in_chunks(values):
        for row in conn.execute(f"SELECT {columns} FROM conflicts WHERE {column} IN "
                                f"({marks})", chunk):
            out[row[0]] = row[1] if len(row) == 2 else row[1:]
    return out


def _found_by_passes(conn: sqlite3.Connection, ran: set[str]) -> dict[str, dict]:
    """Conflicts (id: record) found only by passes this scan did not run (the narrative pass),
    in memories unchanged since: not this scan's to drop. One whose memory changed goes (the
    edit may have settled the question); the pass asks again when it runs. Reads only those
    rows, never the whole table: hooks scan after every memory commit."""
    rows = conn.execute(f"SELECT conflict_id, record FROM conflicts WHERE detection_method IN "
                        f"({','.join('?' * len(PASSES))})", PASSES).fetchall()
    found = {}
    for cid, record in rows:
        data = _cached_json(record)
        by = set(data.get("methods") or ())
        if by and by <= set(PASSES) and not by & ran and isinstance(data.get("basis"), dict):
            found[cid] = data
    if not found:
        return {}
    ids = sorted({i for data in found.values() for i in data["basis"]})
    digests = {}
    for chunk, marks in in_chunks(ids):
        digests.update(conn.execute(f"SELECT id, digest FROM memories WHERE id IN "
                                    f"({marks})", chunk))
    return {cid: data for cid, data in found.items()
            if all(digests.get(i) == d for i, d in data["basis"].items())}


def _carry(conflict: Conflict, earlier: dict) -> None:
    """``conflict``, found by a scan, keeps the question a pass asked about the same pair."""
    conflict.methods = sorted({*conflict.methods, *earlier.get("methods", ())})
    conflict.question = conflict.question or earlier.get("question")
    conflict.basis = conflict.basis or earlier.get("basis")
    if earlier.get("evidence"):
        conflict.evidence += " | " + earlier["evidence"]


def _seen(conn: sqlite3.Connection, ids: list[str] | None = None) -> dict[str, str]:
    """Conflicts this cache ever detected (all, or those of ``ids``), with when it first did."""
    if ids is None:
        return dict(conn.execute("SELECT conflict_id, detected_at FROM seen_conflicts"))
    out: dict[str, str] = {}
    for chunk, marks in in_chunks(ids):
        out.update(conn.execute(f"SELECT conflict_id, detected_at FROM seen_conflicts "
                                f"WHERE conflict_id IN ({marks})", chunk))
    return out


def first_seen(conn: sqlite3.Connection) -> dict[str, str]:
    """{conflict id: when this clone's cache first detected it}, for every conflict it ever
    detected (kept across scans: a resolved conflict is still there)."""
    return _seen(conn)


def _cached_json(text: str) -> dict:
    """A JSON record from the cache; a damaged one is reported as a damaged cache."""
    try:
        data = json.loads(text)
    except (ValueError, TypeError) as exc:
        raise sqlite3.DatabaseError(f"damaged cache row: {exc}") from None
    if not isinstance(data, dict):
        raise sqlite3.DatabaseError("damaged cache row: not a record")
    return data


def record_scan(conn: sqlite3.Connection, result) -> None:
    conn.execute("INSERT INTO conflict_scans VALUES (?, ?, ?)",
                 (result.scan_id, result.started_at, json.dumps(result.to_dict())))


def scans(conn: sqlite3.Connection, limit: int = 20) -> list[dict]:
    return [_cached_json(r[0]) for r in conn.execute(
        "SELECT record FROM conflict_scans ORDER BY started_at DESC LIMIT ?", (limit,))]


def _record_scanned(conn: sqlite3.Connection) -> None:
    """Make table ``scanned`` say the store as the cache holds it was scanned: only the rows
    of the paths a refresh touched since the last record (index/refresh.py keeps them), every
    row when that is not known. Never rewrites the whole table for a few changed memories."""
    touched = touched_paths(conn)
    if touched is None or scanned_with(conn) is None:
        conn.execute("DELETE FROM scanned")
        conn.execute("INSERT INTO scanned SELECT path, id, digest FROM memories")
        return
    for chunk, marks in in_chunks(sorted(touched)):
        conn.execute(f"DELETE FROM scanned WHERE path IN ({marks})", chunk)
        conn.execute(f"INSERT INTO scanned SELECT path, id, digest FROM memories "
                     f"WHERE path IN ({marks})", chunk)


def changed_since_scan(conn: sqlite3.Connection, fingerprint: str,
                       ) -> tuple[set[str], bool] | None:
    """(ids of memories added or changed, whether any memory went away) since the last scan;
    None when this cache never scanned, or scanned with other analyzers or settings. A scan of
    the changed ids also drops the conflicts of memories that went away (store.save), so an
    empty id set can still need a scan. A memory whose file now holds another id counts as
    gone, and the new id as added."""
    if scanned_with(conn) != fingerprint:
        return None
    changed_sql = ("SELECT m.id FROM memories m LEFT JOIN scanned s ON s.path = m.path "
                   "WHERE (s.path IS NULL OR s.id != m.id OR s.digest != m.digest)")
    gone_sql = ("SELECT 1 FROM scanned s LEFT JOIN memories m ON m.path = s.path "
                "WHERE (m.path IS NULL OR m.id != s.id)")
    touched = touched_paths(conn)
    if touched is None:  # not known since when: every memory's digest decides
        return ({row[0] for row in conn.execute(changed_sql)},
                conn.execute(gone_sql + " LIMIT 1").fetchone() is not None)
    # only the paths a refresh touched since the scan can differ
    changed, gone = set(), False
    for chunk, marks in in_chunks(sorted(touched)):
        changed.update(row[0] for row in conn.execute(
            f"{changed_sql} AND m.path IN ({marks})", chunk))
        gone = gone or conn.execute(f"{gone_sql} AND s.path IN ({marks}) LIMIT 1",
                                    chunk).fetchone() is not None
    return changed, gone


def scanned_with(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'scanned_with'").fetchone()
    return row[0] if row else None


def needs_scan(conn: sqlite3.Connection, fingerprint: str) -> bool:
    """True when memories changed since the last scan, no scan ever ran on this cache, or it
    ran with other analyzers or settings.

    Cheap on the common path: when the cache has not re-read any file since the scan (same
    refresh generation), nothing can have changed; otherwise the memories' digests decide
    (a file touched without a change of content needs no scan)."""
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN "
                             "('generation', 'scanned_generation')"))
    if scanned_with(conn) != fingerprint:
        return True
    if rows and rows.get("generation") == rows.get("scanned_generation"):
        return False
    delta = changed_since_scan(conn, fingerprint)
    return delta is None or bool(delta[0]) or delta[1]


def from_dict(d: dict) -> Conflict:
    return Conflict(d["conflict_id"], d["type"], d["detection_method"], d["confidence"],
                    d["description"], d["evidence"],
                    [ConflictMemory(**m) for m in d["memories"]], d.get("status", "unresolved"),
                    d.get("detected_at", ""), d.get("methods", []), d.get("decision"),
                    d.get("question"), d.get("basis"), scan_id=d.get("scan_id"))


# --- committed decisions ------------------------------------------------------------------------

def record_path(cid: str) -> str:
    """Where the decision about conflict ``cid`` is committed, from the repository root
    (``decisions`` reads these files back from the work tree)."""
    return f"{DMM_DIR}/conflicts/{cid}.json"


RECORD_MAX_BYTES = 1024 * 1024  # a decision record is a few KB


def in_scopes(conn: sqlite3.Connection, scopes: list[str]) -> set[str]:
    """Ids of the memories in ``scopes`` (the cache's index on scope: no read of the store)."""
    marks = ",".join("?" * len(scopes))
    return {r[0] for r in conn.execute(f"SELECT id FROM memories WHERE scope IN ({marks})",
                                       list(scopes))}


def decisions(conflicts_dir: Path) -> dict[str, dict]:
    """Every committed decision, by conflict id (unreadable files are skipped)."""
    from dmm.fsutil import UnreadableFile, read_regular

    out = {}
    if not conflicts_dir.is_dir() or conflicts_dir.is_symlink():
        return out
    for path in sorted(conflicts_dir.glob("conflict_*.json")):
        try:  # never through a link: a committed one would show another file's JSON
            data = json.loads(read_regular(path, RECORD_MAX_BYTES))
        except (OSError, ValueError, UnreadableFile, RecursionError):
            continue
        if isinstance(data, dict) and data.get("conflict_id") == path.stem:
            out[path.stem] = data
    return out


def with_decisions(detected_conflicts: list[Conflict], decided: dict[str, dict],
                   today: str) -> list[Conflict]:
    """Detected conflicts with their committed decisions applied (as they stand on
    ``today``, an ISO date: model.status_of)."""
    for c in detected_conflicts:
        d = decided.get(c.conflict_id)
        if d:
            c.status, c.decision = status_of(d, today), d
    return detected_conflicts


def from_decision(d: dict, memories: dict[str, ConflictMemory], today: str) -> Conflict | None:
    """A conflict that is no longer (or never was) detected, rebuilt from its decision: one
    flagged by hand, or one resolved by deprecating a memory. None when a memory is gone.
    ``today``: as in ``with_decisions``."""
    ids = d.get("memories", [])
    if len(ids) != 2 or any(i not in memories for i in ids):
        return None
    mems = [ConflictMemory(**{**memories[i].to_dict(), "role": r})
            for i, r in zip(ids, ("primary", "secondary"))]
    method = d.get("detection_method", "manual")
    return Conflict(d["conflict_id"], d.get("type", "contradictory"), method,
                    d.get("confidence", 1.0), d.get("description", "flagged by hand"),
                    d.get("evidence", d.get("reason", "")), mems, status_of(d, today),
                    _text_of(d.get("detected_at")) or _text_of(d.get("at")), [method], d,
                    question=d.get("question"))


def _text_of(value) -> str:
    """A record's field that should be text: anything else (a committed record may hold a
    number or a list there) is no value, not a crash where it is sorted with text."""
    return value if isinstance(value, str) else ""


def written_on(conn: sqlite3.Connection, ids: list[str]) -> dict[str, str]:
    """{memory id: its `created` date} for those of ``ids`` the cache holds with one."""
    out: dict[str, str] = {}
    for chunk, marks in in_chunks(ids):
        out.update(conn.execute(f"SELECT id, created FROM memories WHERE created IS NOT NULL "
                                f"AND id IN ({marks})", chunk))
    return out


def found_only_by(conn: sqlite3.Connection, method: str) -> dict[str, Conflict]:
    """The stored conflicts (by id) that ``method`` alone found."""
    found = (from_dict(_cached_json(r[0])) for r in conn.execute(
        "SELECT record FROM conflicts WHERE detection_method = ?", (method,)))
    return {c.conflict_id: c for c in found if set(c.methods) == {method}}


def detected(conn: sqlite3.Connection, ids: list[str]) -> set[str]:
    """Which of the conflict ids ``ids`` the last scan detected."""
    found: set[str] = set()
    for chunk, marks in in_chunks(ids):
        found |= {r[0] for r in conn.execute(
            f"SELECT conflict_id FROM conflicts WHERE conflict_id IN ({marks})", chunk)}
    return found


def among(conn: sqlite3.Connection, memory_ids: list[str], conflicts_dir: Path) -> list[Conflict]:
    """Open conflicts between memories of ``memory_ids`` (for Memory Pack warnings): reads only
    the cache's conflicts table, and decision files only when there is something to check."""
    if len(memory_ids) < 2:
        return []
    marks = ",".join("?" * len(memory_ids))
    found = [from_dict(_cached_json(r[0])) for r in conn.execute(
        f"SELECT record FROM conflicts WHERE a IN ({marks}) AND b IN ({marks})",
        memory_ids + memory_ids)]
    if not found:
        return []
    decided = decisions(conflicts_dir)
    return [c for c in found
            if decided.get(c.conflict_id, {}).get("status") not in ("dismissed", "resolved")]


def query(conn: sqlite3.Connection, *, include: set[str] | None = None,
          exclude: set[str] = frozenset(), type_: str | None = None,
          memories: list[str] | None = None, min_confidence: float = 0.0,
          conflict_id: str | None = None, limit: int | None = None,
          scopes: list[str] | None = None) -> tuple[list[Conflict], int]:
    """Detected conflicts matching the filters, most confident first, and how many match.
    ``include`` / ``exclude`` restrict by conflict id (decisions decide those sets);
    ``scopes``: one of the two memories is in one of them."""
    where, args = ["confidence >= ?"], [min_confidence]
    if type_:
        where.append("type = ?")
        args.append(type_)
    if memories:
        marks = ",".join("?" * len(memories))
        where.append(f"(a IN ({marks}) OR b IN ({marks}))")
        args += list(memories) * 2
    if scopes:
        marks = ",".join("?" * len(scopes))
        # through the index on scope, whatever the size of the scope
        where.append(f"(a IN (SELECT id FROM memories WHERE scope IN ({marks})) OR "
                     f"b IN (SELECT id FROM memories WHERE scope IN ({marks})))")
        args += list(scopes) * 2
    if conflict_id:
        where.append("conflict_id = ?")
        args.append(conflict_id)
    if include is not None:
        where.append(f"conflict_id IN ({','.join('?' * len(include))})")
        args += sorted(include)
    if exclude:
        where.append(f"conflict_id NOT IN ({','.join('?' * len(exclude))})")
        args += sorted(exclude)
    sql_where = " AND ".join(where)
    total = conn.execute(f"SELECT count(*) FROM conflicts WHERE {sql_where}", args).fetchone()[0]
    if limit:  # records carry the scan_id of the scan that stored them
        return _page(conn, sql_where, args, int(limit)), total
    sql = (f"SELECT record FROM conflicts WHERE {sql_where} "
           "ORDER BY confidence DESC, conflict_id")
    return [from_dict(_cached_json(r[0])) for r in conn.execute(sql, args)], total


def _page(conn: sqlite3.Connection, where: str, args: list, limit: int) -> list[Conflict]:
    """The first ``limit`` conflicts matching ``where`` in the order lists show them (their
    score as recorded, rounded to 3 places, then their id), read from the conflicts_rank
    index: the page's rows, those that round to the same score as its last, and no other
    record. The index orders by the unrounded score; rounding never reorders two scores,
    only makes them equal, so only the page's last score can take in rows from beyond it."""
    ranked = f"SELECT conflict_id, confidence FROM conflicts WHERE {where}"
    top = conn.execute(f"{ranked} ORDER BY confidence DESC, conflict_id LIMIT ?",
                       (*args, limit)).fetchall()
    if len(top) == limit:  # the page again, with every row that may round to its last score
        top = conn.execute(f"{ranked} AND confidence >= ?",
                           (*args, round(top[-1][1], 3) - 0.001)).fetchall()
    chosen = sorted(top, key=lambda r: (-round(r[1], 3), r[0]))[:limit]
    records = {}
    ids = [cid for cid, _ in chosen]
    for chunk, marks in in_chunks(ids):
        records.update(conn.execute(f"SELECT conflict_id, record FROM conflicts WHERE "
                                    f"conflict_id IN ({marks})", chunk))
    return [from_dict(_cached_json(records[cid])) for cid in ids]

