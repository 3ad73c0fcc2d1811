"""Assemble a Memory Pack: baseline memories in full, then the best matches that fit the budget.

Reads only the (fresh) cache. The ranking score of a memory is its relevance to the task,
scaled by its priority and confidence; packing is greedy by that score, skipping memories that
no longer fit and listing them as excluded. A pack for a model (dmm/query/text.py) counts
against the budget what its text adds around each memory and the pack's own lines too
(``PackOptions.entry_overhead`` and ``reserve``).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from dataclasses import dataclass, field

from dmm.index import read
from dmm.memory import Memory
from dmm.query.rank import rank
from dmm.render import count

MAX_EXCLUDED_LISTED = 20


@dataclass
class PackOptions:
    budget: int
    scopes: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # any of them
    all_tags: tuple[str, ...] = ()  # every one of them (`--tag`, as `dmm list` takes it)
    exclude_ephemeral: bool = False
    include_deprecated: bool = False
    today: dt.date = field(default_factory=dt.date.today)
    # a pack a model reads as text (dmm/query/text.py): what each memory's heading costs, and
    # the pack's own lines (its warnings are added to it here)
    entry_overhead: int = 0
    reserve: int = 0
    with_baseline: bool = True  # False: the session has it (the prompt hook)


@dataclass
class PackEntry:
    memory: Memory
    source: str  # "baseline" or "retrieval"
    relevance: float = 0.0
    score: float = 0.0
    reason: str = ""  # why an excluded memory was left out
    evidence: tuple | None = None  # (lexical relevance, cosine or None) when ranked by both

    def to_dict(self, with_content: bool = True) -> dict:
        m = self.memory
        out = {"memory_id": m.id, "path": m.path, "title": m.title, "scope": m.scope,
               "tokens": m.tokens, "relevance_score": round(self.relevance, 4),
               "score": round(self.score, 4), "source": self.source, "priority": m.priority,
               "confidence": m.confidence, "status": m.status, "tags": m.tags,
               "created": m.created.isoformat() if m.created else None}
        if m.related:  # the memories its author declared related (`related`)
            out["related"] = m.related
        if self.reason:
            out["reason"] = self.reason
        if self.evidence is not None:
            lexical, cosine = self.evidence
            out["match"] = {"words": round(lexical, 4),
                            "meaning": None if cosine is None else round(cosine, 4)}
        if with_content:
            out["content"] = m.body
        return out


@dataclass
class Pack:
    task: str
    budget: int
    baseline: list[PackEntry]
    retrieved: list[PackEntry]
    excluded: list[PackEntry]
    excluded_total: int
    candidates: int
    warnings: list[str]
    conflicts: list = field(default_factory=list)  # open conflicts among the packed memories
    ranking: str = "words"  # "words" (lexical) or "words+meaning" (hybrid, dmm/semantic/)
    notes: list[str] = field(default_factory=list)  # why not by meaning (the pack says it)
    text: str | None = None  # the pack as a model reads it, when asked for (query/text.py)
    text_tokens: int | None = None  # and what that costs the model

    @property
    def baseline_tokens(self) -> int:
        return sum(e.memory.tokens for e in self.baseline)

    @property
    def retrieved_tokens(self) -> int:
        return sum(e.memory.tokens for e in self.retrieved)

    def stats(self) -> dict:
        used = self.baseline_tokens + self.retrieved_tokens
        return {"budget": self.budget, "baseline_count": len(self.baseline),
                "baseline_tokens": self.baseline_tokens,
                "retrieved_count": len(self.retrieved),
                "retrieved_tokens": self.retrieved_tokens, "total_tokens": used,
                "remaining_tokens": max(0, self.budget - used),
                "candidates_matched": self.candidates, "excluded_count": self.excluded_total,
                "ranking": self.ranking} | (
            {} if self.text_tokens is None else {"text_tokens": self.text_tokens})

    def to_dict(self) -> dict:
        return {"query": self.task,
                "baseline": [e.to_dict() for e in self.baseline],
                "retrieved": [e.to_dict() for e in self.retrieved],
                "excluded": [e.to_dict(with_content=False) for e in self.excluded],
                "stats": self.stats(), "warnings": self.warnings, "notes": self.notes,
                "conflicts": [c.to_dict() for c in self.conflicts]}


def build_pack(conn: sqlite3.Connection, task: str, opts: PackOptions, query_cfg: dict,
               conflicts_dir: Path | None = None, semantic=None, resident=None) -> Pack:
    """The Memory Pack for ``task``; with ``conflicts_dir``, warns about known conflicts
    among the packed memories (detected by the last scan, dismissals honoured); with a ready
    ``semantic`` index (dmm/semantic/index.py), ranked by words and meaning fused; with the
    ``resident`` state of a long-lived process (query/resident.py), ranked from memory."""
    today = opts.today.isoformat()
    baseline = [PackEntry(m, "baseline", 1.0, 1.0) for m in _baseline(conn, today, resident)] \
        if opts.with_baseline else []
    baseline.sort(key=lambda e: (-e.memory.priority, e.memory.path))
    if resident is not None:
        if resident.warnings is None:
            resident.warnings = _store_warnings(conn)
        warnings = list(resident.warnings)
    else:
        warnings = _store_warnings(conn)
    baseline_tokens = sum(e.memory.tokens for e in baseline)
    if baseline_tokens > opts.budget:
        warnings.append(f"baseline memories alone use {baseline_tokens} tokens, more than the "
                        f"budget of {opts.budget}: no room is left for retrieved memories")
    overhead = opts.entry_overhead
    remaining = opts.budget - baseline_tokens - overhead * len(baseline)
    if opts.reserve:
        from dmm.memory.tokens import count_tokens

        remaining -= opts.reserve + sum(count_tokens(w) + 2 for w in warnings)
    remaining = max(0, remaining)

    where, params = _candidate_filter(opts)
    ranked, evidence = _ranking(conn, task, where, params, query_cfg, semantic, resident)
    # greedy from the head of the ranking: once no memory left is small enough to fit and
    # enough excluded ones are listed, the rest are only counted
    smallest = overhead + (ranked.min_tokens() if hasattr(ranked, "min_tokens") else
                           min((r.tokens for r in ranked), default=0))
    retrieved_r, listed = [], []
    for r in ranked:
        if r.tokens + overhead <= remaining:
            retrieved_r.append(r)
            remaining -= r.tokens + overhead
        elif len(listed) < MAX_EXCLUDED_LISTED:
            listed.append(r)
        if remaining < smallest and len(listed) >= MAX_EXCLUDED_LISTED:
            break
    excluded_total = len(ranked) - len(retrieved_r)
    by_doc = read.memories_by_doc(conn, [r.doc for r in retrieved_r + listed])
    retrieved = [PackEntry(by_doc[r.doc], "retrieval", r.relevance, r.score,
                           evidence=evidence.get(r.doc)) for r in retrieved_r]
    excluded = [PackEntry(by_doc[r.doc], "retrieval", r.relevance, r.score,
                          reason=f"needs {r.tokens} tokens; not enough budget left",
                          evidence=evidence.get(r.doc))
                for r in listed]
    if not ranked:
        warnings.append("no memory matched the task: try other words, or check `dmm status`")
    found = []
    if conflicts_dir is not None and not ever_scanned(conn):
        # a fresh clone or a rebuilt cache: say so rather than imply there is no conflict
        warnings.append("conflicts among these memories were not checked: this cache has "
                        "never been scanned (run `dmm conflicts scan`; the git hooks keep it "
                        "current after that)")
    elif conflicts_dir is not None:
        found = conflicts_among(conn, [e.memory.id for e in baseline + retrieved],
                                conflicts_dir)
        if found:
            warnings.append(conflicts_warning(found))
    return Pack(task=task, budget=opts.budget, baseline=baseline, retrieved=retrieved,
                excluded=excluded, excluded_total=excluded_total, candidates=len(ranked),
                warnings=warnings, conflicts=found,
                ranking="words+meaning" if semantic is not None else "words")


def ever_scanned(conn: sqlite3.Connection) -> bool:
    """Whether a complete conflict scan ever ran on this cache (conflicts/store.py)."""
    from dmm.conflicts.store import scanned_with

    return scanned_with(conn) is not None


def conflicts_among(conn: sqlite3.Connection, ids: list[str], conflicts_dir: Path) -> list:
    """The open conflicts known among the memories ``ids`` (none when nothing was found)."""
    if not conn.execute("SELECT 1 FROM conflicts LIMIT 1").fetchone():
        return []
    from dmm.conflicts.store import among

    return among(conn, ids, conflicts_dir)


def conflicts_warning(found: list) -> str:
    """The warning of a pack that holds both sides of the conflicts ``found``."""
    return (f"{count(len(found), 'conflict')} {'exists' if len(found) == 1 else 'exist'} "
            "among these memories: "
            + "; ".join(f"{c.conflict_id}: {c.memories[0].memory_id} <> "
                        f"{c.memories[1].memory_id} ({c.type})" for c in found)
            + ". Check them before relying on either side (`dmm conflicts show ID`)")


def _baseline(conn: sqlite3.Connection, today: str, resident) -> list[Memory]:
    """The baseline memories in force ``today`` (read once per cache state by a long-lived
    process: ``resident``)."""
    held = resident.baseline if resident is not None else None
    if held is not None and held[0] == today:
        return held[1]
    found = read.memories(conn, "WHERE scope = 'baseline' AND status = 'active' AND "
                                "confidence != 'deprecated' AND (expires IS NULL OR expires >= ?)",
                          (today,))
    if resident is not None:
        resident.baseline = (today, found)
    return found


def _ranking(conn: sqlite3.Connection, task: str, where: str, params: list, cfg: dict,
             semantic, resident) -> tuple:
    """(the memories ranked best first, the evidence of each when ranked by meaning too)."""
    if resident is not None:
        if semantic is not None:
            from dmm.semantic.hybrid import hybrid_resident

            found = hybrid_resident(resident, conn, task, where, params, cfg, semantic)
            if found is not None:
                return found
        else:
            from dmm.query import resident as memory

            ranked = memory.rank(resident, conn, task, where, params, cfg)
            if ranked is not None:
                return ranked, {}
    if semantic is not None:
        from dmm.semantic.hybrid import hybrid_rank

        return hybrid_rank(conn, task, where, params, cfg, semantic)
    return rank(conn, task, where, params, cfg), {}


def _candidate_filter(opts: PackOptions) -> tuple[str, list]:
    """SQL condition (over memories as m) for the memories a query may retrieve."""
    where = ["m.scope != 'baseline'", "(m.expires IS NULL OR m.expires >= ?)"]
    params: list = [opts.today.isoformat()]
    if not opts.include_deprecated:
        where.append("m.status = 'active' AND m.confidence != 'deprecated'")
    if opts.exclude_ephemeral:
        where.append("m.scope != 'ephemeral'")
    if opts.scopes:
        where.append(f"m.scope IN ({','.join('?' * len(opts.scopes))})")
        params += opts.scopes
    if opts.tags:
        where.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE value IN "
                     f"({','.join('?' * len(opts.tags))}))")
        params += opts.tags
    for tag in opts.all_tags:
        where.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE lower(value) = lower(?))")
        params.append(tag)
    return " AND ".join(where), params


def _store_warnings(conn: sqlite3.Connection) -> list[str]:
    bad = conn.execute("SELECT count(DISTINCT path) FROM problems WHERE severity = 'error'"
                       ).fetchone()[0]
    dups = conn.execute("SELECT count(*) FROM (SELECT id FROM memories GROUP BY id "
                        "HAVING count(*) > 1)").fetchone()[0]
    out = []
    if bad:
        out.append(f"{count(bad, 'memory file')} {'has' if bad == 1 else 'have'} errors and "
                   f"{'was' if bad == 1 else 'were'} left out: run `dmm validate`")
    if dups:
        out.append(f"{count(dups, 'memory id')} {'is' if dups == 1 else 'are'} used by more "
                   "than one file: run `dmm validate`")
    return out
