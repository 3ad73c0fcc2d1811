"""The lexical ranking of a long-lived process, from postings it keeps in memory.

`query/rank.py` ranks in one SQL statement that sums the postings of every memory sharing a
word with the task: at 50,000 memories that is hundreds of thousands of rows per query (40-300
ms), then as many Python rows, when the pack keeps a handful. A process that lives long (the
background process, `dmm serve`, `dmm mcp`; ``enable``) keeps instead, per store:

- the postings of every term (numpy arrays: read from the cache in a background thread once,
  about 60 MB and a few seconds of one core at 50,000 memories; until then a term is read on
  its first use), which stay valid across refreshes for every memory that did not change since
  they were read (compared by the cache's per-memory digest);
- per state of the cache (``State``, one per refresh token): each memory's priority factor,
  tokens and path order, the postings of the memories changed since (few), and the candidate
  filters already asked for.

A query then scores every memory with a few vector operations, and the pack walks the ranking
from its head (``Ranking``). The scores are those of ``rank.rank`` (same formula, same order:
score, then path). A request whose read snapshot is not the newest state (a refresh landed
meanwhile) is ranked by SQL as before, so no query mixes two states of the cache.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import threading
from typing import Iterator

from dmm.index.db import in_chunks
from dmm.index.refresh import K1, _token
from dmm.priority import step_aside
from dmm.semantic.model import numpy as _numpy

np = _numpy()  # numpy as the model's runtime wants it (its BLAS on one thread)
from dmm.query.rank import CONFIDENCE_FACTOR, Ranked, query_variants

REBASE_SHARE = 0.02  # more changed memories than this share of the store (and REBASE_MIN):
REBASE_MIN = 200  # the postings are read anew rather than patched
MAX_FILTERS = 32

_enabled = False
_lock = threading.Lock()
_stores: dict = {}


def enable() -> None:
    global _enabled
    _enabled = True


def state(key, conn: sqlite3.Connection, connect=None, limit: int = 4) -> State | None:
    """The in-memory state of the cache ``conn`` reads (in its read transaction), or None in a
    short-lived process. ``key`` names the store (its index folder). With ``connect`` (a
    function opening a new connection to that cache), a new state whose postings were read
    anew starts reading all of them in a background thread. At most ``limit`` stores are
    kept, the least recently used dropped (dmm/lru.py: semantic.resident_worktrees)."""
    from dmm.lru import recent

    if not _enabled:
        return None
    with _lock:
        resident = recent(_stores, key, _Resident, limit)
    st = resident.state(conn)
    if connect is not None and resident.preloaded_ref != st.ref_id:
        resident.start_preload(connect, st)
    return st


class _Resident:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ref: dict[int, str] = {}  # doc -> digest the cached postings were read at
        self.ref_id = 0  # which ``ref`` (it changes when the postings are reloaded anew)
        self.changed: set[int] = set()  # docs whose postings changed since ``ref``
        self.epoch = 0
        self.terms: dict[str, tuple] = {}  # term -> (docs, weights, epoch read at)
        self.current: State | None = None
        self.preloading: threading.Thread | None = None
        self.preloaded_ref = 0  # the ``ref_id`` whose postings were all read

    def start_preload(self, connect, st: State) -> None:
        with self.lock:
            if self.preloading is not None and self.preloading.is_alive():
                return
            self.preloading = threading.Thread(target=self._preload, args=(connect, st),
                                               daemon=True, name="dmm-postings")
            self.preloading.start()

    def _preload(self, connect, st: State) -> None:
        try:
            self.preload(connect, st)
        except (sqlite3.Error, OSError):
            pass  # a query loads what it needs meanwhile; the next new state tries again

    def state(self, conn: sqlite3.Connection) -> State:
        token = _token(conn)
        with self.lock:
            if self.current is not None and self.current.token == token:
                return self.current
            rows = conn.execute("SELECT doc, digest, path, priority, confidence, tokens "
                                "FROM memories").fetchall()
            digests = {row[0]: row[1] for row in rows}
            changed = self.changed | {d for d, g in digests.items() if self.ref.get(d) != g} \
                | (self.ref.keys() - digests.keys())
            if not self.ref or len(changed) > max(REBASE_MIN, REBASE_SHARE * len(rows)):
                self.ref, self.changed, self.terms = digests, set(), {}
                self.ref_id += 1
            else:
                self.changed = changed
            self.epoch += 1
            self.current = State(self, token, rows, conn)
            return self.current

    def preload(self, connect, st: State) -> int:
        """Read the postings of every term, as of state ``st`` (run in a background thread
        with its own connection from ``connect()``): afterwards no query waits for a word's
        postings. Returns how many terms were loaded (0 when the cache moved on meanwhile).

        Read a range of terms at a time, each in its own short read transaction that checks
        the cache is still at ``st``, and pause between them, outside any transaction, while
        a request is answered. A read transaction held across that pause once deadlocked the
        process: the cache keeps a rollback journal, so the request's refresh could not commit
        while this thread held its read lock, and this thread waited for the request."""
        conn = connect()
        try:
            with _read_at(conn, st) as fresh:
                if not fresh:
                    return 0
                counts = conn.execute("SELECT term, count(*) FROM postings GROUP BY term "
                                      "ORDER BY term").fetchall()
            doc_parts, weight_parts = [], []
            for first, last, expected in _term_ranges(counts, PRELOAD_ROWS):
                step_aside()  # a request first (dmm/priority.py)
                with _read_at(conn, st) as fresh:
                    if not fresh:
                        return 0
                    rows = conn.execute("SELECT doc, weight FROM postings WHERE term >= ? "
                                        "AND term <= ? ORDER BY term, doc",
                                        (first, last)).fetchall()
                if len(rows) != expected:  # not the state counted: never mix two
                    return 0
                doc_parts.append(np.fromiter((r[0] for r in rows), dtype=np.int64,
                                             count=len(rows)))
                weight_parts.append(np.fromiter((r[1] for r in rows), dtype=np.float64,
                                                count=len(rows)))
        finally:
            conn.close()
        docs = np.concatenate(doc_parts) if doc_parts else np.zeros(0, dtype=np.int64)
        weights = np.concatenate(weight_parts) if weight_parts else np.zeros(0)
        keep = st.valid[docs]  # as a load for ``st`` keeps them (see State.postings)
        ends = np.cumsum([n for _, n in counts])
        kept_ends = np.cumsum(keep)[ends - 1] if len(ends) else ends
        docs, weights = docs[keep], weights[keep]
        loaded = 0
        with self.lock:
            if self.current is not st or self.ref_id != st.ref_id:
                return 0
            start = 0
            for (term, _), end in zip(counts, kept_ends.tolist()):
                if term not in self.terms:
                    self.terms[term] = (docs[start:end], weights[start:end], st.epoch)
                    loaded += 1
                start = end
            self.preloaded_ref = st.ref_id
        return loaded


PRELOAD_ROWS = 50_000  # postings read per transaction by ``preload``: never millions at once


@contextlib.contextmanager
def _read_at(conn: sqlite3.Connection, st: State) -> Iterator[bool]:
    """A read transaction on ``conn``, yielding whether the cache is still at state ``st``."""
    conn.execute("BEGIN")
    try:
        yield _token(conn) == st.token
    finally:
        conn.execute("COMMIT")  # nothing was written: this releases the read lock


def _term_ranges(counts: list[tuple[str, int]], rows: int) -> Iterator[tuple[str, str, int]]:
    """(first term, last term, postings) of consecutive runs of ``counts`` (term, postings,
    in term order), each of about ``rows`` postings (one term's may be more)."""
    start, total = 0, 0
    for i, (_, n) in enumerate(counts):
        if total and total + n > rows:
            yield counts[start][0], counts[i - 1][0], total
            start, total = i, 0
        total += n
    if total:
        yield counts[start][0], counts[-1][0], total


class State:
    """One state of one store's cache, as a long-lived process ranks it."""

    def __init__(self, resident: _Resident, token: tuple, rows: list, conn) -> None:
        self.resident = resident
        self.token = token
        self.epoch = resident.epoch
        self.ref_id = resident.ref_id
        self.n_docs = len(rows)
        size = max([0, *(r[0] for r in rows), *resident.ref]) + 1
        self.size = size
        docs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self.exists = np.zeros(size, dtype=bool)
        self.exists[docs] = True
        self.valid = self.exists.copy()  # postings as cached (unchanged since ``ref``)
        changed = np.fromiter(resident.changed, dtype=np.int64, count=len(resident.changed))
        self.valid[changed] = False
        self.priority = np.zeros(size)
        self.priority[docs] = [r[3] for r in rows]
        self.confidence = np.ones(size)
        self.confidence[docs] = [CONFIDENCE_FACTOR.get(r[4], 1.0) for r in rows]
        self.tokens = np.zeros(size, dtype=np.int64)
        self.tokens[docs] = [r[5] for r in rows]
        order = sorted(range(len(rows)), key=lambda i: rows[i][2])
        self.path_rank = np.zeros(size, dtype=np.int64)
        self.path_rank[docs[order]] = np.arange(len(rows))
        self.doc_of_path = {r[2]: r[0] for r in rows}
        self.delta: dict[str, tuple] = {}  # postings of the changed memories that exist
        live = [int(d) for d in changed if d < size and self.exists[d]]
        found: dict[str, list] = {}
        for part, marks in in_chunks(live):
            for term, doc, weight in conn.execute(
                    f"SELECT term, doc, weight FROM postings WHERE doc IN ({marks})", part):
                found.setdefault(term, []).append((doc, weight))
        for term, pairs in found.items():
            self.delta[term] = (np.array([p[0] for p in pairs], dtype=np.int64),
                                np.array([p[1] for p in pairs]))
        self._filters: dict[tuple, np.ndarray] = {}
        self.warnings: list[str] | None = None  # the store's warnings, once asked
        self.baseline: tuple | None = None  # (day, the baseline memories in force that day)

    def current(self) -> bool:
        return self.resident.current is self

    def postings(self, conn, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(docs, weights) of ``term`` in this state; None when this state is no longer the
        newest and its cached postings cannot be trusted for it."""
        res = self.resident
        cached = res.terms.get(term)
        if cached is None or cached[2] > self.epoch or res.ref_id != self.ref_id:
            with res.lock:
                if res.current is not self:
                    return None
                rows = conn.execute("SELECT doc, weight FROM postings WHERE term = ?",
                                    (term,)).fetchall()
                docs = np.array([r[0] for r in rows], dtype=np.int64)
                weights = np.array([r[1] for r in rows], dtype=np.float64)
                keep = self.valid[docs] if len(docs) else np.zeros(0, dtype=bool)
                cached = (docs[keep], weights[keep], self.epoch)
                res.terms[term] = cached
        docs, weights, _ = cached
        keep = self.valid[docs]
        docs, weights = docs[keep], weights[keep]
        if term in self.delta:
            extra_docs, extra_weights = self.delta[term]
            docs = np.concatenate([docs, extra_docs])
            weights = np.concatenate([weights, extra_weights])
        return docs, weights

    def allowed(self, conn, where: str, params: list) -> np.ndarray:
        """Which memories the candidate filter ``where`` (SQL over memories as m) admits."""
        key = (where, tuple(params))
        found = self._filters.get(key)
        if found is None:
            found = np.zeros(self.size, dtype=bool)
            docs = [row[0] for row in conn.execute(
                f"SELECT m.doc FROM memories m WHERE {where}", params)]
            found[np.array(docs, dtype=np.int64)] = True
            if len(self._filters) >= MAX_FILTERS:
                self._filters.clear()
            self._filters[key] = found
        return found

    def factor(self, cfg: dict) -> np.ndarray:
        pw = float(cfg["priority_weight"])
        return (1 - pw + pw * self.priority) * self.confidence


class Ranking:
    """Memories ranked best first, as arrays; iterated as ``Ranked`` rows, lazily, so a pack
    that keeps a handful never builds the thousands of rows behind them."""

    def __init__(self, docs, relevance, score, tokens) -> None:
        self.docs, self.relevance, self.score, self.tokens = docs, relevance, score, tokens

    def __len__(self) -> int:
        return len(self.docs)

    def __iter__(self) -> Iterator[Ranked]:
        for i in range(len(self.docs)):
            yield Ranked(int(self.docs[i]), float(self.relevance[i]), float(self.score[i]),
                         int(self.tokens[i]))

    def min_tokens(self) -> int:
        return int(self.tokens.min()) if len(self.tokens) else 0

    @classmethod
    def ordered(cls, st: State, docs, relevance, score) -> Ranking:
        order = np.lexsort((st.path_rank[docs], -score))
        docs = docs[order]
        return cls(docs, relevance[order], score[order], st.tokens[docs])


EMPTY = np.zeros(0, dtype=np.int64)


def lexical_scores(st: State, conn, task: str, cfg: dict) -> tuple[np.ndarray, float] | None:
    """Each memory's BM25 sum for ``task`` (by doc) and the normaliser, as ``rank.rank``
    computes them; None when this state cannot answer (see ``State.postings``)."""
    variants = query_variants(task, bool(cfg["expansion"]),
                              float(cfg["expansion_min_similarity"]),
                              float(cfg["expansion_weight"]))
    sums = np.zeros(st.size)
    norm = 0.0
    for _word, (count, terms) in variants.items():
        word_weight = 1.0 + 0.5 * math.log(count)
        best = 0.0
        acc = None
        for term, w in terms.items():
            found = st.postings(conn, term)
            if found is None:
                return None
            docs, weights = found
            df = len(docs)
            if not df:
                continue
            idf = math.log(1 + (st.n_docs - df + 0.5) / (df + 0.5))
            q = word_weight * w * idf
            best = max(best, q)
            if acc is None:
                acc = np.zeros(st.size)
            acc[docs] = np.maximum(acc[docs], q * weights)  # a term's docs are distinct
        if acc is not None:
            sums += acc
        norm += best * (K1 + 1)
    return sums, norm


def rank(st: State, conn, task: str, where: str, params: list, cfg: dict) -> Ranking | None:
    """``rank.rank`` from memory: the same rows, best first, as a lazy ``Ranking``."""
    scored = lexical_scores(st, conn, task, cfg)
    if scored is None:
        return None
    sums, norm = scored
    if norm <= 0:
        return Ranking(EMPTY, np.zeros(0), np.zeros(0), EMPTY)
    keep = st.allowed(conn, where, params) & (sums >= float(cfg["min_relevance"]) * norm)
    docs = np.nonzero(keep)[0]
    relevance = np.minimum(1.0, sums[docs] / norm)
    return Ranking.ordered(st, docs, relevance, relevance * st.factor(cfg)[docs])
