"""What the MCP server and the HTTP API offer, each a call into the same core functions the CLI
uses, returning the JSON shape of the CLI's --json (PRD phase 2 and phase 3, section 7).

Pure plumbing between the protocol layers and the core: no protocol here (the MCP server and
the HTTP app turn DmmError into their own error form) and no printing. Every call opens the
cache fresh, so a long-running server sees commits made while it runs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import sqlite3
from typing import Iterator

from dmm.errors import InvalidInputError, NotFoundError
from dmm.gitrepo import Git
from dmm.workspace import Workspace


@contextlib.contextmanager
def _cache(ws: Workspace) -> Iterator[sqlite3.Connection]:
    from dmm.index.refresh import open_fresh

    conn, _ = open_fresh(ws)
    try:
        yield conn
    finally:
        conn.close()


# --- memories --------------------------------------------------------------------------------

def query(ws: Workspace, task: str, *, budget: int | None = None, scopes=(), tags=(),
          exclude_ephemeral: bool = False) -> dict:
    """The Memory Pack for ``task`` (`dmm query --json`)."""
    return pack(ws, task, budget=budget, scopes=scopes, tags=tags,
                exclude_ephemeral=exclude_ephemeral)[0]


# what a tool call waits for the background process before answering by itself, by words
ASK_START_S = 1.0  # for it to start (the session's first hook has usually started it)
ASK_ANSWER_S = 10.0  # for its answer, beyond what it may wait for the index


def pack(ws: Workspace, task: str, *, budget: int | None = None, scopes=(), tags=(),
         exclude_ephemeral: bool = False, for_model: str | None = None
         ) -> tuple[dict, str | None]:
    """(the Memory Pack for ``task`` as data, its text for a model when ``for_model``): asked
    of the repository's background process in a long-lived server that leaves the model to it
    (semantic/service.serve), else made here."""
    from dmm.semantic import service

    note = None
    if service.delegated():
        from dmm.background.client import via_background

        answer, note = via_background(ws, {
            "op": "query", "task": task, "budget": budget, "scopes": list(scopes or ()),
            "tags": list(tags or ()), "exclude_ephemeral": exclude_ephemeral,
            "for_model": for_model, "data": True},
            start_wait=ASK_START_S, answer_wait=service.wait_s() + ASK_ANSWER_S)
        if answer is not None and isinstance(answer.get("pack"), dict):
            return answer["pack"], answer.get("text")
    from dmm.query.run import memory_pack

    made = memory_pack(ws, task, budget=budget, scopes=tuple(scopes or ()),
                       tags=tuple(tags or ()), exclude_ephemeral=exclude_ephemeral,
                       for_model=for_model, notes=(note,) if note else ())
    return made.to_dict(), made.text


def show(ws: Workspace, key: str) -> dict:
    """One memory by id or path (`dmm show --json`)."""
    from dmm.agents import unindexed
    from dmm.lookup import find_memory, memory_record

    conn, _ = _cache_or_files(ws)
    if conn is None:  # another dmm builds the cache for the first time: the memory's file
        shown = unindexed.show(ws, key)
        if shown is not None:
            return shown
        from dmm.index.refresh import open_fresh

        conn = open_fresh(ws)[0]  # not found in time among the files: the cache knows
    try:
        return memory_record(*find_memory(ws, conn, key))
    finally:
        conn.close()


def _cache_or_files(ws: Workspace) -> tuple[sqlite3.Connection | None, str | None]:
    """(the fresh cache, None), or (None, why) while another dmm builds it for the first time
    (or holds it locked) past a short wait: the caller reads the memory files
    (dmm.agents.unindexed)."""
    from dmm.agents.unindexed import WAIT_S
    from dmm.query.run import FIRST_BUILD, HELD, open_cache

    conn, how = open_cache(ws, wait=WAIT_S, stand_in=lambda _ws: None)
    return (None, how) if how in (FIRST_BUILD, HELD) else (conn, None)


def memory_text(ws: Workspace, key: str) -> str:
    """One memory's file as it is on disk, by id or path (the MCP memory resource)."""
    from dmm.store import text_of

    path = show(ws, key)["path"]
    return text_of(ws.memory_dir, path, ws.config["store"]["max_file_bytes"])


BOOT_MAX_BYTES = 1024 * 1024


def boot(ws: Workspace) -> str:
    """.dmm/BOOT.md, the agents' instructions ("" when there is none): only the regular file
    inside the repository, never what a committed link points to."""
    from dmm.fsutil import UnreadableFile, read_regular

    ws.check_layout()
    try:
        return read_regular(ws.dmm_dir / "BOOT.md", BOOT_MAX_BYTES).decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    except UnreadableFile as exc:
        raise InvalidInputError(f".dmm/BOOT.md cannot be read: {exc}") from None
    except OSError as exc:
        raise InvalidInputError(f".dmm/BOOT.md cannot be read: {exc.strerror or exc}") from None


def memory_id(ws: Workspace, key: str) -> str:
    """The id of the memory named by ``key`` (an id or a path)."""
    from dmm.lookup import find_memory

    with _cache(ws) as conn:
        return find_memory(ws, conn, key)[0].id


def listing(ws: Workspace, *, scope: str | None = None, tag: str | None = None,
            status: str | None = None, path_prefix: str | None = None,
            older_than: int | None = None, newer_than: int | None = None, sort: str = "path",
            reverse: bool = False, limit: int = 100) -> dict:
    """The memories of the store without their text, chosen and ordered as `dmm list` does."""
    from dmm.index import read
    from dmm.lookup import memory_record
    from dmm.memory.select import SORTS, Selection

    if not 1 <= limit <= 1000:
        raise InvalidInputError("limit must be between 1 and 1000")
    if sort not in SORTS:
        raise InvalidInputError(f"sort must be one of {', '.join(SORTS)}")
    if any(days is not None and days < 0 for days in (older_than, newer_than)):
        raise InvalidInputError("older_than and newer_than are days: 0 or more")
    chosen = Selection(scopes=[scope] if scope else [], tags=[tag] if tag else [],
                       status=status or "all", under=path_prefix or "", older_than=older_than,
                       newer_than=newer_than, sort=sort, reverse=reverse)
    conn, how = _cache_or_files(ws)
    if conn is None:  # another dmm builds the cache for the first time: from the files
        from dmm.agents import unindexed
        from dmm.query.run import FIRST_BUILD

        return unindexed.listing(ws, chosen, limit, held=how != FIRST_BUILD)
    try:
        found, total = read.listing(conn, chosen, limit)
    finally:
        conn.close()
    return {"memories": [memory_record(m, content=False) for m in found], "total": total}


# --- proposals and their review --------------------------------------------------------------

def propose(ws: Workspace, *, proposed_by: str, **kw) -> dict:
    """A proposal branch (`dmm write ... --json`), with the checks the reviewer will run."""
    from dmm.proposals.checks import all_checks
    from dmm.proposals.propose import propose as make

    with _cache(ws) as conn:
        result = make(ws, conn, proposed_by=proposed_by, **kw)
    out = result.to_dict()
    out["reviewer_checks"] = [check.NAME for check in all_checks(ws)]
    return out


def proposal_status(ws: Workspace, proposal_id: str) -> dict:
    """Where a proposal stands, with the PRD's WriteProposal fields."""
    from dmm.agents.shapes import write_proposal
    from dmm.proposals.decided import status_of

    git = Git(ws.root)
    return write_proposal(git, status_of(git, proposal_id))


def proposals(ws: Workspace, *, status: str = "all", limit: int = 100, offset: int = 0) -> dict:
    """Open proposals, oldest first (status pending, deferred or all), or decided ones, newest
    first (approved, modified, rejected, withdrawn or closed: any), with the queue's counts
    (`dmm review list --json`)."""
    from dmm.proposals.decided import CLOSED, closed_with, stats
    from dmm.proposals.queue import open_proposals

    git = Git(ws.root)
    if status in (*CLOSED, "closed"):
        found = closed_with(git, status)
    else:
        found = [p.to_dict() for p in open_proposals(git) if status in ("all", p.status)]
    from dmm.agents.shapes import queue_stats

    pending = [p.to_dict() for p in open_proposals(git) if p.status == "pending"]
    page = [{**p, "target_path": p.get("path")} for p in found[offset:offset + limit]]
    return {"proposals": page, "total": len(found), "stats": queue_stats(stats(git), pending)}


def review_queue(ws: Workspace) -> dict:
    """The proposals waiting for the reviewer (pending; deferred ones wait for a person)."""
    page = proposals(ws, status="pending", limit=1_000_000)
    return {"pending": page["proposals"], "stats": page["stats"]}


def _processed(result) -> dict:
    """PRD phase 2, 7.2: the review and what was done with it."""
    return {"proposal_id": result.proposal_id, "decision": result.decision,
            "result": result.to_dict(), "committed": result.committed is not None,
            "commit_result": result.committed}


def process(ws: Workspace, proposal_id: str, force: bool = False) -> dict:
    from dmm.proposals.review import process as run

    return _processed(run(ws, proposal_id, force))


def process_batch(ws: Workspace, limit: int | None = None, force: bool = False) -> dict:
    from dmm.proposals.batch import process_all

    batch = process_all(ws, limit, force)
    return {**batch.to_dict(), "results": [_processed(r) for r in batch.results]}


def approve(ws: Workspace, proposal_id: str, *, reviewer: str, reason: str = "",
            bypass_reviewer: bool = False, expect: str | None = None) -> dict:
    from dmm.proposals.review import approve_as_person

    from dmm.agents.shapes import commit_result

    done, notices = approve_as_person(ws, proposal_id, reviewer=reviewer, reason=reason,
                                      bypass_reviewer=bypass_reviewer, expect=expect)
    return {**commit_result(done.to_dict()), "notices": notices}


def close(ws: Workspace, proposal_id: str, *, decision: str, reviewer: str,
          reason: str) -> dict:
    """Reject, defer or withdraw: recorded on dmm/audit."""
    from dmm.proposals import decide

    if not reason.strip():
        raise InvalidInputError("a reason is required: say why")
    done = decide.close(ws, proposal_id, decision=decision, reviewer=reviewer, reason=reason)
    return {"success": True, **done.to_dict()}


# --- usage -----------------------------------------------------------------------------------

USAGE_SORTS = ("total_retrievals", "total_inclusions", "inclusion_rate", "avg_relevance_score",
               "last_retrieved_at", "days_since_last_retrieval")


def usage_of(ws: Workspace, key: str) -> dict:
    """Usage statistics of one memory (id or path)."""
    from dmm.usage.log import memory_stats

    mid = memory_id(ws, key) if "/" in key or key.endswith(".md") else key
    stats = memory_stats(ws, mid)
    if not stats:
        raise NotFoundError(f"{key} has not been returned by any query yet")
    return stats[0]


def usage_memories(ws: Workspace, *, sort_by: str = "total_retrievals", order: str = "desc",
                   limit: int = 20) -> dict:
    from dmm.usage.log import memory_stats

    if sort_by not in USAGE_SORTS:
        raise InvalidInputError(f"sort_by must be one of {', '.join(USAGE_SORTS)}")
    stats = sorted(memory_stats(ws), key=lambda s: s["path"])
    present = [s for s in stats if s[sort_by] is not None]
    present.sort(key=lambda s: s[sort_by], reverse=order == "desc")
    ordered = present + [s for s in stats if s[sort_by] is None]  # never: last either way
    return {"memories": ordered[:limit], "total": len(stats)}


def usage_queries(ws: Workspace, *, limit: int = 20, after: str | None = None) -> dict:
    from dmm.usage.log import queries

    rows = queries(ws, limit, after)
    return {"queries": rows, "total": len(rows)}


# --- conflicts -------------------------------------------------------------------------------

def conflicts(ws: Workspace, *, status: str = "unresolved", type_: str | None = None,
              memory: str | None = None, min_confidence: float = 0.0,
              limit: int | None = 50) -> dict:
    """`dmm conflicts list --json`: PRD phase 3, 7.1."""
    from dmm.conflicts import service

    with _cache(ws) as conn:
        ids = [_id_in(ws, conn, memory)] if memory else None
        found, total = service.conflicts(ws, conn, ids, status=status, type_=type_,
                                         min_confidence=min_confidence, limit=limit)
        from dmm.agents import shapes

        return {"conflicts": [shapes.conflict(c.to_dict()) for c in found], "total": total,
                "stats": shapes.conflict_stats(service.stats(ws, conn, scan=False))}


def _id_in(ws: Workspace, conn: sqlite3.Connection, key: str) -> str:
    from dmm.lookup import find_memory

    return find_memory(ws, conn, key)[0].id


def conflict(ws: Workspace, conflict_id: str) -> dict:
    from dmm.conflicts import service

    from dmm.agents.shapes import conflict as shaped

    with _cache(ws) as conn:
        return shaped(service.one(ws, conn, conflict_id).to_dict())


def conflicts_of(ws: Workspace, key: str) -> dict:
    """Every conflict, whatever its status, that involves one memory (id or path)."""
    from dmm.conflicts import service

    with _cache(ws) as conn:
        found, total = service.conflicts(ws, conn, [_id_in(ws, conn, key)], status="all")
    from dmm.agents.shapes import conflict as shaped

    return {"conflicts": [shaped(c.to_dict()) for c in found], "total": total}


def scan(ws: Workspace, *, full: bool = False, since: str | None = None,
         memory: str | None = None, methods: list[str] | None = None,
         rule_extraction: bool | None = None) -> dict:
    from dmm.conflicts.service import run_scan

    with _cache(ws) as conn:
        return run_scan(ws, conn, full=full, since=since, memory=memory, methods=methods,
                        rule_extraction=rule_extraction).to_dict()


def scans(ws: Workspace, limit: int = 20) -> dict:
    from dmm.conflicts import store

    with _cache(ws) as conn:
        found = store.scans(conn, limit)
        total = conn.execute("SELECT count(*) FROM conflict_scans").fetchone()[0]
    return {"scans": found, "total": total}


def conflict_stats(ws: Workspace) -> dict:
    from dmm.conflicts import service, store

    from dmm.agents.shapes import conflict_stats as shaped

    with _cache(ws) as conn:
        data = shaped(service.stats(ws, conn))
        data["recent_scans"] = store.scans(conn, 5)
    return data


def check(ws: Workspace, ids: list[str]) -> dict:
    """Open conflicts involving any of ``ids`` (`dmm conflicts check --json`)."""
    from dmm.conflicts.service import check as find

    with _cache(ws) as conn:
        found = find(ws, conn, list(ids))
    from dmm.agents.shapes import conflict as shaped

    return {"has_conflicts": bool(found), "conflicts": [shaped(c.to_dict()) for c in found]}


def check_content(ws: Workspace, content: str, path: str | None = None) -> dict:
    """For a draft memory: the conflicts it would bring and the most similar memories."""
    from dmm.conflicts.scanner import against_store
    from dmm.index.similar import similar_memories
    from dmm.memory.parse import parse_memory, split_frontmatter
    from dmm.memory.paths import clean_memory_path
    from dmm.proposals.neighbours import nearest
    from dmm.proposals.propose import complete

    rel = clean_memory_path(path) if path else "project/draft.md"
    if split_frontmatter(content)[0] is None:  # a bare text: judge it as a project memory
        content = f"---\ntags: [draft]\npriority: 0.5\nconfidence: active\n---\n\n{content}"
    with _cache(ws) as conn:
        taken = {row[0] for row in conn.execute("SELECT id FROM memories")}
        draft, errors = complete(content, rel, dt.date.today(), taken)
        if draft is None:
            raise InvalidInputError("the draft cannot be read: " + "; ".join(errors))
        memory, problems = parse_memory(draft, rel)
        if memory is None:
            raise InvalidInputError("the draft cannot be read: " + "; ".join(
                f"{p.field or 'content'}: {p.message}" for p in problems
                if p.severity == "error"))
        found = against_store(conn, memory, ws.config["conflicts"], (rel,))
        similar = similar_memories(conn, memory, exclude=(rel,), limit=5)
        near = nearest(ws, conn, memory, exclude=(rel,))
    return {"potential_conflicts": [c.to_dict() for c in found],  # PRD phase 3, 7.2
            "similar_memories": [{"memory_id": s.memory_id, "path": s.path,
                                  "similarity": round(s.similarity, 3)} for s in similar],
            # what memory_propose's relations are declared about (dmm.proposals.relations)
            "neighbours": [{**n.to_dict(), "declared": None} for n in near],
            "problems": [p.to_dict() for p in problems]}


def flag(ws: Workspace, ids: list[str], description: str, type_: str = "contradictory", *,
         who: str) -> dict:
    """Record a conflict noticed by hand, committed under .dmm/conflicts/."""
    from dmm.conflicts.model import TYPES
    from dmm.conflicts.service import flag as record

    if type_ not in TYPES:
        raise InvalidInputError(f"type must be one of {', '.join(TYPES)}")
    if not description.strip():
        raise InvalidInputError("describe what contradicts what")
    with _cache(ws) as conn:
        cid, commit = record(ws, conn, ids=list(ids), description=description, type_=type_,
                             who=who)
    return {"conflict_id": cid, "created": commit is not None, "commit": commit,
            "status": "flagged"}


def resolve(ws: Workspace, request, propose: bool = False) -> dict:
    """Resolve one conflict as a commit (or, ``propose``, a proposal for review)."""
    from dmm.conflicts import service

    with _cache(ws) as conn:
        return service.resolve(ws, conn, request, propose=propose).to_dict()
