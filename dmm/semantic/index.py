"""The semantic index in memory: every passage vector of the store, and the query against it.

Lives in long-lived processes (the background process, `dmm mcp`, `dmm serve`) and in
`dmm reindex` / `dmm conflicts scan`. ``sync`` brings it up to date with the memory cache:
memories whose text changed since the last sync are looked up in the vector cache
(``vectors.py``) and embedded only if no vector was ever computed for that text, in batches,
each stored at once, so a killed build keeps what it did. ``similarity`` scores the memories
for a task (cosine of each memory's best passage).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable

from dmm.index import db
from dmm.index.db import in_chunks
from dmm.semantic import chunks, model, vectors

Progress = Callable[[int, int], None]
BATCH_MEMORIES = 32  # embedded, then stored in one transaction
MIN_PARALLEL = 200  # memories: fewer are embedded in this process (workers take ~1 s to start)
EXACT_UP_TO = 3000  # memories: a larger store looks at the passages of its nearest means only
COARSE_TOP = 400


def _embed_batch(passages: list[list[str]], threads: int = 1, model_id: str | None = None):
    """(vectors of every passage, passages per memory) for one batch of memories; run in this
    process or in a worker process (module level: a worker imports it by name). ``model_id``:
    the model the vectors are stored under; a worker that loaded another one refuses."""
    flat = [p for parts in passages for p in parts]
    loaded = model.load(threads)
    if model_id is not None and loaded.id != model_id:
        raise model.ModelUnavailable(f"this process loaded {loaded.id}, not {model_id}")
    return loaded.embed(flat), [len(parts) for parts in passages]


@contextlib.contextmanager
def _embedder(threads: int, workers: int):
    """A function mapping batches to their vectors, in order: here, or spread over
    ``workers`` processes, each with its own model on one thread (`dmm reindex` uses every
    core; a background build uses one)."""
    if workers <= 1:
        yield lambda batches: (_embed_batch(b, threads) for b in batches)
        return
    import functools
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # the model (derived now if it must be) is decided here, before the workers look for it
    embed = functools.partial(_embed_batch, threads=1, model_id=model.model_id())
    # spawn: a fork would copy this process's threads and SQLite handles
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield lambda batches: pool.map(embed, batches)


class SemanticIndex:
    """Vectors of one store's memories. Thread-safe: one sync at a time, reads at any time."""

    def __init__(self, vectors_dir: Path | None, threads: int = 1, workers: int = 1) -> None:
        self.vectors_dir = vectors_dir  # the folder of semantic.sqlite3; None: in memory
        self.threads = threads
        self.workers = workers
        self._sync_lock = threading.Lock()
        self._keys: dict[str, str] = {}  # memory digest -> text key
        self._vecs: dict[str, object] = {}  # text key -> (n, DIM) float16 array
        # memory path -> text key, at the last sync (paths, not the cache's doc numbers, which
        # a refresh by another process renumbers)
        self._docs: dict[str, str] = {}
        self._matrix = None  # all passage vectors, stacked
        self._rows: list[str] = []  # the path of each memory in the matrix, in order
        self._starts = None  # the row where each of them begins
        self._counts = None  # and how many passages it has
        self._means = None  # a large store: each memory's mean passage, normalised
        self.pending: int | None = 0  # memories still to embed (None: not yet known)
        self.total: int | None = None  # memories of the store at the sync under way
        self.ready = False  # every memory of the last sync has vectors
        self.generation: str | None = None
        self.last_sync_s = 0.0

    # -- building ---------------------------------------------------------------------------

    def progress(self) -> tuple[int, int | None]:
        """(memories with vectors, memories of the store) of the sync under way; the total is
        None while it is not known yet."""
        pending, total = self.pending, self.total
        if pending is None or total is None:
            return 0, None
        return max(0, total - pending), total

    def sync(self, conn: sqlite3.Connection, progress: Progress | None = None) -> int:
        """Embed what changed in the memory cache ``conn`` since the last sync; returns the
        number of memories embedded. Raises model.ModelUnavailable if it needs the model and
        cannot load it."""
        with self._sync_lock:
            started = time.perf_counter()
            row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            generation = row[0] if row else ""
            if self.ready and generation == self.generation:
                return 0
            self.pending, self.total = None, None
            texts: dict[str, tuple[str, str]] = {}
            model_id = model.model_id()  # the model whose vectors these are
            with db.snapshot(conn):  # doc numbers and texts from one state of the cache
                row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
                generation = row[0] if row else ""
                rows = conn.execute("SELECT path, digest FROM memories").fetchall()
                new = dict((path, digest) for path, digest in rows if digest not in self._keys)
                for path, title, body in self._texts(conn, list(new)):
                    key = chunks.text_key(model_id, title, body)
                    self._keys[new[path]] = key
                    if key not in self._vecs:
                        texts[key] = (title, body)
                # memories known from an earlier sync whose vectors never came (it failed)
                again = [path for path, digest in rows if digest in self._keys
                         and self._keys[digest] not in self._vecs
                         and self._keys[digest] not in texts]
                for _path, title, body in self._texts(conn, again):
                    texts[chunks.text_key(model_id, title, body)] = (title, body)
            docs = {path: self._keys[digest] for path, digest in rows if digest in self._keys}
            embedded = self._fill(docs, texts, progress)
            live = set(docs.values())
            for key in [k for k in self._vecs if k not in live]:
                del self._vecs[key]
            self._keys = {d: k for d, k in self._keys.items() if k in live}
            self._docs = docs
            self._stack()
            self.generation = generation
            self.ready = True
            self.last_sync_s = time.perf_counter() - started
            return embedded

    def _fill(self, docs: dict[str, str], texts: dict[str, tuple[str, str]],
              progress: Progress | None) -> int:
        np = model.numpy()

        missing = sorted({k for k in docs.values() if k not in self._vecs})
        self.total = len(docs)
        if not missing:
            self.pending = 0
            return 0
        store = vectors.connect(self.vectors_dir)
        try:
            stored = vectors.keys(store, missing)
            todo = [k for k in missing if k not in stored and k in texts]
            self.pending = len(todo)
            for key, (n, blob) in vectors.known(store, sorted(stored)).items():
                self._vecs[key] = np.frombuffer(blob, dtype=np.float16).reshape(
                    n, model.DIMENSION)
            if not todo:
                return 0
            batches = [todo[i:i + BATCH_MEMORIES] for i in range(0, len(todo), BATCH_MEMORIES)]
            passages = ([chunks.passages(*texts[key]) for key in keys] for keys in batches)
            with _embedder(self.threads, self.workers if len(todo) >= MIN_PARALLEL else 1
                           ) as embed_all:
                self._store_batches(store, batches, embed_all(passages), len(todo), progress)
            return len(todo)
        finally:
            store.close()
            self.pending = 0

    def _store_batches(self, store, batches, results, total: int,
                       progress: Progress | None) -> None:
        np = model.numpy()
        done = 0
        for keys, (vecs, counts) in zip(batches, results):
            rows, at = [], 0
            for key, n in zip(keys, counts):
                self._vecs[key] = vecs[at:at + n].astype(np.float16)
                rows.append((key, n, self._vecs[key].tobytes()))
                at += n
            vectors.store(store, rows)
            done += len(keys)
            self.pending = total - done
            if progress:
                progress(done, total)

    @staticmethod
    def _texts(conn: sqlite3.Connection, paths: list[str]) -> list[tuple[str, str, str]]:
        out = []
        for part, marks in in_chunks(paths):
            out += conn.execute("SELECT m.path, m.title, b.body FROM memories m JOIN bodies b "
                                f"ON b.doc = m.doc WHERE m.path IN ({marks})", part).fetchall()
        return out

    def _stack(self) -> None:
        """One matrix of every passage, each memory's rows together (``_starts`` says where
        each begins), so a memory's best passage is one ``maximum.reduceat``; and one mean
        vector per memory, to find the candidates of a large store first."""
        np = model.numpy()

        parts, docs, starts, at = [], [], [], 0
        for path, key in self._docs.items():
            vec = self._vecs.get(key)
            if vec is not None and len(vec):
                parts.append(vec)
                docs.append(path)
                starts.append(at)
                at += len(vec)
        matrix = (np.vstack(parts) if parts
                  else np.zeros((0, model.DIMENSION), dtype=np.float16))
        self._rows = docs
        self._starts = np.array(starts, dtype=np.int64)
        self._counts = np.diff(np.append(self._starts, len(matrix)))
        if len(docs) <= EXACT_UP_TO:  # small: every passage, in float32, every time
            self._matrix, self._means = matrix.astype(np.float32), None
        else:
            self._matrix = matrix  # float16: 50,000 memories of 6 passages take 230 MB
            means = np.empty((len(docs), model.DIMENSION), dtype=np.float32)
            starts = self._starts
            for a in range(0, len(docs), 4096):  # never the whole matrix in float32 (460 MB)
                b = min(len(docs), a + 4096)
                end = starts[b] if b < len(docs) else len(matrix)
                means[a:b] = np.add.reduceat(matrix[starts[a]:end].astype(np.float32),
                                             starts[a:b] - starts[a])
            self._means = means / np.linalg.norm(means, axis=1, keepdims=True).clip(1e-12)

    def prune(self) -> int:
        """Drop stored vectors that no memory of the last sync uses (after a full sync)."""
        store = vectors.connect(self.vectors_dir)
        try:
            return vectors.prune(store, set(self._docs.values()))
        finally:
            store.close()

    # -- asking -----------------------------------------------------------------------------

    def similarity(self, text: str, min_cosine: float = -1.0) -> dict[str, float]:
        """Cosine of ``text`` with each memory's best passage, for the indexed memories at
        least ``min_cosine`` similar. In a store of more than EXACT_UP_TO memories, only the
        COARSE_TOP memories whose mean passage is nearest are looked at passage by passage
        (one product with 50,000 means instead of 300,000 passages)."""
        np = model.numpy()

        matrix, docs, starts, means = self._matrix, self._rows, self._starts, self._means
        if matrix is None or not len(matrix):
            return {}
        query = model.load(self.threads).embed([text])[0]
        if means is None:
            best = np.maximum.reduceat(matrix @ query, starts)
            keep = np.nonzero(best >= min_cosine)[0]
            return {docs[i]: float(best[i]) for i in keep.tolist()}
        top = np.argpartition(-(means @ query), COARSE_TOP)[:COARSE_TOP]
        counts = self._counts[top]
        ends = np.cumsum(counts)
        begins = ends - counts  # where each memory's passages start among the rows taken
        # every passage row of the top memories, in one vectorised step (a Python loop of
        # COARSE_TOP aranges cost 30-40 ms of a warm hook's 100)
        rows = np.arange(ends[-1]) + np.repeat(starts[top] - begins, counts)
        sims = matrix[rows].astype(np.float32) @ query
        best = np.maximum.reduceat(sims, begins)
        return {docs[i]: float(b) for i, b in zip(top.tolist(), best.tolist())
                if b >= min_cosine}

    def vectors_of(self, paths: list[str]):
        """The passage vectors of the memories at ``paths`` (those indexed)."""
        return {p: self._vecs[self._docs[p]] for p in paths
                if p in self._docs and self._docs[p] in self._vecs}
