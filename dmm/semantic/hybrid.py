"""Hybrid ranking: the lexical ranking of query/rank.py fused with the semantic index.

Reads the cache (SQL) and asks a ready SemanticIndex for cosines; the fusion itself is
``fuse.py``. Returns the same ``Ranked`` rows as the lexical ranking, best first, plus the
evidence of each (so the pack can say why a memory is there). Every memory the lexical ranking
keeps is kept (its fused score may move it), and memories found only by meaning join.
"""

from __future__ import annotations

import sqlite3

from dmm.query.rank import CONFIDENCE_FACTOR, Ranked, rank
from dmm.semantic import fuse
from dmm.semantic.index import SemanticIndex


def hybrid_rank(conn: sqlite3.Connection, task: str, where: str, params: list, cfg: dict,
                index: SemanticIndex) -> tuple[list[Ranked], dict[int, fuse.Evidence]]:
    floor = float(cfg["min_relevance"])
    lexical = {r.doc: r for r in rank(conn, task, where, params, dict(cfg, min_relevance=0.0))}
    cosines = index.similarity(task)
    fused = fuse.fuse({d: r.relevance for d, r in lexical.items()}, cosines)
    keep = {d for d, (f, ev) in fused.items() if f >= floor or ev.lexical >= floor}
    if not keep:
        return [], {}
    rows: dict[int, tuple] = {}
    docs = sorted(keep)
    for start in range(0, len(docs), 500):
        part = docs[start:start + 500]
        marks = ",".join("?" * len(part))
        for doc, path, priority, confidence, tokens in conn.execute(
                f"SELECT m.doc, m.path, m.priority, m.confidence, m.tokens FROM memories m "
                f"WHERE m.doc IN ({marks}) AND {where}", [*part, *params]):
            rows[doc] = (path, priority, confidence, tokens)
    pw = float(cfg["priority_weight"])
    ranked = []
    for doc, (path, priority, confidence, tokens) in rows.items():
        relevance = min(1.0, fused[doc][0])
        score = relevance * (1 - pw + pw * priority) * CONFIDENCE_FACTOR.get(confidence, 1.0)
        ranked.append((Ranked(doc, relevance, score, tokens), path))
    ranked.sort(key=lambda rp: (-rp[0].score, rp[1]))
    return [r for r, _ in ranked], {d: fused[d][1] for d in rows}
