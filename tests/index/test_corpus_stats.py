"""The corpus statistics the cache keeps (terms, moves) and the similarity search built on them:
kept by every refresh exactly as counting the postings gives, and the candidate search reading
only some postings finds what summing all of them finds."""

from __future__ import annotations

import random

from dmm.index import refresh
from dmm.index.refresh import open_fresh, posting_weights
from dmm.index.similar import _idf, corpus_stats, top_sharing
from tests.benchmarks.generate import generate
from tests.conftest import memory_text
from tests.index.test_refresh import age

MOVES = "SELECT doc FROM bodies WHERE body LIKE '%from %to %' ORDER BY doc"


def counted(conn) -> tuple[dict, list]:
    """The statistics as a count over every posting gives them."""
    df = {term: (df, active) for term, df, active in conn.execute(
        "SELECT p.term, count(*), sum(m.status = 'active' AND m.confidence != 'deprecated') "
        "FROM postings p JOIN memories m ON m.doc = p.doc GROUP BY p.term")}
    return df, [d for (d,) in conn.execute(MOVES)]


def kept(conn) -> tuple[dict, list]:
    return ({term: (df, active) for term, df, active in conn.execute(
        "SELECT term, df, active FROM terms")},
            [d for (d,) in conn.execute("SELECT doc FROM moves ORDER BY doc")])


def test_statistics_follow_additions_edits_and_removals(repo):
    paths = [repo.add(f"project/m{i}.md", f"mem_2026_01_01_00{i}", f"Cache rule {i}",
                      f"Keep the cache warm for tenant {i}. Moved from Redis to Memcached.")
             for i in range(4)]
    for p in paths:
        age(p)
    conn, _ = open_fresh(repo.ws)
    assert kept(conn) == counted(conn) and len(kept(conn)[1]) == 4
    conn.close()
    paths[0].unlink()
    paths[1].write_text(memory_text("mem_2026_01_01_001", "Queue rule",
                                    "Retry the queue worker twice, then alert."),
                        encoding="utf-8")
    age(paths[1])
    age(repo.add("global/n.md", "mem_2026_01_01_009", "New rule", "Rotate keys weekly.",
                 scope="global"))
    paths[2].write_text(memory_text("mem_2026_01_01_002", "Cache rule 2", status="deprecated",
                                    body="Keep the cache warm for tenant 2."), encoding="utf-8")
    age(paths[2])
    conn, report = open_fresh(repo.ws)
    assert (report.read, report.removed) == (3, 1)
    assert kept(conn) == counted(conn)
    assert len(kept(conn)[1]) == 1  # the edited ones no longer record a move
    # every bound holds: no posting weighs more than its term's top
    assert not conn.execute("SELECT count(*) FROM postings p JOIN terms t ON t.term = p.term "
                            "WHERE p.weight > t.top").fetchone()[0]
    conn.close()


def test_a_large_refresh_counts_the_statistics_once(repo, monkeypatch):
    monkeypatch.setattr(refresh, "RECOUNT_MIN", 10)
    generate(repo.memory, 30, seed=3)
    for p in repo.memory.rglob("*.md"):
        age(p)
    conn, report = open_fresh(repo.ws)
    assert report.read == 30
    assert kept(conn) == counted(conn)
    tops = dict(conn.execute("SELECT term, max(weight) FROM postings GROUP BY term"))
    assert dict(conn.execute("SELECT term, top FROM terms")) == tops
    conn.close()


def oracle(conn, query: dict[str, float], n: int) -> list[int]:
    """The candidate search as one statement summing every shared term's postings (what
    similar.py did before it read only some of them)."""
    values = ",".join("(?, ?)" for _ in query)
    args = [x for pair in query.items() for x in pair]
    return sorted(d for (d,) in conn.execute(
        f"WITH q(term, w) AS (VALUES {values}) SELECT p.doc FROM q JOIN postings p "
        f"ON p.term = q.term GROUP BY p.doc ORDER BY sum(q.w * p.weight) DESC, p.doc LIMIT ?",
        args + [n]))


def test_the_candidate_search_finds_what_summing_every_posting_finds(repo):
    generate(repo.memory, 200, seed=11)
    conn, _ = open_fresh(repo.ws)
    from dmm.index import read

    memories = read.memories(conn)
    n_docs = len(memories) + 1
    rng = random.Random(5)
    for memory in rng.sample(memories, 25):
        weights, _ = posting_weights(memory)
        stats = corpus_stats(conn, list(weights))
        idf = _idf(stats, n_docs)
        # the whole memory, and a short text of a few of its words (rare and common alike)
        for terms in (list(weights), rng.sample(sorted(weights), 4)):
            query = {t: weights[t] * idf[t] for t in terms if t in idf}
            tops = {t: stats[t].top for t in query}
            for n in (1, 5, 50):
                assert top_sharing(conn, query, tops, n) == oracle(conn, query, n)
    conn.close()
