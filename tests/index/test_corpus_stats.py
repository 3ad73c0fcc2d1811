"""The corpus statistics the cache keeps (terms, moves): kept by every refresh exactly as
counting the postings gives."""

from __future__ import annotations

from dmm.index import refresh
from dmm.index.refresh import open_fresh
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
    conn.close()


def test_a_large_refresh_counts_the_statistics_once(repo, monkeypatch):
    monkeypatch.setattr(refresh, "RECOUNT_MIN", 10)
    generate(repo.memory, 30, seed=3)
    for p in repo.memory.rglob("*.md"):
        age(p)
    conn, report = open_fresh(repo.ws)
    assert report.read == 30
    assert kept(conn) == counted(conn)
    conn.close()
