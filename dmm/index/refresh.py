"""Keep the cache fresh: re-read only the memory files whose size or mtime changed.

Every command that reads memories calls ``open_fresh``. An unchanged store costs one directory
walk and one SELECT, or one question to the repository's background process where one runs
(``_vouched``: it watches the folder; a large store starts one for the next command); changes
are applied in one transaction under the cache's write lock, so a concurrent dmm process
either sees the old state or the new one, never a mixture. The corpus
statistics (each term's document frequency, table ``terms``) change in the same transaction.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import sqlite3
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterator

from dmm import store
from dmm.index import db, watch
from dmm.memory import Memory, Problem
from dmm.workspace import Workspace

# How much a term counts by where it appears: a word in the title says more than one in the body.
FIELD_WEIGHTS = {"title": 3.0, "tags": 2.0, "path": 1.0, "body": 1.0}
# BM25 parameters. Length is normalised against a fixed pivot (the weighted length of a typical
# 300-800 token memory) instead of the store's average, so a memory's postings depend on that
# memory alone: an incremental refresh and a full rebuild give identical scores.
K1 = 1.2
B = 0.75
PIVOT_LENGTH = 250.0

Progress = Callable[[int, int], None]


@dataclass
class RefreshReport:
    files: int  # files under .dmm/memory/
    read: int  # files (re)read this time
    removed: int
    rebuilt: bool = False

    @property
    def was_fresh(self) -> bool:
        return self.read == 0 and self.removed == 0 and not self.rebuilt


def open_fresh(ws: Workspace, progress: Progress | None = None,
               paths: list[str] | None = None) -> tuple[sqlite3.Connection, RefreshReport]:
    """Connect to the cache and bring it up to date with the working tree. ``paths`` (relative
    to .dmm/memory/): only these files can have changed (a git hook knows which files the
    command changed): they alone are looked at, not the whole store."""
    ws.check_layout()  # again: a long-lived server's store may have been swapped for a link
    for attempt in range(2):
        conn = db.connect(ws.state_dir)
        try:
            if paths is not None:
                return conn, refresh_paths(conn, ws, paths)
            return conn, refresh(conn, ws, progress)
        except sqlite3.DatabaseError as exc:
            conn.close()
            if attempt or not db.usable(ws.state_dir) or db.busy(exc):
                raise
            if db.replaced(exc):
                continue  # another process rebuilt the cache meanwhile: open the new one
            # a cache damaged under our feet (a killed writer, a bad disk): build it again
            with db.write_lock(ws.state_dir):
                db.create(ws.state_dir / db.DB_NAME)
    raise AssertionError("unreachable")


def warm_in_background(ws: Workspace) -> threading.Thread:
    """Bring the cache of ``ws`` up to date in a daemon thread, at once: a long-lived server
    (`dmm mcp`, `dmm serve`) calls it as it starts, since its client's first call comes
    seconds later and the first refresh of a new clone reads every memory file (seconds for
    thousands). A failure is left for that first call to meet and report."""
    def run() -> None:
        try:
            open_fresh(ws)[0].close()
        except Exception:  # noqa: BLE001 - the next call says what is wrong, in its answer
            pass

    thread = threading.Thread(target=run, daemon=True, name="dmm-warm-cache")
    thread.start()
    return thread


def baseline_only(ws: Workspace) -> sqlite3.Connection:
    """A cache in memory holding the baseline memories alone, read from their files (at most
    MAX_BASELINE_FILES): what a query answers from, at once, while another dmm builds the
    cache for the first time (a new clone: seconds for thousands of memories)."""
    max_bytes = int(ws.config["store"]["max_file_bytes"])
    conn = db.in_memory()
    conn.execute("BEGIN")
    for rel in sorted(store.scan(ws.memory_dir / "baseline"))[:MAX_BASELINE_FILES]:
        memory, _ = store.read(ws.memory_dir, "baseline/" + rel, max_bytes)
        if memory is not None and memory.scope == "baseline":
            _insert_memory(conn, memory)
    conn.execute("COMMIT")
    return conn


MAX_BASELINE_FILES = 200  # read by baseline_only: its cost stays bounded whatever the store


def rebuild(ws: Workspace, progress: Progress | None = None,
            ) -> tuple[sqlite3.Connection, RefreshReport]:
    """Throw the cache away and build it again from the working tree (`dmm reindex`),
    keeping the conflict scans' state (what the memory files cannot give back)."""
    kept = None
    if db.usable(ws.state_dir):  # else every connection is a new in-memory cache anyway
        kept = _scan_state(ws)
        with db.write_lock(ws.state_dir):
            db.create(ws.state_dir / db.DB_NAME)
    conn, report = open_fresh(ws, progress)
    if kept:
        restore_scan_state(conn, kept)
    report.rebuilt = True
    return conn, report


# what `dmm reindex` carries over into the new cache: the scans' results and memory, which
# the memory files alone cannot give back (a full scan takes seconds, and which conflicts
# were already reported would be forgotten)
# (the verdicts were paid for)
KEPT_TABLES = ("conflicts", "conflict_scans", "verdicts", "scanned", "seen_conflicts")
KEPT_META = ("scanned_with",)


def scan_state(conn: sqlite3.Connection) -> dict:
    """The conflict detection's state in a cache, to carry into a rebuilt one."""
    marks = ",".join("?" * len(KEPT_META))
    return {"tables": {t: conn.execute(f"SELECT * FROM {t}").fetchall() for t in KEPT_TABLES},
            "meta": conn.execute(f"SELECT key, value FROM meta WHERE key IN ({marks})",
                                 KEPT_META).fetchall()}


def restore_scan_state(conn: sqlite3.Connection, state: dict) -> None:
    """Put ``scan_state`` back (the memories' digests then say what changed since)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table, rows in state["tables"].items():
            if rows:
                marks = ",".join("?" * len(rows[0]))
                conn.executemany(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", rows)
        conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                         state["meta"])
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _scan_state(ws: Workspace) -> dict | None:
    """The old cache's scan state, or None when there is none or it cannot be read (a
    damaged cache is rebuilt without it: the next scan is a full one)."""
    if not (ws.state_dir / db.DB_NAME).exists():
        return None
    try:
        conn = db.connect(ws.state_dir)
        try:
            return scan_state(conn)
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None


def refresh(conn: sqlite3.Connection, ws: Workspace, progress: Progress | None = None,
            ) -> RefreshReport:
    # settings that change what a file reads as are part of the freshness key
    max_bytes = int(ws.config["store"]["max_file_bytes"])
    settings = f"max_file_bytes={max_bytes}"
    watching = watch.for_dir(ws.memory_dir)  # None but in a long-lived process
    if watching is None:
        vouched = _vouched(ws)
        if vouched is not None and vouched[0] == _token(conn) and \
                _indexed_with(conn) == settings:
            return RefreshReport(files=vouched[1], read=0, removed=0)
        return _refresh(conn, ws, store.scan(ws.memory_dir), settings, progress)
    with _held(watching.lock):
        disk = watching.disk()  # no walk when no file changed since the last check
        if watching.fresh(disk, _token(conn)):
            return RefreshReport(files=len(disk), read=0, removed=0)
        report = _refresh(conn, ws, disk, settings, progress)
        watching.seen(disk, _token(conn))
        return report


@contextlib.contextmanager
def _held(lock: threading.Lock) -> Iterator[None]:
    """``lock`` (a long-lived process's watch), or, for the impatient, BusyError when another
    thread holds it: a first build holds it for seconds, and a query waiting there, in the
    background process, waited for every memory file to be read (issue 36: the baseline read
    from its files is the answer then, query/run.open_cache)."""
    from dmm.errors import BusyError
    from dmm.priority import waiting

    if not lock.acquire(blocking=False):
        with waiting():  # the thread holding it may be one that steps aside for requests
            if not lock.acquire(timeout=db.busy_timeout() if db.is_impatient() else -1):
                raise BusyError("another dmm thread is updating the cache",
                                hint="try again in a moment")
    try:
        yield
    finally:
        lock.release()


def refresh_paths(conn: sqlite3.Connection, ws: Workspace, paths: list[str]) -> RefreshReport:
    """``refresh`` when only ``paths`` can have changed since the last refresh: each is
    looked at (one lstat), every other file is taken as the cache last saw it. A cache never
    filled, other settings, or a path the walk would name otherwise (hidden, not ASCII, a
    folder) get the whole refresh."""
    import stat

    known = _known_files(conn)
    settings = f"max_file_bytes={int(ws.config['store']['max_file_bytes'])}"
    if not known or _indexed_with(conn) != settings:
        return refresh(conn, ws)
    disk = dict(known)
    for rel in paths:
        if not rel.isascii() or any(p.startswith(".") or not p for p in rel.split("/")):
            return refresh(conn, ws)
        try:
            st = os.lstat(ws.memory_dir / rel)
        except FileNotFoundError:
            disk.pop(rel, None)
            continue
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            return refresh(conn, ws)
        disk[rel] = (st.st_size, st.st_mtime_ns) if st is not None else (-1, -1)
    return _refresh(conn, ws, disk, settings, None)


# how long a command waits for the background process to vouch for the cache before it walks
VOUCH_WAIT_S = 2.0


def _vouched(ws: Workspace) -> tuple[tuple, int] | None:
    """(cache token, files) from the repository's background process, which has just made the
    cache fresh (by its watch, without a walk when nothing changed), when one is running: the
    pattern of git's fsmonitor daemon. None when there is none (the caller walks). It answers
    after this call started, so it saw every change that finished before: a cache still at
    the state it names is fresh. Asked whatever the semantic layer's setting: the process
    watches the folder with the model off too (it serves words for large stores), and
    vouching needs no model. A large store with none running starts one for the next
    command (``_start_for_next``)."""
    from dmm.background.client import SOCKET

    if not os.path.exists(ws.shared_state_dir / SOCKET):
        _start_for_next(ws)
        return None  # the common case costs a stat or two
    from dmm.background import client

    try:
        answer = client.ask(ws.root, ws.shared_state_dir, {"op": "fresh"},
                            start_if_absent=False,
                            start_wait=0.2, answer_wait=VOUCH_WAIT_S)
    except client.NotRunning:  # one that died left its socket: start another, as without
        _start_for_next(ws)
        return None
    except client.Unavailable:
        return None
    try:
        if answer.get("ok"):
            return tuple(tuple(pair) for pair in answer["token"]), int(answer["files"])
    except (KeyError, TypeError, ValueError):
        pass
    return None


def _start_for_next(ws: Workspace) -> None:
    """Start the repository's background process, not waited for, when the store is large
    (its cache LEXICAL_CACHE_BYTES or more: some 3,000 memories, where the walk starts to
    cost a short command a good part of its time; 0.3-0.5 s of CPU at 50,000) and
    ``semantic.background`` allows one: this command walks, the next ones are vouched for
    (as the post-commit hook starts it for the next prompt). A small store never starts one:
    its walk costs less than asking."""
    from dmm.background import client

    try:
        if ws.config["semantic"]["background"] and client.large(ws):
            from dmm.fsutil import state_folder

            client.start(ws.root, state_folder(ws.shared_state_dir))
    except OSError:
        pass  # no process: this command and the next walk, as they always could


def _token(conn: sqlite3.Connection) -> tuple:
    """What changes whenever any process changes what the cache holds (a refresh that read or
    removed a file, a rebuild, other settings)."""
    return tuple(sorted(conn.execute(
        "SELECT key, value FROM meta WHERE key IN ('generation', 'indexed_with')")))


def _refresh(conn: sqlite3.Connection, ws: Workspace, disk: dict[str, store.FileStat],
             settings: str, progress: Progress | None) -> RefreshReport:
    max_bytes = int(ws.config["store"]["max_file_bytes"])
    if _known_files(conn) == disk and _indexed_with(conn) == settings:
        return RefreshReport(files=len(disk), read=0, removed=0)
    with db.write_lock(ws.state_dir):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have applied the same changes while we waited for the lock.
            known = _known_files(conn)
            same_settings = _indexed_with(conn) == settings
            changed = sorted(p for p, st in disk.items()
                             if known.get(p) != st or not same_settings)
            removed = sorted(p for p in known if p not in disk)
            # the corpus statistics follow each memory, unless most of the store is read
            # again (a first build): then counting them once at the end is cheaper
            recount = len(changed) + len(removed) > max(RECOUNT_MIN, len(disk) // 4)
            for path in removed:
                _forget(conn, path, not recount)
            snapshot = dict(disk)
            for done, path in enumerate(changed, 1):
                _forget(conn, path, not recount)
                memory, problems = store.read(ws.memory_dir, path, max_bytes)
                # racy when changed within RACY_NS of this read (not of the refresh's start:
                # a first build takes seconds, and every file a checkout had just written
                # would be read again by the next refresh)
                if disk[path][1] > time.time_ns() - store.RACY_NS:
                    snapshot[path] = (disk[path][0], -1)
                _insert_problems(conn, problems)
                if memory is not None:
                    _insert_memory(conn, memory, not recount)
                if progress:
                    progress(done, len(changed))
            if recount:
                recount_terms(conn)
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('files', ?)",
                         (marshal.dumps(snapshot),))
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('indexed_with', ?)",
                         (settings,))
            if removed or changed:
                # a cheap token that says "memories may have changed" (conflict scans compare it)
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('generation', ?)",
                             (str(time.time_ns()),))
                _touch(conn, removed + changed)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite has already rolled back after some errors
                conn.execute("ROLLBACK")
            raise
    return RefreshReport(files=len(disk), read=len(changed), removed=len(removed))


def index_terms(memory: Memory) -> tuple[Counter, float]:
    """Field-weighted term frequencies of a memory and its weighted length (for BM25)."""
    from dmm.text.analyze import terms  # the stemmer: only when a memory changed

    folders = memory.path.removesuffix(".md").split("/")[1:]
    fields = {
        "title": memory.title,
        "tags": " ".join(memory.tags).replace("-", " ").replace("_", " "),
        "path": " ".join(folders).replace("-", " ").replace("_", " "),
        "body": memory.content,
    }
    tf: Counter = Counter()
    length = 0.0
    for name, text in fields.items():
        weight = FIELD_WEIGHTS[name]
        field_terms = terms(text)
        length += weight * len(field_terms)
        for term in field_terms:
            tf[term] += weight
    return tf, length


# the last file list read: (connection, its state then, the list). A hook's refresh asks for
# it three times (what it knew, whether anything changed, what changed under the lock), and
# at 50,000 memories each read is 3.6 MB to unmarshal. Read again once the cache changed:
# written by this connection (total_changes) or committed by another (PRAGMA data_version).
_LAST_FILES: tuple = (None, None, None)


def _known_files(conn: sqlite3.Connection) -> dict[str, store.FileStat]:
    """The files the cache was built from, as store.scan returns them (one blob: fast); not
    to be modified."""
    global _LAST_FILES
    state = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
    if _LAST_FILES[0] is conn and _LAST_FILES[1] == state:
        return _LAST_FILES[2]
    files = db.meta_blob(conn, "files", dict) or {}
    _LAST_FILES = (conn, state, files)
    return files


def _indexed_with(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'indexed_with'").fetchone()
    return row[0] if row else None


def touched_paths(conn: sqlite3.Connection) -> list[str] | None:
    """The memory files a refresh re-read or removed since the last conflict scan recorded
    what it scanned (conflicts/store.py clears the list); None when not known."""
    return db.meta_blob(conn, "touched", list)


def _touch(conn: sqlite3.Connection, paths: list[str]) -> None:
    """Add ``paths`` to those re-read or removed since the last conflict scan recorded what it
    scanned (conflicts/store.py: only their digests can differ from what it scanned). Kept
    only once a scan started the list: before, every digest is compared anyway."""
    known = touched_paths(conn)
    if known is None:
        return
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('touched', ?)",
                 (marshal.dumps(sorted(set(known).union(paths))),))


RECOUNT_MIN = 500  # memories (re)read at once from which the statistics are counted anew
ACTIVE = "m.status = 'active' AND m.confidence != 'deprecated'"  # Memory.is_active, in SQL


def recount_terms(conn: sqlite3.Connection) -> None:
    """Count the corpus statistics (table ``terms``) anew from every posting."""
    conn.execute("DELETE FROM terms")
    conn.execute(f"INSERT INTO terms(term, df, active) SELECT p.term, count(*), "
                 f"sum({ACTIVE}) FROM postings p JOIN memories m ON m.doc = p.doc "
                 f"GROUP BY p.term")


def _forget(conn: sqlite3.Connection, path: str, stats: bool = True) -> None:
    row = conn.execute("SELECT doc FROM memories WHERE path = ?", (path,)).fetchone()
    if row:
        if stats:
            conn.execute(f"UPDATE terms SET df = df - 1, active = active - (SELECT {ACTIVE} "
                         f"FROM memories m WHERE m.doc = ?) WHERE term IN "
                         f"(SELECT term FROM postings WHERE doc = ?)", (row[0], row[0]))
            conn.execute("DELETE FROM terms WHERE df <= 0 AND term IN "
                         "(SELECT term FROM postings WHERE doc = ?)", (row[0],))
        conn.execute("DELETE FROM moves WHERE doc = ?", (row[0],))
        conn.execute("DELETE FROM postings WHERE doc = ?", (row[0],))
        conn.execute("DELETE FROM memories WHERE doc = ?", (row[0],))
        conn.execute("DELETE FROM bodies WHERE doc = ?", (row[0],))
    conn.execute("DELETE FROM problems WHERE path = ?", (path,))


def _insert_problems(conn: sqlite3.Connection, problems: list[Problem]) -> None:
    conn.executemany("INSERT INTO problems(path, field, severity, message) VALUES (?, ?, ?, ?)",
                     [(p.path, p.field, p.severity, p.message) for p in problems])


def posting_weights(memory: Memory) -> tuple[dict[str, float], float]:
    """BM25 term weights (without idf) of a memory, as stored in postings, and its length."""
    tf, length = index_terms(memory)
    norm = K1 * (1 - B + B * length / PIVOT_LENGTH)
    return {term: f * (K1 + 1) / (f + norm) for term, f in tf.items()}, length


def _insert_memory(conn: sqlite3.Connection, m: Memory, stats: bool = True) -> None:
    weights, length = posting_weights(m)
    cur = conn.execute(
        "INSERT INTO memories(path, id, title, tags, scope, priority, confidence, status,"
        " created, expires, supersedes, related, tokens, digest, length)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (m.path, m.id, m.title, json.dumps(m.tags), m.scope, m.priority, m.confidence,
         m.status, m.created.isoformat() if m.created else None,
         m.expires.isoformat() if m.expires else None, json.dumps(m.supersedes),
         json.dumps(m.related), m.tokens, digest(m), length))
    doc = cur.lastrowid
    conn.execute("INSERT INTO bodies(doc, body) VALUES (?, ?)", (doc, m.body))
    conn.executemany("INSERT INTO postings(term, doc, weight) VALUES (?, ?, ?)",
                     [(term, doc, w) for term, w in weights.items()])
    if stats:
        active = int(m.is_active)
        conn.executemany("INSERT INTO terms(term, df, active) VALUES (?, 1, ?) "
                         "ON CONFLICT(term) DO UPDATE SET df = df + 1, "
                         "active = active + excluded.active", [(t, active) for t in weights])
    # the same test the scanner made over every body, made once per memory
    conn.execute("INSERT INTO moves(doc) SELECT ? WHERE ? LIKE '%from %to %'", (doc, m.body))


def digest(m: Memory) -> str:
    """Fingerprint of everything a conflict analyzer reads from a memory."""
    import hashlib

    fields = (m.id, m.path, m.scope, m.status, m.confidence, str(m.created), str(m.priority),
              " ".join(m.tags), " ".join(m.supersedes), m.body)
    return hashlib.sha1("\x1f".join(fields).encode()).hexdigest()
