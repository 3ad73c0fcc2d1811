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
    lexical = {r.doc: r for r in rank(conn, task, where, params, cfg)}
    # below the floor the cosine adds nothing: those memories come by words or not at all
    by_path = index.similarity(task, min_cosine=fuse.FLOOR)
    cosines: dict[int, float] = {}
    paths = sorted(by_path)
    for start in range(0, len(paths), 500):
        part = paths[start:start + 500]
        marks = ",".join("?" * len(part))
        for doc, path in conn.execute(
                f"SELECT doc, path FROM memories WHERE path IN ({marks})", part):
            cosines[doc] = by_path[path]
    fused = fuse.fuse({d: r.relevance for d, r in lexical.items()}, cosines)
    # a lexical row's priority and confidence factor is its score over its relevance; the
    # memories found by meaning alone (few: above the floor) are read here
    factor = {d: r.score / r.relevance for d, r in lexical.items() if r.relevance > 0}
    tokens = {d: r.tokens for d, r in lexical.items()}
    extra = sorted(d for d, (f, _) in fused.items() if d not in lexical and f >= floor)
    pw = float(cfg["priority_weight"])
    for start in range(0, len(extra), 500):
        part = extra[start:start + 500]
        marks = ",".join("?" * len(part))
        for doc, priority, confidence, size in conn.execute(
                f"SELECT m.doc, m.priority, m.confidence, m.tokens FROM memories m "
                f"WHERE m.doc IN ({marks}) AND {where}", [*part, *params]):
            factor[doc] = (1 - pw + pw * priority) * CONFIDENCE_FACTOR.get(confidence, 1.0)
            tokens[doc] = size
    ranked = []
    for doc, (relevance, _) in fused.items():
        if doc in factor and (relevance >= floor or doc in lexical):
            relevance = min(1.0, relevance)
            ranked.append(Ranked(doc, relevance, relevance * factor[doc], tokens[doc]))
    ranked.sort(key=lambda r: (-r.score, r.doc))
    return ranked, {r.doc: fused[r.doc][1] for r in ranked}
