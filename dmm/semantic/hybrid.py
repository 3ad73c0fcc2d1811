"""Hybrid ranking: the lexical ranking of query/rank.py fused with the semantic index.

Reads the cache (SQL) and asks a ready SemanticIndex for cosines; the fusion itself is
``fuse.py``. Returns the same ``Ranked`` rows as the lexical ranking, best first, plus the
evidence of each (so the pack can say why a memory is there). Every memory the lexical ranking
keeps is kept (its fused score may move it), and memories found only by meaning join.

A memory with no cosine above the floor keeps its lexical order (its fused score is the
lexical one times 1 - WEIGHT), so only the few memories near the task in meaning are fused one
by one, and the thousands that share a word with it in a large store cost one multiplication.
"""

from __future__ import annotations

import heapq
import sqlite3

from dmm.index.db import in_chunks
from dmm.query.rank import CONFIDENCE_FACTOR, Ranked, rank
from dmm.semantic import fuse
from dmm.semantic.index import SemanticIndex


def hybrid_rank(conn: sqlite3.Connection, task: str, where: str, params: list, cfg: dict,
                index: SemanticIndex) -> tuple[list[Ranked], dict[int, fuse.Evidence]]:
    floor = float(cfg["min_relevance"])
    lexical = rank(conn, task, where, params, cfg)  # best first
    by_path = index.similarity(task, min_cosine=fuse.FLOOR)
    cosines: dict[int, float] = {}
    paths = sorted(by_path)
    for part, marks in in_chunks(paths):
        for doc, path in conn.execute(
                f"SELECT doc, path FROM memories WHERE path IN ({marks})", part):
            cosines[doc] = by_path[path]
    words_only = 1 - fuse.WEIGHT
    rest, near = [], {}
    for r in lexical:
        if r.doc in cosines:
            near[r.doc] = r
        else:
            rest.append(Ranked(r.doc, r.relevance * words_only, r.score * words_only, r.tokens))
    # a lexical row's priority and confidence factor is its score over its relevance; the
    # memories found by meaning alone (few: above the floor) are read here
    factor = {d: r.score / r.relevance for d, r in near.items() if r.relevance > 0}
    tokens = {d: r.tokens for d, r in near.items()}
    fused = fuse.fuse({d: r.relevance for d, r in near.items()}, cosines)
    extra = sorted(d for d, (f, _) in fused.items() if d not in near and f >= floor)
    pw = float(cfg["priority_weight"])
    for part, marks in in_chunks(extra):
        for doc, priority, confidence, size in conn.execute(
                f"SELECT m.doc, m.priority, m.confidence, m.tokens FROM memories m "
                f"WHERE m.doc IN ({marks}) AND {where}", [*part, *params]):
            factor[doc] = (1 - pw + pw * priority) * CONFIDENCE_FACTOR.get(confidence, 1.0)
            tokens[doc] = size
    meant = []
    for doc, (relevance, _) in fused.items():
        if doc in factor and (relevance >= floor or doc in near):
            relevance = min(1.0, relevance)
            meant.append(Ranked(doc, relevance, relevance * factor[doc], tokens[doc]))
    meant.sort(key=lambda r: (-r.score, r.doc))
    ranked = list(heapq.merge(meant, rest, key=lambda r: -r.score))
    evidence = {d: ev for d, (_, ev) in fused.items()}
    return ranked, _Evidence(evidence, {r.doc: r.relevance for r in lexical})


class _Evidence(dict):
    """The evidence of the fused memories; a memory ranked by words alone gets its own on
    demand (the pack asks for a handful of the thousands)."""

    def __init__(self, fused: dict, lexical: dict[int, float]) -> None:
        super().__init__(fused)
        self._lexical = lexical

    def get(self, doc, default=None):
        if doc in self:
            return self[doc]
        if doc in self._lexical:
            return fuse.Evidence(self._lexical[doc], None)
        return default


def hybrid_resident(st, conn: sqlite3.Connection, task: str, where: str, params: list,
                    cfg: dict, index: SemanticIndex):
    """``hybrid_rank`` over the postings a long-lived process keeps (query/resident.py): the
    same fusion on arrays, as a lazy ranking the pack reads from its head; None when that
    state cannot answer (the caller ranks by SQL)."""
    from dmm.query import resident
    from dmm.semantic.model import numpy

    np = numpy()

    scored = resident.lexical_scores(st, conn, task, cfg)
    if scored is None:
        return None
    sums, norm = scored
    floor = float(cfg["min_relevance"])
    allowed = st.allowed(conn, where, params)
    lexical = np.zeros(st.size)
    matched = np.zeros(st.size, dtype=bool)
    if norm > 0:
        matched = allowed & (sums >= floor * norm)
        lexical[matched] = np.minimum(1.0, sums[matched] / norm)
    by_path = index.similarity(task, min_cosine=fuse.FLOOR)
    cosine = np.full(st.size, np.nan)
    for path, value in by_path.items():
        doc = st.doc_of_path.get(path)
        if doc is not None:
            cosine[doc] = value
    near = ~np.isnan(cosine)
    semantic = np.clip((np.nan_to_num(cosine, nan=fuse.FLOOR) - fuse.FLOOR)
                       / (fuse.CEILING - fuse.FLOOR), 0.0, 1.0)
    fused = (1 - fuse.WEIGHT) * lexical + fuse.WEIGHT * semantic
    # kept: what the words matched (fused when near in meaning, else its words' share), and
    # what meaning alone finds relevant enough among the memories the filter admits
    keep = matched | (near & allowed & (fused >= floor))
    docs = np.nonzero(keep)[0]
    relevance = np.where(near[docs], np.minimum(1.0, fused[docs]),
                         lexical[docs] * (1 - fuse.WEIGHT))
    ranking = resident.Ranking.ordered(st, docs, relevance, relevance * st.factor(cfg)[docs])
    return ranking, _ArrayEvidence(lexical, cosine, near)


class _ArrayEvidence:
    """The evidence of a memory in a ``hybrid_resident`` ranking, made when the pack asks."""

    def __init__(self, lexical, cosine, near) -> None:
        self._lexical, self._cosine, self._near = lexical, cosine, near

    def get(self, doc, default=None):
        if not 0 <= doc < len(self._lexical):
            return default
        cosine = float(self._cosine[doc]) if self._near[doc] else None
        return fuse.Evidence(float(self._lexical[doc]), cosine)
