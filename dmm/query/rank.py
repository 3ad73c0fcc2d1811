"""Rank memories by relevance to a task with BM25 over field-weighted terms plus expansion.

Reads only the cache (postings, lexicon). Each query word contributes the best of its exact
stem and its lexicon neighbours (a neighbour counts ``expansion_weight * similarity`` of an
exact match), so "costs" finds a memory about "price" without letting a word's many neighbours
add up to more than the word itself.
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter, defaultdict
from dataclasses import dataclass

from dmm.text.analyze import stem, words
from dmm.text.lexicon import parse_neighbours

K1 = 1.2
B = 0.75
MAX_NEIGHBOURS = 6  # per query word


@dataclass(frozen=True)
class Ranked:
    doc: int
    relevance: float  # 0..1: share of the query's matchable words the memory covers


def query_variants(conn: sqlite3.Connection, task: str, expansion: bool, min_sim: float,
                   weight: float) -> dict[str, tuple[int, dict[str, float]]]:
    """For each distinct query word: (count, {term: weight}) with the exact stem at 1.0."""
    counts = Counter(words(task))
    variants = {w: (n, {stem(w): 1.0}) for w, n in counts.items()}
    if expansion and counts:
        marks = ",".join("?" * len(counts))
        rows = conn.execute(f"SELECT word, nbrs FROM lexicon WHERE word IN ({marks})",
                            list(counts))
        for word, nbrs in rows:
            terms = variants[word][1]
            for nbr, sim in parse_neighbours(nbrs, min_sim)[:MAX_NEIGHBOURS]:
                term = stem(nbr)
                terms[term] = max(terms.get(term, 0.0), weight * sim)
    return variants


def rank(conn: sqlite3.Connection, task: str, allowed: set[int], *, expansion: bool = True,
         min_sim: float = 0.8, weight: float = 0.35) -> list[Ranked]:
    """Memories among ``allowed`` docs that match ``task``, best first."""
    variants = query_variants(conn, task, expansion, min_sim, weight)
    all_terms = sorted({t for _, terms in variants.values() for t in terms})
    if not all_terms or not allowed:
        return []
    n_docs, avg_len = conn.execute("SELECT count(*), avg(length) FROM memories").fetchone()
    avg_len = avg_len or 1.0
    postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for start in range(0, len(all_terms), 500):
        chunk = all_terms[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for term, doc, tf in conn.execute(
                f"SELECT term, doc, tf FROM postings WHERE term IN ({marks})", chunk):
            postings[term].append((doc, tf))
    lengths = _lengths(conn, {d for plist in postings.values() for d, _ in plist} & allowed)

    scores: dict[int, float] = defaultdict(float)
    norm = 0.0
    for _word, (count, terms) in variants.items():
        best: dict[int, float] = {}
        best_idf = 0.0
        for term, w in terms.items():
            plist = postings.get(term)
            if not plist:
                continue
            idf = math.log(1 + (n_docs - len(plist) + 0.5) / (len(plist) + 0.5))
            best_idf = max(best_idf, w * idf)
            for doc, tf in plist:
                if doc not in lengths:
                    continue
                sat = tf * (K1 + 1) / (tf + K1 * (1 - B + B * lengths[doc] / avg_len))
                value = w * idf * sat
                if value > best.get(doc, 0.0):
                    best[doc] = value
        qw = 1.0 + 0.5 * math.log(count)
        norm += qw * best_idf * (K1 + 1)
        for doc, value in best.items():
            scores[doc] += qw * value
    if norm <= 0:
        return []
    ranked = [Ranked(doc, min(1.0, s / norm)) for doc, s in scores.items()]
    ranked.sort(key=lambda r: (-r.relevance, r.doc))
    return ranked


def _lengths(conn: sqlite3.Connection, docs: set[int]) -> dict[int, float]:
    out: dict[int, float] = {}
    ids = sorted(docs)
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        out.update(conn.execute(f"SELECT doc, length FROM memories WHERE doc IN ({marks})", chunk))
    return out
