"""The semantic index of each store a long-lived process serves, kept up to date in the
background; and the one answer to "may this query use meaning now?".

The background process of `dmm/background/daemon.py` calls ``enable()`` once (and so do `dmm
mcp` and `dmm serve` when semantic.background is off; with it on, ``serve`` makes them ask
that process instead: one model per repository); in any other process ``for_query`` answers
"no" at once and never loads the model, so a short command pays nothing for it. A store whose
index is being built is answered by words alone, with a note the pack carries ("ranked by
words: the semantic index is being built (N of M memories embedded)"); a few changed memories
are embedded before the answer (well under a second each). No request waits for the index longer
than its own budget: WAIT_S (DMM_SEMANTIC_WAIT_S), less when the caller asks for less (a hook).
"""

from __future__ import annotations

import contextvars
import os
import sqlite3
import threading
import time
from pathlib import Path

from dmm.priority import waiting
from dmm.semantic import model
from dmm.semantic.index import SemanticIndex

# A build this small is waited for (a changed memory, a new small store), within the
# request's budget; a larger one is answered by words meanwhile.
WAIT_FOR_MEMORIES = 150
# The longest any request waits for the index (a first query once waited 20 s, silently, for
# the model to load): a person or an agent gets words now rather than meaning later.
WAIT_S = 1.0
WAIT_ENV = "DMM_SEMANTIC_WAIT_S"  # seconds instead (a slow machine; tests that need meaning)
# What this request asks for, if less (a hook waits a quarter of its deadline).
WAIT: contextvars.ContextVar[float | None] = contextvars.ContextVar("wait", default=None)
# This request is ranked by words alone: its client has the model off (DMM_SEMANTIC=off,
# semantic.enabled = false) and asks the background process for its resident postings only.
WORDS: contextvars.ContextVar[bool] = contextvars.ContextVar("words", default=False)
BY_WORDS = "ranked by words: "

_enabled = False
_delegated = False  # queries go to the repository's background process (``serve``)
_lock = threading.Lock()
# keyed by _key(ws)
_indexes: dict[tuple, SemanticIndex] = {}
_threads: dict[tuple, threading.Thread] = {}
_failed: dict[tuple, str] = {}


def enable() -> None:
    """This process lives long enough to hold a model, and to watch the memory folder
    instead of walking it on every request (dmm/index/watch.py)."""
    global _enabled
    from dmm.index import watch  # light: numpy (query/resident.py) waits for a first query

    watch.enable()
    _enabled = True


def enabled() -> bool:
    return _enabled


def delegated() -> bool:
    """Whether this process asks the repository's background process for its packs."""
    return _delegated


def _wake(ws, delay: float, warm: bool = False) -> None:
    """Start the background process after ``delay`` seconds, so that it loads the model and
    builds the index before the first query (its answer is not needed); then, with ``warm``,
    bring this process's cache up to date. Not before: in `dmm mcp` a first build of its own
    at start (2,000 files) competed with the MCP SDK's import for this process, and the first
    tool call, which waits for the SDK, came 1.1 s later at load 9 (the first-minute
    benchmark); the background process builds its own work tree's cache meanwhile, and this
    one then only finds it fresh (another work tree's it builds)."""
    from dmm.background import client

    time.sleep(delay)
    try:
        client.via_background(ws, {"op": "hello"})
    finally:
        if warm:
            from dmm.index.refresh import warm_in_background

            warm_in_background(ws)


def _key(ws) -> tuple[Path, Path | None]:
    """(this work tree's state folder, the folder of the vector cache or None for one in
    memory): an index per work tree (each has its own memories), vectors shared by the clone."""
    from dmm import state

    return ws.state_dir, state.shared_folder(ws)


def resident_limit(ws) -> int:
    """How many work trees' indexes and postings this process keeps in memory at once."""
    return int(ws.config["semantic"]["resident_worktrees"])


def _index(key: tuple[Path, Path | None], limit: int) -> SemanticIndex:
    """The index of ``key``, now the most recently used; past ``limit`` work trees, the least
    recently used one not being built is dropped (dmm/lru.py)."""
    from dmm.lru import recent

    def building(old) -> bool:
        thread = _threads.get(old)
        return thread is not None and thread.is_alive()

    with _lock:
        index = recent(_indexes, key, lambda: SemanticIndex(key[1], threads=1),  # one core
                       limit, in_use=building)
        for gone in [k for k in _threads if k not in _indexes]:
            if not _threads[gone].is_alive():
                del _threads[gone]
                _failed.pop(gone, None)
        return index


def start_sync(ws) -> threading.Thread | None:
    """Bring the index of ``ws`` up to date in a background thread (one at a time)."""
    key = _key(ws)
    with _lock:
        running = _threads.get(key)
        if running and running.is_alive():
            return running
        thread = threading.Thread(target=_sync, args=(ws, key), daemon=True,
                                  name="dmm-semantic-sync")
        index = _indexes.get(key)
        if index is not None and not index.ready:
            index.pending = None  # not known until the thread has looked
        _threads[key] = thread
        thread.start()
        return thread


def _sync(ws, key: tuple) -> None:
    from dmm.index.refresh import open_fresh

    try:
        conn, _ = open_fresh(ws)
        try:
            index = _index(key, resident_limit(ws))
            first = not index.ready
            index.sync(conn)
        finally:
            conn.close()
        _failed.pop(key, None)
        if first:
            _first_question(index)
    except model.ModelUnavailable as exc:
        _failed[key] = str(exc)
    except Exception as exc:  # noqa: BLE001 - said in the next answer's note, never a crash
        _failed[key] = f"the semantic index could not be built ({type(exc).__name__}: {exc})"


def _first_question(index: SemanticIndex) -> None:
    """One question before the first real one: the model's first run and the first touch of
    the vectors' pages cost a hook 100-200 ms more, once."""
    try:
        index.similarity("warm-up")
    except Exception:  # noqa: BLE001 - the first real question pays instead
        pass


def wait_s() -> float:
    """How long this request may wait for the index: WAIT_S (or DMM_SEMANTIC_WAIT_S), or
    what the request asked for if less."""
    try:
        limit = max(0.0, float(os.environ.get(WAIT_ENV) or WAIT_S))
    except ValueError:
        limit = WAIT_S
    asked = WAIT.get()
    return limit if asked is None else min(limit, max(0.0, asked))


def building(index: SemanticIndex) -> str:
    """The note of a pack ranked by words while ``index`` is being built."""
    done, total = index.progress()
    if total is None:
        return BY_WORDS + "the semantic index is being built (the model is loading)"
    return (BY_WORDS + f"the semantic index is being built ({done:,} of {total:,} memories "
            "embedded)")


def _large(conn: sqlite3.Connection) -> bool:
    """More memories than a build that is waited for (the first build embeds them all)."""
    return conn.execute("SELECT count(*) FROM memories").fetchone()[0] > WAIT_FOR_MEMORIES


def for_query(ws, conn: sqlite3.Connection) -> tuple[SemanticIndex | None, str | None]:
    """The index to rank with now, or None and the note that says why not (None when the
    person turned the layer off: nothing worth saying in every pack)."""
    if not _enabled or WORDS.get() or not ws.config["semantic"]["enabled"] or \
            model.switched_off():
        return None, None
    why = model.unavailable()
    if why:
        return None, BY_WORDS + why
    key = _key(ws)
    index = _index(key, resident_limit(ws))
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    if index.ready and index.generation == (row[0] if row else ""):
        return index, None
    generation = row[0] if row else ""
    deadline = time.monotonic() + wait_s()
    for _attempt in range(2):
        thread = start_sync(ws)
        with waiting():  # the build goes on rather than step aside for this request
            while thread is not None and thread.is_alive() and time.monotonic() < deadline:
                pending = index.pending
                if pending is not None and pending > WAIT_FOR_MEMORIES:
                    break  # a long build: answer by words now, with a note
                if pending is None and not model.loaded() and _large(conn):
                    break  # the model is loading for a store it will take long to embed
                thread.join(0.05)
        if key in _failed:
            return None, BY_WORDS + _failed[key]
        if thread is not None and thread.is_alive():
            return None, building(index)
        # another process may have refreshed the cache while the build ran: once more,
        # cheaply (what was embedded is kept); the index is keyed by path, so a state a
        # little newer than this query's is as good
        if index.generation == generation or time.monotonic() >= deadline:
            break
    return (index, None) if index.ready else (None, BY_WORDS + "the semantic index is not "
                                              "ready")


def serve(ws, delay: float = 0.0) -> None:
    """Called by a long-lived process at start (`dmm mcp`, `dmm serve`): rank by meaning from
    now on. With the repository's background process (semantic.background, the default) its
    queries are asked of that process, which holds the model once for every client (and, with
    the model off, a large store's postings), and it is started after ``delay`` seconds;
    otherwise this process builds the store's index
    itself, in a background thread, after ``delay`` seconds (answering by words meanwhile)."""
    global _delegated
    from dmm.index.refresh import warm_in_background
    from dmm.background import client

    cfg = ws.config["semantic"]
    # with the model off too, for a large store: the process keeps the words' postings in
    # memory once for every client (background/client.lexical_worth_it)
    if cfg["background"] and ((cfg["enabled"] and model.unavailable() is None)
                              or client.large(ws)):
        from dmm.index import watch

        watch.enable()  # it still serves its other tools from its own cache, without walks
        # the client's first call comes seconds later: the cache is brought up to date
        # meanwhile (a query during a first build answers from the baseline: query/run.py),
        # once the background process is up (_wake), which warms its own work tree's
        _delegated = True
        thread = threading.Thread(target=_wake, args=(ws, delay, True), daemon=True,
                                  name="dmm-wake")
        thread.start()
        return
    enable()
    warm_in_background(ws)
    if cfg["enabled"] and model.unavailable() is None:
        if delay:
            timer = threading.Timer(delay, start_sync, args=(ws,))
            timer.daemon = True
            timer.start()
        else:
            start_sync(ws)


def build_now(ws, conn: sqlite3.Connection, progress=None) -> tuple[int | None, str | None]:
    """Bring the semantic index of ``ws`` up to date in this process (`dmm reindex`):
    (memories embedded, None), or (None, why not). Vectors no memory uses any more are
    dropped from the cache, unless the clone has linked work trees (which share it and may
    hold other memories)."""
    if not ws.config["semantic"]["enabled"] or model.switched_off():
        return None, None
    why = model.unavailable()
    if why:
        return None, why
    index = SemanticIndex(_key(ws)[1], threads=1,
                          workers=os.cpu_count() or 1)  # the person waits: every core
    try:
        embedded = index.sync(conn, progress)
    except model.ModelUnavailable as exc:
        return None, str(exc)
    folder = _key(ws)[1]
    if folder is None or not (folder.parent / "worktrees").is_dir():
        index.prune()  # with linked work trees the vectors are theirs too: kept
    return embedded, None
