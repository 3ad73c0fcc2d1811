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
from dmm.conflicts.model import (OPEN, Conflict, ConflictMemory, conflict_id, pair_key,
                                  status_of)
from dmm.errors import InvalidInputError, NotFoundError
from dmm.index import db, read
from dmm.index.db import in_chunks
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
             scopes: list[str] | None = None, publish: bool = True) -> ScanResult:
    """Scan (see scanner.scan). ``rule_extraction``: ask the judge about the scan's candidate
    pairs (None: as ``[judge] use_rule_extraction`` says); with the judge on, cached verdicts
    count in every scan. ``announce(pairs, tokens, model, where)`` is called before anything
    is sent, ``judge_progress(done, total)`` while it is. A judge that is off, missing or
    failing adds a line to the result's errors; the rules' answer stands. ``scopes``: scan
    every memory of these scopes against the store (seed 002's scope-limited detection),
    and nothing else. ``publish``: keep the result for the other work trees (shared.py)
    now; False leaves it to the caller (``publish``; the hook does it in the background:
    it costs in proportion to the conflicts)."""
    cfg = ws.config["conflicts"]
    methods, rule_extraction = named_methods(methods, rule_extraction)
    focus, kind = None, "full"
    if scopes:
        if full or since or memory:
            raise InvalidInputError("--scope chooses the memories to scan: give it without "
                                    "--full, --since or --memory")
        focus, kind = store.in_scopes(conn, scopes), "targeted"
    elif memory:
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
                          loaded=loaded[1:] if loaded else None, complete=not scopes,
                          together=_together(ws, focus, methods), commits=_commits(ws))
            # up to date: the other work trees may use it
            if methods is None and not scopes and publish:
                shared.publish(ws, conn, fingerprint(cfg), _judged_by(second))
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc
    result.errors[:0] = notes
    return result


def named_methods(names: list[str] | None, rule_extraction: bool | None,
                  ) -> tuple[list[str] | None, bool | None]:
    """(the analyzers ``names`` asks for, by their long names; whether to ask the judge): the
    requirements' short names (model.METHOD_NAMES) stand for the long ones, and "rule"
    (rule_extraction) is the judge's pass over what the analyzers find, so it turns the judge
    on rather than running alone (with no other method named: beside every analyzer)."""
    if not names:
        return None, rule_extraction
    from dmm.conflicts.model import METHOD_NAMES

    long = [METHOD_NAMES.get(n, n) for n in names]
    if "rule_extraction" in long:
        if rule_extraction is False:
            raise InvalidInputError("method rule asks the judge, and rule extraction is "
                                    "turned off: give one of them")
        long, rule_extraction = [n for n in long if n != "rule_extraction"], True
    return list(dict.fromkeys(long)) or None, rule_extraction


def _commits(ws: Workspace):
    """{memory path: (commit, time, author)} of the last commit of each of the memory paths
    given, read from git when a scan asks (narrative.apply_rules: working sessions)."""
    def commits(paths: list[str]) -> dict:
        from dmm.errors import GitError
        from dmm.gitrepo import Git

        root = ws.memory_dir.relative_to(ws.root).as_posix() + "/"
        try:
            found = Git(ws.root).last_commits([root + p for p in paths])
        except GitError:  # no history to read (no commit yet): no session either
            return {}
        return {p.removeprefix(root): when for p, when in found.items()}
    return commits


def _together(ws: Workspace, focus: set[str] | None, methods: list[str] | None) -> dict:
    """The pairs the clone's queries often return together (dmm.usage.together), when the
    co_retrieval method runs and the usage log is on: with a focus, only the pairs of its
    memories."""
    if (methods is not None and "co_retrieval" not in methods) \
            or not ws.config["usage"]["enabled"]:
        return {}
    from dmm.usage.together import co_retrieved

    return co_retrieved(ws, focus)


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


def _memories(conn: sqlite3.Connection, decided: list[dict]) -> dict[str, ConflictMemory]:
    """The memories (by id) that the decisions ``decided`` name: those alone are read."""
    ids = sorted({i for d in decided for i in d.get("memories") or () if isinstance(i, str)})
    found = {}
    for chunk, marks in in_chunks(ids):
        found.update((m.id, m) for m in read.memories(
            conn, f"WHERE id IN ({marks})", tuple(chunk)))
    return {i: ConflictMemory.of(m, "secondary") for i, m in found.items()}


def conflicts(ws: Workspace, conn: sqlite3.Connection, memory_ids: list[str] | None = None,
              *, status: str = "all", type_: str | None = None, min_confidence: float = 0.0,
              conflict_id: str | None = None, limit: int | None = None,
              scan: bool = True, scopes: list[str] | None = None,
              questions: bool = True) -> tuple[list[Conflict], int]:
    """Current conflicts with their committed decisions applied, filtered in SQL so that a
    store with thousands of conflicts lists its top ones quickly; (page, total matching).
    ``scan``: first scan the memories changed since the last scan (else: as last scanned).
    ``scopes``: only conflicts one of whose memories is in one of these scopes. Each conflict
    carries its severity (severity.py), judged today, and (``questions``) the question a
    person is asked about it."""
    if scan:
        ensure_current(ws, conn)
    today = dt.date.today()
    decided = store.decisions(ws.conflicts_dir)
    now = {cid: status_of(d, today.isoformat()) for cid, d in decided.items()}
    proposed = _proposed(ws)
    wanted = _with_status(now, proposed, status)
    include, exclude = (None, set(now) - wanted) if status in ("all", "unresolved") \
        else (wanted, set())
    found, total = store.query(conn, include=include, exclude=exclude, type_=type_,
                               memories=memory_ids, scopes=scopes,
                               min_confidence=min_confidence, conflict_id=conflict_id,
                               limit=limit)
    # decided conflicts the scan no longer reports (resolved by deprecation) or never did
    # (flagged by hand) come from their decision records
    wanted = wanted & set(decided)  # a proposal may name a conflict no record and no scan has
    undetected = sorted(wanted - store.detected(conn, sorted(wanted)))
    extra = []
    if undetected:
        memories = _memories(conn, [decided[cid] for cid in undetected])
        rebuilt = (store.from_decision(decided[cid], memories, today.isoformat())
                   for cid in undetected)
        extra = [c for c in rebuilt if c and _matches(c, memory_ids, scopes, conflict_id,
                                                      type_, min_confidence)]
    # most confident first, whether detected or known from a decision (a flag is 1.00)
    out = sorted(store.with_decisions(found, decided, today.isoformat()) + extra,
                 key=lambda c: (-c.confidence, c.conflict_id))
    for c in out:
        if c.conflict_id in proposed and c.status in OPEN:  # _with_status
            c.status = "in_progress"
    out = out[:limit] if limit else out
    _judge_severity(conn, out, today)
    if out and questions:  # the narrative pass's question, else the rules' (no model)
        from dmm.conflicts.questions import question

        for c in out:
            c.question = c.question or question(c) or None
    return out, total + len(extra)


def _with_status(now: dict[str, str], proposed: dict[str, str], status: str) -> set[str]:
    """The decided conflicts (``now``: id -> status today) that ``status`` lists: "all" every
    one, "unresolved" the open ones, "in_progress" the open ones a proposal resolves
    (``proposed``) and any other status its own, but for those. A proposal branch is a claim
    anyone can push: it never reopens a conflict a person decided."""
    busy = {cid for cid in proposed if now.get(cid, "unresolved") in OPEN}
    if status == "all":
        return set(now)
    if status == "unresolved":
        return {cid for cid, s in now.items() if s in OPEN}
    if status == "in_progress":
        return busy
    return {cid for cid, s in now.items() if s == status and cid not in busy}


def _matches(c: Conflict, memory_ids: list[str] | None, scopes: list[str] | None,
             conflict_id: str | None, type_: str | None, min_confidence: float) -> bool:
    """Whether ``c`` (rebuilt from its decision) passes the filters store.query applies."""
    return ((not memory_ids or bool({m.memory_id for m in c.memories} & set(memory_ids)))
            and (not scopes or bool({m.scope for m in c.memories} & set(scopes)))
            and (not conflict_id or c.conflict_id == conflict_id)
            and (not type_ or c.type == type_) and c.confidence >= min_confidence)


def _proposed(ws: Workspace) -> dict[str, str]:
    """{conflict id: proposal id} for every open proposal that resolves a conflict (`resolve
    --propose`): those conflicts are in_progress until it is approved or closed. One git call
    when there is no proposal branch at all (the common case)."""
    from dmm.gitrepo import Git
    from dmm.team import refs as team_refs

    git = Git(ws.root)
    if not team_refs.proposal_refs(git):
        return {}
    from dmm.proposals.queue import open_proposals

    return {p.resolution["Dmm-Conflict"]: p.proposal_id
            for p in open_proposals(git, with_status=False)
            if p.type == "resolve" and p.resolution.get("Dmm-Conflict")}


def _judge_severity(conn: sqlite3.Connection, found: list[Conflict], today: dt.date) -> None:
    """Set each conflict's severity from its memories as the cache has them."""
    from dmm.conflicts.severity import by_type, severity

    # no body, tag or link is a factor, and a duplicate's type alone decides (most of a large
    # store's conflicts: 1,914 of 2,220 at 50,000 generated memories)
    mems = memories_of(conn, [c for c in found if by_type(c) is None], scalars=True)
    for c in found:
        c.severity = severity(c, [mems[m.memory_id] for m in c.memories
                                  if m.memory_id in mems], today)


def check(ws: Workspace, conn: sqlite3.Connection, memory_ids: list[str]) -> list[Conflict]:
    """Open conflicts involving any of ``memory_ids`` (`dmm conflicts check`, agents)."""
    if not memory_ids:
        raise InvalidInputError("give at least one memory id")
    found, _ = conflicts(ws, conn, memory_ids, status="unresolved")
    return found


def stats(ws: Workspace, conn: sqlite3.Connection, scan: bool = True) -> dict:
    """Counts by type, detection method, status and severity over every conflict `conflicts
    list --status all` shows (detected, flagged by hand, resolved): each count sums to the
    total; and seed 000 section 14.2's resolution figures (``resolution_figures``).
    ``scan``: first scan what changed (False when the caller just did)."""
    found, _ = conflicts(ws, conn, status="all", scan=scan, questions=False)
    written = store.written_on(conn, sorted({m.memory_id for c in found for m in c.memories}))
    count = lambda key: dict(sorted(Counter(key(c) for c in found).items()))  # noqa: E731
    return {"total": len(found), "by_type": count(lambda c: c.type),
            "by_method": count(lambda c: c.detection_method),
            "by_status": count(lambda c: c.status),
            "by_severity": count(lambda c: c.severity or "unknown"),
            "average_confidence": round(sum(c.confidence for c in found) / len(found), 3)
            if found else 0.0, **resolution_figures(found, store.first_seen(conn), written)}


def resolution_figures(found: list[Conflict], seen: dict[str, str],
                       written: dict[str, str] | None = None) -> dict:
    """Seed 000 section 14.2: ``resolution_rate``, the share of conflicts settled (resolved
    or dismissed as false positives; None with no conflict), ``median_days_to_resolution``
    from first detection to the decision (None when no settled conflict has both dates),
    ``resolutions_timed`` (how many it is the median of), and ``oldest_unresolved``, when
    the longest-open conflict was first detected. A decision record says when its conflict
    was first detected; older records have this clone's first sighting (``seen``). A record
    is a claim anyone can commit: a detection before the later of its two memories was
    written (``written``: memory id -> `created`) is impossible, and times nothing."""
    import statistics

    written = written or {}

    def possible(c: Conflict, claim) -> dt.datetime | None:
        """The time a record claims, unless its memories were written after it."""
        when, days = _when(claim), [_when(written.get(m.memory_id)) for m in c.memories]
        floor = max((d for d in days if d is not None), default=None)
        return when if when is not None and (floor is None or when >= floor) else None

    settled = [c for c in found if c.status in ("resolved", "dismissed")]
    days = []
    for c in settled:
        d = c.decision or {}
        start = possible(c, d["detected_at"]) if d.get("detected_at") else \
            _when(seen.get(c.conflict_id))  # this clone's own sighting
        end = _when(d.get("at"))
        if start is not None and end is not None and end >= start:
            days.append((end - start).total_seconds() / 86400)
    # a conflict this clone never detected is known from its record: when is a claim
    open_since = [c.detected_at for c in found if c.status in OPEN and (
        _when(c.detected_at) if c.conflict_id in seen else possible(c, c.detected_at))]
    return {"resolution_rate": round(len(settled) / len(found), 3) if found else None,
            "median_days_to_resolution": round(statistics.median(days), 2) if days else None,
            "resolutions_timed": len(days),
            "oldest_unresolved": min(open_since, key=_when, default=None)}


def _when(text) -> dt.datetime | None:
    """An ISO time from a record (a date alone is its midnight; no zone is UTC)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


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
    added = None
    if request.action == "merge":  # the only action that makes a memory, with a new id
        from dmm.audit import ids_ever_named

        taken = {row[0] for row in conn.execute("SELECT id FROM memories")}
        taken |= ids_ever_named(Git(ws.root))  # open proposals too: commits with trailers
        added = added_order(ws, {m.id: m for m in mems})  # the newer one's title and folder
    return resolver.resolve(Git(ws.root), conflict, mems, request, taken_ids=taken,
                            propose=propose, added=added)


def decide_many(ws: Workspace, conn: sqlite3.Connection, action: str, reason: str, *,
                ids: list[str] | None = None, type_: str | None = None,
                scopes: list[str] | None = None, until: str | None = None,
                dry_run: bool = False) -> tuple[list[Conflict], resolver.BatchResult | None]:
    """Dismiss or defer several conflicts as one commit: those named by ``ids``, or else
    every open one of ``type_`` and ``scopes``; (the conflicts, the commit's result: None
    with ``dry_run``)."""
    from dmm.conflicts import resolver
    from dmm.conflicts.model import check_conflict_id
    from dmm.gitrepo import Git

    if ids:
        if type_ or scopes:
            raise InvalidInputError("name conflicts by id or by --type/--scope, not both")
        wanted = list(dict.fromkeys(check_conflict_id(i) for i in ids))
        known = {c.conflict_id: c for c in conflicts(ws, conn, status="all")[0]}
        missing = [i for i in wanted if i not in known]
        if missing:
            raise NotFoundError(f"no conflict {', '.join(missing)}",
                                hint="`dmm conflicts list --status all`")
        found = [known[i] for i in wanted]
    elif type_ or scopes:
        found, _ = conflicts(ws, conn, status="unresolved", type_=type_, scopes=scopes)
    else:
        raise InvalidInputError("name the conflicts: their ids, or --type and/or --scope")
    if dry_run or not found:
        return found, None
    return found, resolver.decide_many(Git(ws.root), found, action, reason, until=until)


def memories_of(conn: sqlite3.Connection, conflicts_: list[Conflict],
                scalars: bool = False) -> dict[str, Memory]:
    """The memories the conflicts are between, from the cache, by id (``scalars``: without
    their bodies, tags and links, for a reader of their other fields alone)."""
    ids = sorted({m.memory_id for c in conflicts_ for m in c.memories})
    out: dict[str, Memory] = {}
    for chunk, marks in in_chunks(ids):
        out.update((m.id, m) for m in read.memories(
            conn, f"WHERE id IN ({marks})", tuple(chunk), bodies=not scalars,
            lists=not scalars))
    return out


def auto_plan(ws: Workspace, conn: sqlite3.Connection, min_confidence: float | None = None,
              scopes: list[str] | None = None) -> list[auto.Step]:
    """What `resolve --auto` would do with every open conflict (of ``scopes``), and why."""
    found, _ = conflicts(ws, conn, status="unresolved", scopes=scopes)
    cfg = ws.config["conflicts"]
    floor = cfg["auto_min_confidence"] if min_confidence is None else min_confidence
    detected = store.detected(conn, [c.conflict_id for c in found])
    memories = _with_chains(conn, memories_of(conn, found))
    return auto.plan(found, memories, cfg, floor, detected, added_order(ws, memories))


def added_order(ws: Workspace, memories: dict[str, Memory]) -> dict[str, int]:
    """{memory id: rank of the commit that added it} for ``memories``: one git call for the
    whole batch, whatever its size (auto.ordered)."""
    if not memories:
        return {}
    from dmm.gitrepo import Git
    from dmm.memory.paths import MEMORY_ROOT

    ranks = Git(ws.root).added_order(MEMORY_ROOT.rstrip("/"))
    return {i: ranks[MEMORY_ROOT + m.path] for i, m in memories.items()
            if MEMORY_ROOT + m.path in ranks}


def _with_chains(conn: sqlite3.Connection, memories: dict[str, Memory]) -> dict[str, Memory]:
    """``memories`` and every memory their `supersedes` links reach, at any distance: whether
    a link closes a circle is told by the whole chain (auto.in_circle)."""
    todo = {i for m in memories.values() for i in m.supersedes} - set(memories)
    while todo:
        chunk = sorted(todo)[:500]
        todo -= set(chunk)
        found = read.memories(conn, f"WHERE id IN ({','.join('?' * len(chunk))})",
                              tuple(chunk))
        memories.update((m.id, m) for m in found)
        todo |= {i for m in found for i in m.supersedes} - set(memories)
    return memories


def undo(ws: Workspace, cid: str, reason: str) -> resolver.ResolutionResult:
    from dmm.conflicts import resolver
    from dmm.gitrepo import Git

    return resolver.undo(Git(ws.root), cid, reason)
