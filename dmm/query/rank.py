"""Rank memories for a task: BM25 over field-weighted terms, query expansion, priority, confidence.

Reads only the cache and does the heavy lifting inside SQLite, so a query over 10,000 memories
costs a few milliseconds and never imports numpy. Each query word contributes the best of its
exact stem and its lexicon neighbours (a neighbour counts ``expansion_weight * similarity`` of an
exact match), so "costs" can find a memory about "price" without letting a word's many
neighbours add up to more than the word itself.

relevance = BM25 score / the score a memory matching every query word would get (0..1)
score     = relevance * (1 - priority_weight + priority_weight * priority) * confidence factor
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from typing import NamedTuple

from dmm.index.refresh import K1
from dmm.text.analyze import stem, words
from dmm.text.lexicon import neighbours, parse_neighbours

MAX_NEIGHBOURS = 6  # per query word
# How much each confidence level is trusted when two memories are otherwise equally relevant.
CONFIDENCE_FACTOR = {"stable": 1.0, "active": 1.0, "experimental": 0.85, "deprecated": 0.6}


# Distinct words of a task that are looked up (SQLite binds at most 32,766 values per query,
# and each word brings up to MAX_NEIGHBOURS related terms).
MAX_QUERY_WORDS = 1000


class Ranked(NamedTuple):
    doc: int
    relevance: float
    score: float
    tokens: int


def query_variants(task: str, expansion: bool, min_sim: float, weight: float,
                   ) -> dict[str, tuple[int, dict[str, float]]]:
    """For each distinct query word: (count, {term: weight}) with the exact stem at 1.0."""
    counts = Counter(words(task))
    if len(counts) > MAX_QUERY_WORDS:  # a pasted document, not a task: its commonest words
        counts = Counter(dict(counts.most_common(MAX_QUERY_WORDS)))
    variants = {w: (n, {stem(w): 1.0}) for w, n in counts.items()}
    if expansion:
        for word, nbrs in neighbours(counts).items():
            terms = variants[word][1]
            for nbr, sim in parse_neighbours(nbrs, min_sim)[:MAX_NEIGHBOURS]:
                term = stem(nbr)
                terms[term] = max(terms.get(term, 0.0), weight * sim)
    return variants


def rank(conn: sqlite3.Connection, task: str, where: str, params: list, cfg: dict,
         ) -> list[Ranked]:
    """Memories matching ``where`` (SQL over table alias m) ranked for ``task``, best first.

    ``cfg`` is the [query] section of the configuration.
    """
    variants = query_variants(task, bool(cfg["expansion"]),
                              float(cfg["expansion_min_similarity"]),
                              float(cfg["expansion_weight"]))
    all_terms = sorted({t for _, terms in variants.values() for t in terms})
    if not all_terms:
        return []
    n_docs = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    marks = ",".join("?" * len(all_terms))
    df = dict(conn.execute(f"SELECT term, count(*) FROM postings WHERE term IN ({marks}) "
                           "GROUP BY term", all_terms))
    rows: list[tuple] = []  # (word number, term, weight including idf and word weight)
    norm = 0.0
    for number, (_word, (count, terms)) in enumerate(variants.items()):
        word_weight = 1.0 + 0.5 * math.log(count)
        best = 0.0
        for term, w in terms.items():
            if term in df:
                idf = math.log(1 + (n_docs - df[term] + 0.5) / (df[term] + 0.5))
                rows.append((number, term, word_weight * w * idf))
                best = max(best, word_weight * w * idf)
        norm += best * (K1 + 1)
    if not rows or norm <= 0:
        return []
    values = ",".join("(?, ?, ?)" for _ in rows)
    if len(rows) == len({row[0] for row in rows}):
        # One term per word: a plain sum (the common case without expansion) is cheaper.
        hits = "SELECT p.doc AS doc, sum(q.w * p.weight) AS s FROM q JOIN postings p " \
               "ON p.term = q.term GROUP BY p.doc"
    else:
        hits = "SELECT doc, sum(s) AS s FROM (SELECT p.doc AS doc, max(q.w * p.weight) AS s " \
               "FROM q JOIN postings p ON p.term = q.term GROUP BY p.doc, q.word) GROUP BY doc"
    pw = float(cfg["priority_weight"])
    conf = " ".join(f"WHEN '{name}' THEN {factor}" for name, factor in CONFIDENCE_FACTOR.items())
    sql = f"""
        WITH q(word, term, w) AS (VALUES {values}),
        rel AS (SELECT doc, min(1.0, s / ?) AS relevance FROM ({hits}) WHERE s >= ? * ?)
        SELECT rel.doc, relevance,
               relevance * (1 - ? + ? * m.priority) * (CASE m.confidence {conf} ELSE 1 END),
               m.tokens
        FROM rel JOIN memories m ON m.doc = rel.doc
        WHERE {where}
        ORDER BY 3 DESC, m.path"""
    args = [v for row in rows for v in row] + [norm, float(cfg["min_relevance"]), norm, pw, pw,
                                               *params]
    return list(map(Ranked._make, conn.execute(sql, args)))
