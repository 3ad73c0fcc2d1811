"""`dmm conflicts scan --narrative`: the narrative pass over a store, end to end.

Reads each scope's active memories from the fresh cache and the times git added them (one
`git log` over .dmm/memory), cuts each scope's story into batches (dmm.conflicts.narrative),
asks the judge (dmm.judge, the one boundary to language models) one question per batch, checks
each answer against its batch and stores what survives as conflicts with detection_method
``narrative`` (dmm.conflicts.store). IO: the cache, git, and the model the person configured;
memory text goes nowhere else.

A batch whose call fails (a timeout, a rate limit, malformed output) is reported and skipped:
the other batches and every other conflict stand. A narrative conflict already stored is
replaced only by a batch that read both its memories again. A pair a scan or a person already
knows (a detected conflict, a decision record: dismissed stays dismissed) is not stored again
(seeds/003: "if the pair already exists, open or resolved, it is skipped").
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import sqlite3
import time
from dataclasses import dataclass, field
from itertools import combinations

from dmm.conflicts import narrative, store
from dmm.conflicts.model import Conflict, pair_key
from dmm.errors import InvalidInputError
from dmm.index import db, read
from dmm.index.db import in_chunks
from dmm.memory.model import SCOPES
from dmm.memory.tokens import count_tokens
from dmm.workspace import DMM_DIR, Workspace

# ephemeral notes may disagree with each other (the scans skip those pairs too): read on request
DEFAULT_SCOPES = tuple(s for s in SCOPES if s != "ephemeral")
MAX_OUTPUT_TOKENS = 4000  # twenty confusions with their quotes and questions


@dataclass
class Batch:
    scope: str
    facts: list[narrative.Fact]
    tokens: int  # estimated tokens of the prompt sent for it


@dataclass
class Plan:
    """What the pass would send: its batches, before anything is sent."""

    scopes: list[str]
    memories: int
    batches: list[Batch]
    digests: dict[str, str]  # memory id -> the digest of its text in the cache
    fact_limit: int


@dataclass
class NarrativeResult:
    scan_id: str
    started_at: str
    model: str
    where: str  # where the memory text went (the judge says)
    scopes: list[str]
    memories_scanned: int
    batches: int
    scan_type: str = "narrative"
    completed_at: str = ""
    duration_ms: int = 0
    batches_asked: int = 0
    batches_cached: int = 0  # answered from the cache: nothing sent
    batches_failed: int = 0
    batches_left: int = 0  # not sent: the run's token limit (judge.max_tokens) was reached
    tokens_sent: int = 0  # estimated (the model's own count when it reports one)
    conflicts_detected: int = 0
    conflicts_new: int = 0
    already_known: int = 0  # pairs a scan or a decision already covers
    dropped: list[str] = field(default_factory=list)  # answers not resting on their batch
    errors: list[str] = field(default_factory=list)  # batches whose call failed, and why
    new_conflict_ids: list[str] = field(default_factory=list)
    # what a person is asked: {conflict_id, type, question, memories} of each stored finding
    questions: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class AnswerCache:
    """The model's checked-by-schema answers by batch key, in the cache's ``meta`` table
    (``narrative:<scope>:<key>``): a run over an unchanged story sends nothing again, an edited
    memory, another model or prompt asks again (narrative.batch_key). Derived data like the
    rest of the cache: lost with it, never committed. Each run keeps only the answers to its
    own batches of the scopes it read, so the table holds one story's answers per scope."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    @staticmethod
    def _key(scope: str, key: str) -> str:
        return f"narrative:{scope}:{key}"

    def get(self, scope: str, key: str) -> dict | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?",
                                (self._key(scope, key),)).fetchone()
        try:
            data = json.loads(row[0]) if row else None
        except (ValueError, TypeError):
            return None  # a damaged row: the batch is asked again
        return data if isinstance(data, dict) else None

    def put(self, scope: str, key: str, data: dict) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                          (self._key(scope, key), json.dumps(data)))

    def keep_only(self, scopes: list[str], keys: set[str]) -> None:
        """Forget the answers of ``scopes`` other than those of ``keys`` (scope, key)."""
        wanted = {self._key(*k) for k in keys}
        for scope in scopes:
            stale = [row[0] for row in self.conn.execute(
                "SELECT key FROM meta WHERE key >= ? AND key < ?",
                (f"narrative:{scope}:", f"narrative:{scope};")) if row[0] not in wanted]
            for chunk, marks in in_chunks(stale):
                self.conn.execute(f"DELETE FROM meta WHERE key IN ({marks})",
                                  chunk)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def plan(ws: Workspace, conn: sqlite3.Connection, scopes: list[str] | None = None) -> Plan:
    """The batches of every scope asked for (default: all but ephemeral), from the cache."""
    wanted = list(dict.fromkeys(scopes or DEFAULT_SCOPES))
    unknown = [s for s in wanted if s not in SCOPES]
    if unknown:
        raise InvalidInputError(f"unknown scope {unknown[0]!r}: one of {', '.join(SCOPES)}")
    cfg = ws.config["narrative"]
    limit, overlap = int(cfg["batch_tokens"]), int(cfg["overlap_tokens"])
    marks = ",".join("?" * len(wanted))
    with db.snapshot(conn):
        memories = read.memories(conn, f"WHERE m.status = 'active' AND m.scope IN ({marks})",
                                 tuple(wanted))
        digests = dict(conn.execute("SELECT id, digest FROM memories WHERE status = 'active'"))
    from dmm.gitrepo import Git

    root = f"{DMM_DIR}/memory/"
    added = {path.removeprefix(root): when
             for path, when in Git(ws.root).added_times(root).items()}
    fact_limit = narrative.fact_limit(limit, overlap)
    system = count_tokens(narrative.SYSTEM) + 100  # the data rule and the prompt's first line
    out = []
    for scope in wanted:
        facts = narrative.story([m for m in memories if m.scope == scope], added)
        costs = {f.memory.id: min(narrative.cost(f), fact_limit) for f in facts}
        for batch in narrative.batches(facts, limit, overlap):
            if len(batch) >= 2:  # one fact tells no story
                out.append(Batch(scope, batch, system + sum(costs[f.memory.id]
                                                            for f in batch)))
    return Plan(wanted, len(memories), out, digests, fact_limit)


def run(ws: Workspace, conn: sqlite3.Connection, the_plan: Plan, judge, *,
        max_tokens: int, cache=None, progress=None) -> NarrativeResult:
    """Ask ``judge`` (dmm.judge.client.Judge) about each batch of ``the_plan`` and store the
    conflicts its checked answers make. ``max_tokens``: estimated prompt tokens this run may
    send (batches past it wait for the next run). ``cache``: answers by batch key (``get``,
    ``put``), or None. ``progress(done, total)`` follows the batches."""
    from dmm.judge.prompts import SYSTEM_DATA_RULE

    started = time.perf_counter()
    result = NarrativeResult(
        f"scan_{dt.datetime.now(dt.timezone.utc):%Y%m%d_%H%M%S}_{secrets.token_hex(2)}",
        _now(), judge.model_id, judge.where, the_plan.scopes, the_plan.memories,
        len(the_plan.batches))
    system = f"{narrative.SYSTEM}\n\n{SYSTEM_DATA_RULE}"
    found: dict[str, Conflict] = {}
    covered: set[tuple[str, str]] = set()  # pairs an answered batch read together
    for n, batch in enumerate(the_plan.batches, 1):
        data = _answer(judge, batch, n, the_plan, system, max_tokens, cache, result)
        if progress:
            progress(n, len(the_plan.batches))
        if data is None:
            continue
        findings, dropped = narrative.check(data, batch.facts)
        result.dropped += [f"{batch.scope} batch {n}: an answer {why}" for why in dropped]
        covered |= {pair_key(a.memory.id, b.memory.id) for a, b in combinations(batch.facts, 2)}
        for finding in findings:
            c = narrative.to_conflict(finding, the_plan.digests, judge.model_id,
                                      result.started_at)
            found.setdefault(c.conflict_id, c)
    if cache is not None:
        cache.keep_only(the_plan.scopes, {(b.scope, narrative.batch_key(
            b.facts, b.scope, judge.model_id)) for b in the_plan.batches})
    _save(ws, conn, the_plan, found, covered, result)
    result.completed_at = _now()
    result.duration_ms = int((time.perf_counter() - started) * 1000)
    return result


def _answer(judge, batch: Batch, n: int, the_plan: Plan, system: str, max_tokens: int, cache,
            result: NarrativeResult) -> dict | None:
    """The model's answer about one batch (from the cache when it has it), or None when the
    batch was not sent (over the token limit) or its call failed (counted in ``result``)."""
    from dmm.judge.client import JudgeFailed

    key = narrative.batch_key(batch.facts, batch.scope, judge.model_id)
    data = cache.get(batch.scope, key) if cache is not None else None
    if data is not None:
        result.batches_cached += 1
        return data
    if result.tokens_sent + batch.tokens > max_tokens:
        result.batches_left += 1
        return None
    try:
        answer = judge.ask(system=system, prompt=narrative.prompt(
            batch.facts, batch.scope, the_plan.fact_limit),
            schema=narrative.SCHEMA, max_output_tokens=MAX_OUTPUT_TOKENS)
    except JudgeFailed as exc:
        result.batches_failed += 1
        result.errors.append(f"{batch.scope} batch {n}: {exc}")
        return None
    result.batches_asked += 1
    result.tokens_sent += answer.input_tokens or batch.tokens
    if cache is not None:
        cache.put(batch.scope, key, answer.data)
    return answer.data


def _save(ws: Workspace, conn: sqlite3.Connection, the_plan: Plan, found: dict[str, Conflict],
          covered: set[tuple[str, str]], result: NarrativeResult) -> None:
    """Store the new findings; keep the pass's earlier ones that no answered batch read again
    (their memories unchanged); skip pairs already known."""
    decided = store.decisions(ws.conflicts_dir)
    with db.write_lock(ws.state_dir):
        earlier = store.found_only_by(conn, narrative.METHOD)
        known = set(decided) | (store.detected(conn, sorted(found)) - set(earlier))
        fresh = [c for cid, c in found.items() if cid not in known]
        result.already_known = len(found) - len(fresh)
        for cid, c in earlier.items():
            ids = [m.memory_id for m in c.memories]
            holds = c.basis and all(the_plan.digests.get(i) == d for i, d in c.basis.items())
            if cid not in found and pair_key(*ids) not in covered and holds:
                fresh.append(c)
        focus = {f.memory.id for b in the_plan.batches for f in b.facts}
        new, _ = store.save(conn, fresh, focus, result.scan_id, "", {narrative.METHOD})
        result.conflicts_detected = sum(1 for c in fresh if c.conflict_id in found)
        result.questions = [{"conflict_id": c.conflict_id, "type": c.type,
                             "question": c.question,
                             "memories": [m.memory_id for m in c.memories]}
                            for c in fresh if c.conflict_id in found]
        result.new_conflict_ids = new
        result.conflicts_new = len(new)
        store.record_scan(conn, result)


def narrative_pass(ws: Workspace, conn: sqlite3.Connection, scopes: list[str] | None = None,
                   *, announce=None, progress=None) -> NarrativeResult:
    """`dmm conflicts scan --narrative`: open the judge the person configured (raises
    JudgeUnavailable, saying how to turn it on), bring the rules' conflicts up to date, plan
    the batches, let ``announce(batches, tokens, cached, model, where)`` say what will be sent
    where before anything is sent (the batches the cache answers cost nothing), then run."""
    from dmm.conflicts.service import ensure_current
    from dmm.judge.client import open_judge
    from dmm.judge.settings import judge_settings

    settings = judge_settings(ws)
    judge = open_judge(settings)
    ensure_current(ws, conn)  # what the rules find first: a pair they know is not asked about
    the_plan = plan(ws, conn, scopes)
    cache = AnswerCache(conn)
    if announce:
        new = [b for b in the_plan.batches if cache.get(b.scope, narrative.batch_key(
            b.facts, b.scope, judge.model_id)) is None]
        announce(len(the_plan.batches), min(sum(b.tokens for b in new), settings.max_tokens),
                 len(the_plan.batches) - len(new), judge.model_id, judge.where)
    return run(ws, conn, the_plan, judge, max_tokens=settings.max_tokens, cache=cache,
               progress=progress)
