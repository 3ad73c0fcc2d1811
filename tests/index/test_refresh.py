"""The cache: freshness, incremental refresh, rebuild, corruption and concurrency."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sqlite3
import time

from dmm.index import db, read
from dmm.index.refresh import open_fresh, rebuild
from tests.conftest import memory_text


def age(path, seconds: float = 10) -> None:
    """Make a file look older than the racy-mtime window."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))


def test_first_use_builds_then_nothing_is_read_again(repo):
    paths = [repo.add(f"project/m{i}.md", f"mem_2026_01_01_00{i}", f"Memory {i}")
             for i in range(3)]
    for p in paths:
        age(p)
    conn, report = open_fresh(repo.ws)
    assert report.read == 3 and read.counts(conn)["total"] == 3
    conn.close()
    conn, report = open_fresh(repo.ws)
    assert report.was_fresh
    conn.close()


def test_only_the_changed_file_is_read(repo):
    paths = [repo.add(f"project/m{i}.md", f"mem_2026_01_01_00{i}", f"Memory {i}")
             for i in range(5)]
    for p in paths:
        age(p)
    open_fresh(repo.ws)[0].close()
    paths[2].write_text(memory_text("mem_2026_01_01_002", "Memory two, renamed"),
                        encoding="utf-8")
    age(paths[2], 5)
    conn, report = open_fresh(repo.ws)
    assert report.read == 1
    assert read.find(conn, "mem_2026_01_01_002")[0].title == "Memory two, renamed"
    conn.close()


def test_removed_and_added_files(repo):
    a = repo.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    age(a)
    open_fresh(repo.ws)[0].close()
    a.unlink()
    b = repo.add("global/b.md", "mem_2026_01_01_002", "Beta", scope="global")
    age(b)
    conn, report = open_fresh(repo.ws)
    assert (report.read, report.removed) == (1, 1)
    assert [m.id for m in read.memories(conn)] == ["mem_2026_01_01_002"]
    conn.close()


def test_a_file_rewritten_within_the_same_second_is_still_seen(repo):
    # Same size, same mtime tick: a naive (size, mtime) cache would miss the second write.
    p = repo.add("project/a.md", "mem_2026_01_01_001", "Version A")
    open_fresh(repo.ws)[0].close()
    st = p.stat()
    p.write_text(memory_text("mem_2026_01_01_001", "Version B"), encoding="utf-8")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    conn, _ = open_fresh(repo.ws)
    assert read.find(conn, "mem_2026_01_01_001")[0].title == "Version B"
    conn.close()


def test_deleting_the_index_loses_nothing(repo):
    repo.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    open_fresh(repo.ws)[0].close()
    shutil.rmtree(repo.ws.state_dir)
    conn, report = open_fresh(repo.ws)
    assert read.counts(conn)["total"] == 1
    assert (repo.ws.state_dir / db.DB_NAME).is_file()
    conn.close()


def test_a_corrupt_cache_is_rebuilt(repo):
    repo.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    open_fresh(repo.ws)[0].close()
    cache = repo.ws.state_dir / db.DB_NAME
    cache.write_bytes(b"this is not a database" * 100)
    conn, _ = open_fresh(repo.ws)
    assert read.counts(conn)["total"] == 1
    conn.close()


def test_a_truncated_cache_is_rebuilt(repo):
    for i in range(30):
        repo.add(f"project/m{i}.md", f"mem_2026_01_01_{i:03d}", f"Memory {i}", "word " * 200)
    open_fresh(repo.ws)[0].close()
    cache = repo.ws.state_dir / db.DB_NAME
    data = cache.read_bytes()
    cache.write_bytes(data[: len(data) // 3])
    conn, _ = open_fresh(repo.ws)
    assert read.counts(conn)["total"] == 30
    conn.close()


def test_an_old_schema_is_rebuilt(repo):
    repo.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    open_fresh(repo.ws)[0].close()
    conn = sqlite3.connect(repo.ws.state_dir / db.DB_NAME)
    conn.execute("PRAGMA user_version = 0")
    conn.close()
    conn, report = open_fresh(repo.ws)
    assert report.read == 1 and read.counts(conn)["total"] == 1
    conn.close()


def test_rebuild_gives_the_same_memories(repo):
    for i in range(4):
        repo.add(f"project/m{i}.md", f"mem_2026_01_01_00{i}", f"Memory {i}")
    conn, _ = open_fresh(repo.ws)
    before = [(m.id, m.tokens) for m in read.memories(conn)]
    conn.close()
    conn, report = rebuild(repo.ws)
    assert report.rebuilt and [(m.id, m.tokens) for m in read.memories(conn)] == before
    conn.close()


def test_bad_files_are_recorded_as_problems_and_skipped(repo):
    repo.add("project/good.md", "mem_2026_01_01_001", "Good")
    repo.write("project/binary.md", b"\x00\x01\x02binary")
    repo.write("project/latin1.md", "caf\xe9".encode("latin-1"))
    repo.write("project/broken.md", "---\nid: [unclosed\n---\n# T\n")
    repo.write("project/notes.txt", "not markdown")
    repo.write("project/huge.md", "---\n" + "x" * 300_000)
    outside = repo.root / "secret.md"
    outside.write_text(memory_text("mem_2026_01_01_009", "Outside"), encoding="utf-8")
    (repo.memory / "project" / "link.md").symlink_to(outside)
    conn, _ = open_fresh(repo.ws)
    assert [m.path for m in read.memories(conn)] == ["project/good.md"]
    messages = {p.path: p.message for p in read.problems(conn)}
    assert "binary" in messages["project/binary.md"]
    assert "UTF-8" in messages["project/latin1.md"]
    assert "malformed YAML" in messages["project/broken.md"]
    assert "not a memory file" in messages["project/notes.txt"]
    assert "limit" in messages["project/huge.md"]
    assert "symbolic link" in messages["project/link.md"]
    conn.close()


def _query_worker(root: str, rounds: int, queue) -> None:
    from dmm.index.refresh import open_fresh as of
    from dmm.workspace import Workspace

    try:
        for _ in range(rounds):
            conn, _ = of(Workspace(__import__("pathlib").Path(root)))
            conn.execute("SELECT count(*) FROM memories").fetchone()
            conn.close()
        queue.put("ok")
    except Exception as exc:  # reported to the parent, which fails the test
        queue.put(f"{type(exc).__name__}: {exc}")


def test_concurrent_processes_never_corrupt_the_cache(repo):
    for i in range(40):
        repo.add(f"project/m{i}.md", f"mem_2026_01_01_{i:03d}", f"Memory {i}", "text " * 100)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_query_worker, args=(str(repo.root), 15, queue))
             for _ in range(4)]
    for p in procs:
        p.start()
    # Keep changing files while the workers refresh and read.
    for i in range(15):
        repo.add(f"project/m{i}.md", f"mem_2026_01_01_{i:03d}", f"Memory {i} v2", "new " * 90)
        time.sleep(0.02)
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == ["ok"] * 4
    conn, _ = open_fresh(repo.ws)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert read.counts(conn)["total"] == 40
    assert read.find(conn, "mem_2026_01_01_003")[0].title == "Memory 3 v2"
    conn.close()


def test_the_cache_of_a_small_store_is_small_and_still_expands_queries(repo):
    """The word-neighbour lexicon ships read-only in the package; no cache carries a copy."""
    repo.add("project/pricing.md", "mem_2026_01_01_001", "Prices are shown with VAT",
             "Every price on the shop is shown including VAT, rounded to the cent.")
    proc = repo.dmm("query", "what does a product cost", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [m["memory_id"] for m in json.loads(proc.stdout)["retrieved"]] == ["mem_2026_01_01_001"]
    cache = repo.ws.state_dir / db.DB_NAME
    assert cache.stat().st_size < 256 * 1024


def test_a_cache_rebuilt_by_another_process_is_reopened_not_rebuilt_again(repo, monkeypatch):
    """Between opening the cache and refreshing it, another dmm process may rebuild it: the
    old file is gone and SQLite refuses writes to it. Open the new one; rebuilding it once
    more would pull it from under every other process that already uses it."""
    repo.add("project/a.md", "mem_2026_01_01_001", "Memory A")
    open_fresh(repo.ws)[0].close()
    stale = db.connect(repo.ws.state_dir)
    with db.write_lock(repo.ws.state_dir):
        db.create(repo.ws.state_dir / db.DB_NAME)  # the other process's rebuild
    rebuilt_inode = (repo.ws.state_dir / db.DB_NAME).stat().st_ino
    connects = iter([stale])
    real_connect = db.connect
    monkeypatch.setattr(db, "connect", lambda d: next(connects, None) or real_connect(d))
    creates = []
    real_create = db.create
    monkeypatch.setattr(db, "create", lambda p: creates.append(p) or real_create(p))
    repo.add("project/b.md", "mem_2026_01_01_002", "Memory B")
    conn, report = open_fresh(repo.ws)
    assert read.counts(conn)["total"] == 2 and report.read == 2
    conn.close()
    assert creates == [] and (repo.ws.state_dir / db.DB_NAME).stat().st_ino == rebuilt_inode


def test_a_refresh_landing_between_two_reads_of_a_similarity_search_breaks_nothing(repo):
    """Found under load: a concurrent approval's refresh renumbered a memory between the
    statement that found it and the one that looked it up (KeyError). The reads of one search
    are one snapshot now: the other process's write waits, the search sees one state."""
    from dmm.index.similar import similar_memories
    from dmm.memory.parse import parse_memory

    for i in range(3):
        age(repo.add(f"project/m{i}.md", f"mem_2026_01_01_00{i}", f"Cache refresh number {i}",
                     body=f"The cache refresh writes postings for memory {i}."))
    conn, _ = open_fresh(repo.ws)
    other = sqlite3.connect(repo.ws.state_dir / db.DB_NAME, timeout=0, isolation_level=None)
    refused = []

    def meanwhile(sql: str) -> None:
        if "SELECT doc, path, id, title FROM memories" in sql and not refused:
            try:  # another process forgets every memory in between
                other.execute("DELETE FROM memories")
                refused.append(False)
            except sqlite3.OperationalError as exc:  # it must wait for this snapshot
                refused.append("locked" in str(exc))

    draft, _ = parse_memory(memory_text("mem_2026_01_02_001", "Cache refresh numbers",
                                        body="The cache refresh writes postings."),
                            "project/new.md")
    conn.set_trace_callback(meanwhile)
    found = similar_memories(conn, draft, limit=5)
    conn.set_trace_callback(None)
    assert refused == [True]
    assert len(found) == 3
    other.close()
    conn.close()


def test_a_file_read_past_the_racy_window_of_its_mtime_is_not_read_again(repo, monkeypatch):
    """Whether a file is racy is judged when its content is read, not when the refresh began:
    a first build of thousands of files takes seconds, and files written just before it
    (a clone, a checkout) were all read again by the next refresh (issue 36: 6 s)."""
    from dmm import store
    from dmm.index import refresh

    for i in range(3):
        repo.add(f"project/m{i}.md", f"mem_2026_01_01_00{i}", f"Memory {i}")  # mtime: now
    real = time.time_ns
    began = real()
    calls = iter(range(10_000))
    # the clock as a long build sees it: each read lands a window later than the one before
    monkeypatch.setattr(refresh.time, "time_ns",
                        lambda: began + next(calls) * (store.RACY_NS + 1))
    conn, report = open_fresh(repo.ws)
    conn.close()
    monkeypatch.setattr(refresh.time, "time_ns", real)
    assert report.read == 3
    conn, report = open_fresh(repo.ws)
    conn.close()
    # the first file was read within its window (it may yet change in the same tick): read
    # again; the other two were read a window after their mtime: trusted
    assert report.read == 1, report
