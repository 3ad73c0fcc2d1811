"""The co_retrieval method (seeds/000 3.1; issue 37 item 7): memories the queries often return
together are compared, and the rules judge them as any pair."""

from __future__ import annotations

import pytest

from dmm import config
from dmm.conflicts.features import build
from dmm.conflicts.scanner import candidate_pairs, co_retrieved_pairs, detect
from dmm.memory.parse import parse_memory
from dmm.usage.together import Together, often_together, tail
from tests.conftest import memory_text

CFG = config.DEFAULTS["conflicts"]
NATO = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
        "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee "
        "zulu").split()


def _memory(path: str, mid: str, title: str, body: str, **kw):
    m, problems = parse_memory(memory_text(mid, title, body, **kw), path)
    assert m, problems
    return m


def test_often_together_is_more_often_than_chance():
    # eight distinct tasks: three return a and b; five return c and d; e comes with every one
    returned = {f"task {i}": {"a", "b", "e"} for i in range(3)}
    returned |= {f"other task {i}": {"c", "d", "e"} for i in range(5)}
    found = often_together(returned)
    assert set(found) == {("a", "b"), ("c", "d")}
    assert found[("a", "b")].tasks == 3 and found[("a", "b")].total == 8
    # a memory every task returns is with everything by chance: never "often together"
    assert not any("e" in pair for pair in found)
    # two tasks are words that happened to match, not a habit
    assert often_together({"x": {"a", "b"}, "y": {"a", "b"}, **{f"z{i}": {"c"} for i in
                                                                range(20)}}) == {}
    assert often_together(returned, focus={"a"}) == {("a", "b"): found[("a", "b")]}


def test_the_chance_is_the_hypergeometric_tail():
    assert tail(8, 3, 3, 3) == pytest.approx(1 / 56)
    assert tail(10, 10, 4, 4) == pytest.approx(1.0)
    assert tail(10, 2, 2, 3) == 0.0


def test_a_pair_the_words_miss_is_judged_when_the_queries_return_it_together():
    # a large store where "squash" is in 57 memories: too common to look for partners by it,
    # yet specific enough to bind a subject
    store = []
    for i in range(598):
        w1, w2, w3 = NATO[i % 26], NATO[(i // 26) % 26], NATO[(i * 7 + 3) % 26]
        body = f"The {w1} {w2} record {i} for {w3}." + (" Squash it." if i < 55 else "")
        store.append(_memory(f"project/n{i}.md", f"mem_2024_01_01_{i:03d}",
                             f"{w1.title()} {w2} {w3} note {i}", body, tags="[notes]"))
    a = _memory("project/a.md", "mem_2025_01_10_001", "Squash merge every pull request",
                "Keep history linear.", tags="[git]")
    b = _memory("project/b.md", "mem_2025_06_10_001", "Do not squash",
                "Keep every commit of a branch.", tags="[review]")
    features = build(store + [a, b])
    focus = {a.id, b.id}
    assert candidate_pairs(features, focus, CFG["pair_similarity"], True) == []
    assert detect(features, focus, CFG)[0] == []
    together = {(a.id, b.id): Together(4, 5, 6, 40, 1e-4)}
    [found] = detect(features, focus, CFG, together=together)[0]
    assert found.type == "contradictory" and found.methods == ["co_retrieval", "negation"]
    assert "returned together by 4 of the last 40 distinct queries" in found.evidence


def test_linked_pairs_and_pairs_outside_the_focus_are_not_added():
    a = _memory("project/a.md", "mem_2025_01_10_001", "Squash merge", "Linear history.")
    b = _memory("project/b.md", "mem_2025_06_10_001", "Do not squash", "Keep commits.",
                extra="related: [mem_2025_01_10_001]\n")
    c = _memory("project/c.md", "mem_2025_07_10_001", "Rebase before merging", "Always.")
    features = build([a, b, c])
    together = {(a.id, b.id): Together(3, 3, 3, 30, 1e-4),
                (a.id, c.id): Together(3, 3, 3, 30, 1e-4)}
    added = co_retrieved_pairs(features, {a.id, b.id, c.id}, together, [], True)
    assert [(x, y) for x, y, _ in added] == [(a.id, c.id)]  # a and b are declared related
    assert co_retrieved_pairs(features, {b.id}, together, [], True) == []


TASKS_AB = ["how do we merge pull requests squash", "squash or keep commits when merging",
            "merge strategy squash commits history"]
TASKS_CD = ["database connection pool size", "how many connections in the pool",
            "pool of database connections limit", "connection pool settings for postgres",
            "size the postgres pool"]


def _full_scan(repo) -> list[dict]:
    """What `dmm conflicts scan --full` stores, as `dmm conflicts list --json` shows it."""
    from dmm.conflicts import service
    from dmm.index.refresh import open_fresh

    conn, _ = open_fresh(repo.ws)
    try:
        service.run_scan(repo.ws, conn, full=True)
        return [c.to_dict() for c in service.conflicts(repo.ws, conn, scan=False)[0]]
    finally:
        conn.close()


def test_scan_reads_the_usage_log(repo):
    from dmm.query.run import memory_pack

    repo.add("project/a.md", "mem_2025_01_10_001", "Squash merge every pull request",
             "Squash the commits of each pull request when merging: history stays linear.",
             extra="created: 2025-01-10\n")
    repo.add("project/b.md", "mem_2025_06_10_001", "Never squash pull requests",
             "Keep every commit of a pull request when merging: history shows each step.",
             extra="created: 2025-06-10\n")
    repo.add("project/c.md", "mem_2025_02_10_001", "Postgres connection pool size",
             "The database pool holds 20 connections per process.")
    repo.add("project/d.md", "mem_2025_03_10_001", "Pool connections through PgBouncer",
             "Postgres connections go through PgBouncer in transaction mode.")
    squash = {"mem_2025_01_10_001", "mem_2025_06_10_001"}
    before = [c for c in _full_scan(repo) if {m["memory_id"] for m in c["memories"]} == squash]
    assert before and "co_retrieval" not in before[0]["methods"]
    for task in TASKS_AB + TASKS_CD:  # what `dmm query` runs and logs, in this process
        memory_pack(repo.ws, task)
    [after] = [c for c in _full_scan(repo) if {m["memory_id"] for m in c["memories"]} == squash]
    assert "co_retrieval" in after["methods"]
    assert "returned together by 3 of the last 8 distinct queries" in after["evidence"]
