"""What the CLI, queries and the reviewer ask of conflict detection, in one place.

Keeps conflicts current: when memories changed since the last scan, an incremental scan of
the changed memories runs first (a full scan when this cache has never scanned).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

from dmm.conflicts import store
from dmm.conflicts.model import OPEN, Conflict, ConflictMemory, conflict_id, pair_key
from dmm.conflicts.scanner import ScanResult, scan
from dmm.errors import InvalidInputError, NotFoundError
from dmm.gitrepo import Git
from dmm.index import db, read
from dmm.landing import commit_files
from dmm.workspace import Workspace


def run_scan(ws: Workspace, conn: sqlite3.Connection, *, full: bool = False,
             since: str | None = None, memory: str | None = None,
             methods: list[str] | None = None) -> ScanResult:
    cfg = ws.config["conflicts"]
    focus, kind = None, "full"
    if memory:
        found = read.find(conn, memory)
        if not found:
            raise NotFoundError(f"no memory {memory}")
        focus, kind = {found[0].id}, "targeted"
    elif since:
        git = Git(ws.root)
        if git.rev_parse(since) is None:
            raise InvalidInputError(f"{since} is not a commit")
        paths = git.run("diff", "--name-only", "-z", since, "--", ".dmm/memory").stdout
        rel = [p.removeprefix(".dmm/memory/") for p in paths.split("\0") if p]
        focus = {m.id for m in read.memories(conn) if m.path in rel}
        kind = "incremental"
    elif not full:
        delta = store.changed_since_scan(conn)
        if delta is not None:
            focus, kind = delta[0], "incremental"
    try:
        with db.write_lock(ws.index_dir):
            return scan(conn, cfg, scan_type=kind, focus_ids=focus, methods=methods)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc


def ensure_current(ws: Workspace, conn: sqlite3.Connection) -> ScanResult | None:
    if store.needs_scan(conn):
        return run_scan(ws, conn)
    return None


def _memories(conn: sqlite3.Connection) -> dict[str, ConflictMemory]:
    return {m.id: ConflictMemory(m.id, m.path, m.title, m.scope, m.priority, "secondary",
                                 m.created.isoformat() if m.created else None)
            for m in read.memories(conn)}


def conflicts(ws: Workspace, conn: sqlite3.Connection, memory_ids: list[str] | None = None,
              *, status: str = "all", type_: str | None = None, min_confidence: float = 0.0,
              conflict_id: str | None = None, limit: int | None = None,
              ) -> tuple[list[Conflict], int]:
    """Current conflicts with their committed decisions applied, filtered in SQL so that a
    store with thousands of conflicts lists its top ones quickly; (page, total matching)."""
    ensure_current(ws, conn)
    decided = store.decisions(ws.conflicts_dir)
    closed = {cid for cid, d in decided.items() if d.get("status") not in OPEN}
    include, exclude = None, set()
    if status in OPEN:
        exclude = closed
    elif status != "all":
        include = {cid for cid, d in decided.items() if d.get("status") == status}
    found, total = store.query(conn, include=include, exclude=exclude, type_=type_,
                               memories=memory_ids, min_confidence=min_confidence,
                               conflict_id=conflict_id, limit=limit)
    flagged = {cid: d for cid, d in decided.items() if d.get("status") == "flagged"}
    extra = []
    if flagged and status in ("all", "unresolved", "flagged"):
        seen = {f.conflict_id for f in found}
        extra = [c for c in store.with_decisions([], flagged, _memories(conn))
                 if (not memory_ids or {m.memory_id for m in c.memories} & set(memory_ids))
                 and (not conflict_id or c.conflict_id == conflict_id)
                 and (not type_ or c.type == type_) and c.conflict_id not in seen]
    out = store.with_decisions(found, decided, {}) + extra
    return out[:limit] if limit else out, total + len(extra)


def stats(ws: Workspace, conn: sqlite3.Connection) -> dict:
    """Counts by type, detection method and status over every detected conflict."""
    ensure_current(ws, conn)
    decided = store.decisions(ws.conflicts_dir)
    detected = {r[0] for r in conn.execute("SELECT conflict_id FROM conflicts")}
    by_status = {"unresolved": len(detected - set(decided))}
    for cid, d in decided.items():
        if cid in detected or d.get("status") == "flagged":
            by_status[d["status"]] = by_status.get(d["status"], 0) + 1
    avg = conn.execute("SELECT avg(confidence) FROM conflicts").fetchone()[0] or 0.0
    return {"total": len(detected) + sum(1 for cid, d in decided.items()
                                         if d.get("status") == "flagged" and cid not in detected),
            "by_type": store.counts(conn, "type"),
            "by_method": store.counts(conn, "detection_method"),
            "by_status": by_status, "average_confidence": round(avg, 3)}


def record_decision(ws: Workspace, conn: sqlite3.Connection, *, status: str, ids: list[str],
                    reason: str, description: str = "", type_: str = "contradictory",
                    who: str | None = None) -> tuple[str, str]:
    """Commit a dismissal or flag as .dmm/conflicts/<conflict_id>.json; (conflict id, commit)."""
    known = {m.id for m in read.memories(conn)}
    missing = [i for i in ids if i not in known]
    if len(ids) != 2 or ids[0] == ids[1]:
        raise InvalidInputError("a conflict is between exactly two different memories")
    if missing:
        raise NotFoundError(f"no memory {', '.join(missing)}")
    git = Git(ws.root)
    cid = conflict_id(*ids)
    record = {"conflict_id": cid, "memories": list(pair_key(*ids)), "status": status,
              "type": type_, "description": description, "reason": reason,
              "by": who or git.user_name(),
              "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    rel = store.decision_path(ws.conflicts_dir, cid).relative_to(ws.root).as_posix()
    message = (f"dmm: {status} conflict {cid}\n\n{reason.strip() or description.strip()}\n\n"
               f"Dmm-Conflict: {cid}\nDmm-Resolution: {'dismiss' if status == 'dismissed' else 'flag'}\n"
               f"Dmm-Memory: {ids[0]}\nDmm-Memory: {ids[1]}\n"
               f"Dmm-Reason: {' '.join(reason.split())}\nDmm-Resolved-By: {record['by']}\n")
    landed = commit_files(git, {rel: (json.dumps(record, indent=2) + "\n").encode()}, message)
    return cid, landed.commit
