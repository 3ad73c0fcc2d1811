"""Memories the queries return together (seeds/000 1.3 and 3.1: "UsageTracker: identify
co-retrieved conflicting memories"), read from the usage log for the conflict scan's
``co_retrieval`` method (dmm/conflicts/analyzers/co_retrieval.py).

"Often together" is a statement about chance, so it is tested as one, with no weight fitted to
any store: among the distinct tasks of the log's last ``WINDOW`` queries (the same task asked
again is one observation, not several), two memories returned together by ``c`` tasks, one
returned by ``n_a`` and the other by ``n_b`` of ``T``, are together more often than chance
when the hypergeometric tail P(X >= c) is below ``ALPHA`` divided by the number of pairs
tested (Bonferroni, with Tarone's count of the pairs that could pass at all: over a whole log,
a 5 % chance that any pair passes by coincidence), and
when ``c`` is at least ``MIN_TASKS`` (two tasks can share two memories by the words they
happen to use; three different tasks returning the same two is a habit of the store). Only the
first ``TOP`` memories a query retrieved count (the tail of a large pack is there because the
budget allowed it), and never the baseline (every query returns it).

IO: reads ``usage.sqlite3`` in the clone's shared state folder, only when it exists (reading
never creates it); nothing is written.
"""

from __future__ import annotations

import math
import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations

WINDOW = 2000  # the most recent queries read: a bounded read whatever the log's age
TOP = 10  # the first memories of each query that count as returned together
MIN_TASKS = 3
ALPHA = 0.05  # family-wise: the chance that any pair of the log passes by coincidence


@dataclass(frozen=True)
class Together:
    """Two memories returned together: by how many distinct tasks, of how many for each, of
    how many in all, and how likely that is by chance."""

    tasks: int
    first: int  # tasks returning the pair's first memory (the smaller id)
    second: int
    total: int
    p: float

    def describe(self) -> str:
        return (f"returned together by {self.tasks} of the last {self.total} distinct queries "
                f"({self.first} and {self.second} returned each; chance p = {self.p:.1g})")


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def tail(total: int, a: int, b: int, c: int) -> float:
    """P(X >= c) for X hypergeometric: ``b`` tasks drawn from ``total`` of which ``a`` return
    the other memory."""
    top = min(a, b)
    if c > top:
        return 0.0
    base = _log_comb(total, b)
    return min(1.0, sum(math.exp(_log_comb(a, k) + _log_comb(total - a, b - k) - base)
                        for k in range(c, top + 1) if b - k <= total - a))


def often_together(returned: dict[str, set[str]], focus: set[str] | None = None,
                   ) -> dict[tuple[str, str], Together]:
    """The pairs of memories ``returned`` together (task -> the memories it returned) more
    often than chance (see the module's docstring), each (smaller id, larger id); with
    ``focus``, only pairs with a memory of it. Pure."""
    total = len(returned)
    seen: dict[str, int] = defaultdict(int)
    both: dict[tuple[str, str], int] = defaultdict(int)
    for ids in returned.values():
        for i in ids:
            seen[i] += 1
        for a, b in combinations(sorted(ids), 2):
            if focus is None or a in focus or b in focus:
                both[(a, b)] += 1
    tested = {pair: n for pair, n in both.items() if n >= MIN_TASKS}
    level = _level({pair: tail(total, seen[pair[0]], seen[pair[1]],
                               min(seen[pair[0]], seen[pair[1]])) for pair in tested})
    out = {}
    for (a, b), n in sorted(tested.items()):
        p = tail(total, seen[a], seen[b], n)
        if p <= level:
            out[(a, b)] = Together(n, seen[a], seen[b], total, p)
    return out


def _level(least: dict[tuple[str, str], float]) -> float:
    """The level each pair's chance is held to: ALPHA / k with Tarone's count of the tests
    (k the smallest number with at most k pairs whose least possible chance, ``least``, is
    below ALPHA / k). A pair that cannot pass whatever it does (a memory every task returns
    is with everything by chance) is no test, and does not make the others' bar higher."""
    ordered = sorted(least.values())
    k = 1
    while sum(1 for p in ordered if p <= ALPHA / k) > k:
        k += 1
    return ALPHA / k


def returned_by_task(conn: sqlite3.Connection, window: int = WINDOW) -> dict[str, set[str]]:
    """The memories each distinct task of the last ``window`` queries retrieved (its first
    ``TOP`` by relevance; the baseline and what did not fit the budget left out), the task
    written in lower case with its spaces collapsed."""
    rows = conn.execute(
        "SELECT q.query_id, q.query_text, u.memory_id, u.relevance_score FROM memory_usage u "
        "JOIN (SELECT query_id, query_text FROM query_log ORDER BY timestamp DESC, rowid DESC "
        "LIMIT ?) q ON q.query_id = u.query_id "
        "WHERE u.source = 'retrieved' AND u.was_included = 1", (window,)).fetchall()
    by_query: dict[str, list[tuple[float, str]]] = defaultdict(list)
    text: dict[str, str] = {}
    for qid, task, mid, relevance in rows:
        by_query[qid].append((-(relevance or 0.0), mid))
        text[qid] = " ".join(task.lower().split())
    out: dict[str, set[str]] = defaultdict(set)
    for qid, found in by_query.items():
        out[text[qid]].update(mid for _, mid in sorted(found)[:TOP])
    return dict(out)


def co_retrieved(ws, focus: set[str] | None = None) -> dict[tuple[str, str], Together]:
    """The pairs the usage log of ``ws``'s clone returns together more often than chance
    (``often_together``); none when there is no log yet."""
    from dmm import state

    try:
        if not (ws.shared_state_dir / state.USAGE_LOG).is_file():
            return {}
    except OSError:  # a git folder this user may not read: no log to read
        return {}
    from dmm.usage.log import connect

    conn = connect(ws)
    try:
        returned = returned_by_task(conn)
    finally:
        conn.close()
    return often_together(returned, focus)
