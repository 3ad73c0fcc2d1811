"""What the CLI, queries and the reviewer ask of conflict detection, in one place.

Keeps conflicts current: when memories changed since the last scan, an incremental scan of
the changed memories runs first (a full scan when this cache has never scanned, unless another
work tree of the clone kept the result for the very same memories: conflicts/shared.py).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections import Counter
from typing import TYPE_CHECKING

from dmm.conflicts import auto, shared, store
from dmm.conflicts.analyzers import fingerprint
from dmm.conflicts.model import OPEN, Conflict, ConflictMemory, conflict_id, pair_key
from dmm.errors import InvalidInputError, NotFoundError
from dmm.index import db, read
from dmm.memory.model import Memory
from dmm.workspace import Workspace

# git and resolving (memory edits, commits) load only when a command needs them: listing and
# checking conflicts stay light
if TYPE_CHECKING:
    from dmm.conflicts import resolver
    from dmm.conflicts.scanner import ScanResult


def run_scan(ws: Workspace, conn: sqlite3.Connection, *, full: bool = False,
             since: str | None = None, memory: str | None = None,
             methods: list[str] | None = None, progress=None,
             rule_extraction: bool | None = None, announce=None, judge_progress=None,
             publish: bool = True) -> ScanResult:
    """Scan (see scanner.scan). ``rule_extraction``: ask the judge about the scan's candidate
    pairs (None: as ``[judge] use_rule_extraction`` says); with the judge on, cached verdicts
    count in every scan. ``announce(pairs, tokens, model, where)`` is called before anything
    is sent, ``judge_progress(done, total)`` while it is. A judge that is off, missing or
    failing adds a line to the result's errors; the rules' answer stands. ``publish``: keep
    the result for the other work trees (shared.py) now; False leaves it to the caller
    (``publish``; the hook does it in the background: it costs in proportion to the
    conflicts)."""
    cfg = ws.config["conflicts"]
    focus, kind = None, "full"
    if memory:
        found = read.find(conn, memory)
        if not found:
            raise NotFoundError(f"no memory {memory}")
        focus, kind = {found[0].id}, "targeted"
    elif since:
        from dmm.gitrepo import Git

        git = Git(ws.root)
        if git.rev_parse(since) is None:
            raise InvalidInputError(f"{since} is not a commit")
        paths = git.run("diff", "--name-only", "-z", since, "--", ".dmm/memory").stdout
        rel = [p.removeprefix(".dmm/memory/") for p in paths.split("\0") if p]
        focus = {m.id for m in read.memories(conn) if m.path in rel}
        kind = "incremental"
    elif not full:
        if store.scanned_with(conn) != fingerprint(cfg):
            adopt(ws, conn)
        delta = store.changed_since_scan(conn, fingerprint(cfg))
        if delta is not None:
            focus, kind = delta[0], "incremental"
    from dmm.conflicts.scanner import scan  # the analyzers: only when something is scanned

    second, notes = _second_pass(ws, rule_extraction, announce, judge_progress)
    try:
        loaded = None
        if second is not None and second.judge is not None:
            loaded = _judge(conn, cfg, focus, second, progress)
        with db.write_lock(ws.state_dir):
            if loaded is not None and loaded[0] != _generation(conn):
                loaded = None  # the cache changed while the judge was asked: read it again
            result = scan(conn, cfg, scan_type=kind, focus_ids=focus, methods=methods,
                          progress=progress, second_pass=second,
                          loaded=loaded[1:] if loaded else None)
            if methods is None and publish:  # up to date: the other work trees may use it
                shared.publish(ws, conn, fingerprint(cfg), _judged_by(second))
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc
    result.errors[:0] = notes
    return result


def _second_pass(ws: Workspace, asked: bool | None, announce, progress) -> tuple:
    """The judge's pass for a scan (None with the judge off: the scan is as it was before
    the judge existed) and the lines to report: a judge asked for that cannot be had."""
    from dmm.judge.settings import judge_settings

    settings = judge_settings(ws)
    send = settings.use_rule_extraction if asked is None else asked
    if not settings.ready and not send:
        return None, []
    from dmm.conflicts.analyzers.rule_extraction import RuleExtraction
    from dmm.judge.client import JudgeUnavailable, open_judge

    judge = None
    if send:
        try:
            judge = open_judge(settings)
        except JudgeUnavailable as exc:
            if not settings.ready:
                return None, [exc.message]
            return RuleExtraction(settings), [exc.message]  # cached verdicts still count
    return RuleExtraction(settings, judge, announce=announce, progress=progress), []


def _judge(conn: sqlite3.Connection, cfg: dict, focus: set[str] | None, second,
           progress=None) -> tuple:
    """Ask the judge about the scan's candidate pairs and cache its verdicts, before the scan
    takes the cache's write lock: other dmm commands never wait for a model. Returns (the
    cache's generation, the features, the scan's focus): the scan uses them again when the
    cache has not changed meanwhile."""
    from dmm.conflicts.merger import by_pair
    from dmm.conflicts.scanner import candidates, load_features, nearest

    generation = _generation(conn)
    features, scope = load_features(conn, focus, progress, second.partners(conn, focus),
                                    cfg["pair_similarity"])
    flagged = set(by_pair(candidates(features, scope, cfg)))
    near = nearest(features, scope, second.settings.k)
    second.judge_now(conn, {i: f.memory for i, f in features.items()}, scope, flagged, near)
    return generation, features, scope


def _generation(conn: sqlite3.Connection) -> str | None:
    """The cache's refresh generation: another value, another content."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return row[0] if row else None


def _judged_by(second) -> str:
    """The judge whose cached verdicts a scan applies (its model as configured and prompt
    version; "" with none): part of what a shared scan result is named by (shared.py)."""
    if second is None:
        return ""
    from dmm.conflicts.analyzers.rule_extraction import PROMPT_VERSION

    return f"{second.model}\0{PROMPT_VERSION}"


def adopt(ws: Workspace, conn: sqlite3.Connection) -> bool:
    """Take the scan result another work tree kept for exactly this cache's memories (never
    waiting for another dmm's lock); True when it did."""
    from dmm.errors import BusyError

    try:
        with db.write_lock(ws.state_dir):
            return shared.adopt(ws, conn, fingerprint(ws.config["conflicts"]),
                                _judged_by(_second_pass(ws, False, None, None)[0]))
    except (BusyError, sqlite3.OperationalError):
        return False


def publish(ws: Workspace, conn: sqlite3.Connection) -> None:
    """Keep the conflicts of the up-to-date cache ``conn`` for the other work trees, as a
    scan does (shared.py)."""
    with db.write_lock(ws.state_dir):
        shared.publish(ws, conn, fingerprint(ws.config["conflicts"]),
                       _judged_by(_second_pass(ws, False, None, None)[0]))


def ensure_current(ws: Workspace, conn: sqlite3.Connection) -> ScanResult | None:
    fp = fingerprint(ws.config["conflicts"])
    if store.needs_scan(conn, fp):
        if store.scanned_with(conn) != fp and adopt(ws, conn) and not store.needs_scan(conn, fp):
            return None
        return run_scan(ws, conn)
    return None


def _memories(conn: sqlite3.Connection) -> dict[str, ConflictMemory]:
    return {m.id: ConflictMemory.of(m, "secondary") for m in read.memories(conn)}


def conflicts(ws: Workspace, conn: sqlite3.Connection, memory_ids: list[str] | None = None,
              *, status: str = "all", type_: str | None = None, min_confidence: float = 0.0,
              conflict_id: str | None = None, limit: int | None = None,
              scan: bool = True) -> tuple[list[Conflict], int]:
    """Current conflicts with their committed decisions applied, filtered in SQL so that a
    store with thousands of conflicts lists its top ones quickly; (page, total matching).
    ``scan``: first scan the memories changed since the last scan (else: as last scanned)."""
    if scan:
        ensure_current(ws, conn)
    decided = store.decisions(ws.conflicts_dir)
    closed = {cid for cid, d in decided.items() if d.get("status") not in OPEN}
    include, exclude = None, set()
    if status == "unresolved":
        exclude = closed
    elif status != "all":
        include = {cid for cid, d in decided.items() if d.get("status") == status}
    found, total = store.query(conn, include=include, exclude=exclude, type_=type_,
                               memories=memory_ids, min_confidence=min_confidence,
                               conflict_id=conflict_id, limit=limit)
    # decided conflicts the scan no longer reports (resolved by deprecation) or never did
    # (flagged by hand) come from their decision records
    wanted = {cid: d for cid, d in decided.items()
              if status == "all" or d.get("status") == status
              or (status == "unresolved" and d.get("status") == "flagged")}
    undetected = sorted(set(wanted) - store.detected(conn, sorted(wanted)))
    extra = []
    if undetected:
        memories = _memories(conn)
        for cid in undetected:
            c = store.from_decision(wanted[cid], memories)
            if (c and (not memory_ids or {m.memory_id for m in c.memories} & set(memory_ids))
                    and (not conflict_id or cid == conflict_id) and (not type_ or c.type == type_)
                    and c.confidence >= min_confidence):
                extra.append(c)
    # most confident first, whether detected or known from a decision (a flag is 1.00)
    out = sorted(store.with_decisions(found, decided) + extra,
                 key=lambda c: (-c.confidence, c.conflict_id))
    return out[:limit] if limit else out, total + len(extra)


def check(ws: Workspace, conn: sqlite3.Connection, memory_ids: list[str]) -> list[Conflict]:
    """Open conflicts involving any of ``memory_ids`` (`dmm conflicts check`, agents)."""
    if not memory_ids:
        raise InvalidInputError("give at least one memory id")
    found, _ = conflicts(ws, conn, memory_ids, status="unresolved")
    return found


def stats(ws: Workspace, conn: sqlite3.Connection, scan: bool = True) -> dict:
    """Counts by type, detection method and status over every conflict `conflicts list
    --status all` shows (detected, flagged by hand, resolved): each count sums to the total.
    ``scan``: first scan what changed (False when the caller just did)."""
    found, _ = conflicts(ws, conn, status="all", scan=scan)
    count = lambda key: dict(sorted(Counter(key(c) for c in found).items()))  # noqa: E731
    return {"total": len(found), "by_type": count(lambda c: c.type),
            "by_method": count(lambda c: c.detection_method),
            "by_status": count(lambda c: c.status),
            "average_confidence": round(sum(c.confidence for c in found) / len(found), 3)
            if found else 0.0}


def flag(ws: Workspace, conn: sqlite3.Connection, *, ids: list[str], description: str,
         type_: str = "contradictory", who: str | None = None) -> tuple[str, str | None]:
    """Commit a conflict noticed by hand as .dmm/conflicts/<conflict_id>.json; (id, commit).
    A pair flagged already and still open is not flagged again (commit None)."""
    known = {m.id for m in read.memories(conn)}
    missing = [i for i in ids if i not in known]
    if len(ids) != 2 or ids[0] == ids[1]:
        raise InvalidInputError("a conflict is between exactly two different memories")
    if missing:
        raise NotFoundError(f"no memory {', '.join(missing)}")
    from dmm.gitrepo import Git, commit_message
    from dmm.landing import commit_files

    git = Git(ws.root)
    cid = conflict_id(*ids)
    earlier = store.decisions(ws.conflicts_dir).get(cid)
    if earlier and earlier.get("status") == "flagged":
        return cid, None  # flagged already: once is enough, nothing new to commit
    who = who or git.user_name()
    record = {"conflict_id": cid, "memories": list(pair_key(*ids)), "status": "flagged",
              "type": type_, "description": description, "reason": description, "by": who,
              "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    message = commit_message(f"dmm: flag conflict {cid}", description, [
        ("Dmm-Conflict", cid), ("Dmm-Resolution", "flag"), ("Dmm-Memory", ids[0]),
        ("Dmm-Memory", ids[1]), ("Dmm-Reason", description), ("Dmm-Resolved-By", who)])
    landed = commit_files(git, {store.record_path(cid):
                                (json.dumps(record, indent=2) + "\n").encode()}, message)
    return cid, landed.commit


def one(ws: Workspace, conn: sqlite3.Connection, cid: str) -> Conflict:
    """The conflict ``cid``, whatever its status: as last scanned when the scan knows it (the
    resolver re-reads both memories from git anyway), else after scanning what changed."""
    found, _ = conflicts(ws, conn, conflict_id=cid, scan=False)
    if not found:
        found, _ = conflicts(ws, conn, conflict_id=cid)
    if not found:
        raise NotFoundError(f"no conflict {cid}", hint="`dmm conflicts list --status all`")
    return found[0]


def resolve(ws: Workspace, conn: sqlite3.Connection, request: resolver.ResolutionRequest, *,
            propose: bool = False, conflict: Conflict | None = None,
            ) -> resolver.ResolutionResult:
    """Resolve one conflict (looked up unless given) as a commit or a proposal."""
    conflict = conflict or one(ws, conn, request.conflict_id)
    found = memories_of(conn, [conflict])
    gone = [m.memory_id for m in conflict.memories if m.memory_id not in found]
    if gone:
        raise NotFoundError(f"memory {', '.join(gone)} of {conflict.conflict_id} is gone: "
                            "run `dmm conflicts scan`")
    mems = [found[m.memory_id] for m in conflict.memories]
    from dmm.conflicts import resolver
    from dmm.gitrepo import Git

    taken: set[str] = set()
    if request.action == "merge":  # the only action that makes a memory, with a new id
        from dmm.audit import ids_ever_named

        taken = {row[0] for row in conn.execute("SELECT id FROM memories")}
        taken |= ids_ever_named(Git(ws.root))  # open proposals too: commits with trailers
    return resolver.resolve(Git(ws.root), conflict, mems, request, taken_ids=taken,
                            propose=propose)


def memories_of(conn: sqlite3.Connection, conflicts_: list[Conflict]) -> dict[str, Memory]:
    """The memories the conflicts are between, from the cache, by id."""
    ids = sorted({m.memory_id for c in conflicts_ for m in c.memories})
    out: dict[str, Memory] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        out.update((m.id, m) for m in read.memories(
            conn, f"WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk)))
    return out


def auto_plan(ws: Workspace, conn: sqlite3.Connection, min_confidence: float | None = None,
              ) -> list[auto.Step]:
    """What `resolve --auto` would do with every open conflict, and why."""
    found, _ = conflicts(ws, conn, status="unresolved")
    cfg = ws.config["conflicts"]
    floor = cfg["auto_min_confidence"] if min_confidence is None else min_confidence
    detected = store.detected(conn, [c.conflict_id for c in found])
    return auto.plan(found, memories_of(conn, found), cfg, floor, detected)


def undo(ws: Workspace, cid: str, reason: str) -> resolver.ResolutionResult:
    from dmm.conflicts import resolver
    from dmm.gitrepo import Git

    return resolver.undo(Git(ws.root), cid, reason)
