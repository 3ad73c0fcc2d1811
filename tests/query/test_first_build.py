"""A query that arrives while another dmm builds the cache for the first time (a new clone, a
long-lived server warming it as it starts) answers at once from the baseline memories read
from their files, and says so, instead of waiting for every memory file to be read (issue 36:
the first `memory_query` of a 2,000-memory clone took 6-12 s)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading

import pytest

from dmm.agents import calls
from dmm.index import db
from dmm.index.refresh import warm_in_background
from dmm.query.run import FIRST_BUILD_NOTE, memory_pack


@pytest.fixture
def fresh(repo):
    repo.add("baseline/style.md", "mem_2026_11_02_001", "Write commit messages that say why",
             scope="baseline")
    repo.add("project/gateway.md", "mem_2026_11_02_002", "Gateway upload size ceiling",
             "The gateway refuses uploads over 25 MB; larger files go through the bucket.")
    assert db.usable(repo.ws.state_dir)  # the state folder, made
    (repo.ws.state_dir / db.DB_NAME).unlink(missing_ok=True)  # never built: a new clone
    assert not db.ever_filled(repo.ws.state_dir)
    return repo


def _within(call, seconds: float = 30):
    """What ``call`` returns, or None if it is still waiting after ``seconds`` (a guard against
    hanging the suite, not a timing: the lock below is held for as long as the call runs)."""
    got: dict = {}
    worker = threading.Thread(target=lambda: got.update(result=call()), daemon=True)
    worker.start()
    worker.join(seconds)
    return got.get("result")


def _pack_within(ws, task: str):
    return _within(lambda: memory_pack(ws, task))


@contextlib.contextmanager
def _another_dmm_building(ws):
    fd = os.open(ws.state_dir / db.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what another dmm building the cache holds
        yield
    finally:
        os.close(fd)


def test_a_query_during_the_first_build_answers_from_the_baseline_files(fresh):
    ws = fresh.ws
    with _another_dmm_building(ws):
        pack = _pack_within(ws, "gateway upload size ceiling")
        assert pack is not None, "the query waited for the other dmm's first build"
        assert [e.memory.id for e in pack.baseline] == ["mem_2026_11_02_001"]
        assert pack.retrieved == []
        assert FIRST_BUILD_NOTE in pack.notes
        assert not db.ever_filled(ws.state_dir)  # nothing of the stand-in was kept
    pack = memory_pack(ws, "gateway upload size ceiling")  # the lock is free: a real pack
    assert [e.memory.id for e in pack.retrieved] == ["mem_2026_11_02_002"]
    assert FIRST_BUILD_NOTE not in pack.notes


def test_a_query_with_no_one_building_builds_the_cache_itself(fresh):
    pack = memory_pack(fresh.ws, "gateway upload size ceiling")
    assert [e.memory.id for e in pack.retrieved] == ["mem_2026_11_02_002"]
    assert FIRST_BUILD_NOTE not in pack.notes
    assert db.ever_filled(fresh.ws.state_dir)


def test_a_long_lived_server_warms_the_cache_as_it_starts(fresh):
    warm_in_background(fresh.ws).join()
    assert db.ever_filled(fresh.ws.state_dir)


def test_memory_show_of_a_baseline_memory_during_the_first_build_answers_from_its_file(fresh):
    with _another_dmm_building(fresh.ws):
        shown = _within(lambda: calls.show(fresh.ws, "mem_2026_11_02_001"))
        assert shown is not None, "memory_show waited for the other dmm's first build"
        assert shown["title"] == "Write commit messages that say why"
    # any other memory: the cache being built knows it, once built
    assert calls.show(fresh.ws, "mem_2026_11_02_002")["path"] == "project/gateway.md"


def test_a_query_meeting_a_cache_locked_past_its_wait_answers_the_baseline(fresh, monkeypatch):
    """A first build's large transaction locks the cache file itself, so the query cannot
    even tell it is a first build: it met "the dmm cache is locked by another process" as a
    tool error (the first-minute benchmark, issue 36). Past its wait it answers the baseline
    from the files, saying why."""
    import sqlite3

    from dmm.query.run import HELD_NOTE

    ws = fresh.ws
    memory_pack(ws, "gateway upload size ceiling")  # the cache exists and is filled
    monkeypatch.setattr(db, "BUSY_TIMEOUT_S", 0.2)  # the wait, short for the test
    fresh.add("project/more.md", "mem_2026_11_02_003", "Gateway download ceiling",
              "Downloads over 2 GB are streamed.")  # a refresh must write
    holder = sqlite3.connect(ws.state_dir / db.DB_NAME, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # the file locked, as a spilled first build does
        pack = _pack_within(ws, "gateway upload size ceiling")
        assert pack is not None
        assert [e.memory.id for e in pack.baseline] == ["mem_2026_11_02_001"]
        assert HELD_NOTE in pack.notes
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    pack = memory_pack(ws, "gateway upload size ceiling")
    assert HELD_NOTE not in pack.notes and pack.retrieved


def test_a_hooks_impatience_stays_in_its_own_thread():
    """The background process answers a hook and a query in two threads at once: the hook's
    impatience (never wait for a lock) must not make the query fail on a lock it would have
    waited for ("the dmm cache is locked by another process", the first-minute benchmark)."""
    entered, release = threading.Event(), threading.Event()

    def hook() -> None:
        with db.impatient():
            entered.set()
            release.wait(30)

    worker = threading.Thread(target=hook, daemon=True)
    worker.start()
    try:
        assert entered.wait(30)
        assert not db.is_impatient() and db.busy_timeout() == db.BUSY_TIMEOUT_S
    finally:
        release.set()
        worker.join(30)
    with db.impatient():
        assert db.is_impatient()
    assert not db.is_impatient()


def test_a_query_in_a_long_lived_process_never_waits_for_its_own_first_build(fresh, monkeypatch):
    """In the background process the first build runs in its warm-up thread, which holds the
    watch's lock while it reads every file: a query's thread waited on that lock for the whole
    build (8 s at load 8, the first-minute benchmark) instead of answering the baseline."""
    from dmm.index import watch

    monkeypatch.setattr(watch, "_enabled", True)
    monkeypatch.setattr(watch, "_watches", {})
    watching = watch.for_dir(fresh.ws.memory_dir)
    db.connect(fresh.ws.state_dir).close()  # the builder made the file; it fills it now
    assert not db.ever_filled(fresh.ws.state_dir)
    try:
        with _another_dmm_building(fresh.ws), watching.lock:  # the warm-up thread, building
            pack = _pack_within(fresh.ws, "gateway upload size ceiling")
            assert pack is not None, "the query waited for the process's own first build"
            assert [e.memory.id for e in pack.baseline] == ["mem_2026_11_02_001"]
            assert FIRST_BUILD_NOTE in pack.notes
        pack = memory_pack(fresh.ws, "gateway upload size ceiling")  # built: a real pack
        assert [e.memory.id for e in pack.retrieved] == ["mem_2026_11_02_002"]
    finally:
        watching.close()


@pytest.fixture
def many(fresh):
    for n in range(30):
        fresh.add(f"project/rules/rule_{n:02d}.md", f"mem_2026_11_03_{n:03d}",
                  f"Rule {n} of the gateway", f"Rule {n} body.",
                  tags="[odd]" if n % 2 else "[even]")
    return fresh


def test_memory_list_during_the_first_build_reads_the_files_and_says_so(many):
    """memory_list waited for the whole first build (2 s on an idle machine at 2,000
    memories): it reads the memory files instead, and says where its list comes from."""
    from dmm.agents import mcp_calls

    with _another_dmm_building(many.ws):
        page = _within(lambda: mcp_calls.listing(many.ws, limit=5))
        assert page is not None, "memory_list waited for the other dmm's first build"
        assert "being built for the first time" in page["note"]
        assert "partial" not in page  # 32 files: every one read
        assert page["total"] == 32
        assert [m["path"] for m in page["memories"]] == [
            "baseline/style.md", "project/gateway.md", "project/rules/rule_00.md",
            "project/rules/rule_01.md", "project/rules/rule_02.md"]
        tagged = _within(lambda: calls.listing(many.ws, tag="odd", sort="title",
                                               reverse=True, limit=100))
        assert tagged["total"] == 15 and tagged["memories"][0]["title"] == "Rule 9 of the gateway"
        assert not db.ever_filled(many.ws.state_dir)
    built = mcp_calls.listing(many.ws, limit=5)  # the index, once built: the same list
    assert "note" not in built and built["total"] == 32
    assert [m["path"] for m in built["memories"]] == [m["path"] for m in page["memories"]]


def test_a_list_that_cannot_read_every_file_in_time_is_partial_and_continues(many, monkeypatch):
    from dmm.agents import mcp_calls, unindexed

    clock = iter(range(0, 10_000))  # each look at the clock: 50 ms later
    monkeypatch.setattr(unindexed, "_clock", lambda: next(clock) * 0.05)
    monkeypatch.setattr(unindexed, "READ_S", 0.3)  # 6 looks: 5 files read
    with _another_dmm_building(many.ws):
        page = _within(lambda: mcp_calls.listing(many.ws, limit=3))
        assert [m["path"] for m in page["memories"]] == [
            "baseline/style.md", "project/gateway.md", "project/rules/rule_00.md"]
        assert page["next_cursor"] == "o3"  # in path order: the first page of the whole list
        by_title = _within(lambda: calls.listing(many.ws, sort="title", limit=3))
        assert by_title["partial"] is True and "of 32 read so far" in by_title["note"]
        assert by_title["total"] < 32


def test_memory_show_of_any_memory_during_the_first_build_reads_its_file(many):
    """Not only a baseline memory: by path one file, by id a look through the files (it
    waited for the whole build)."""
    from dmm.errors import NotFoundError

    with _another_dmm_building(many.ws):
        by_id = _within(lambda: calls.show(many.ws, "mem_2026_11_03_017"))
        assert by_id is not None and by_id["title"] == "Rule 17 of the gateway"
        by_path = _within(lambda: calls.show(many.ws, "project/rules/rule_04.md"))
        assert by_path["memory_id"] == "mem_2026_11_03_004" and "Rule 4 body." in \
            by_path["content"]
        with pytest.raises(NotFoundError):
            calls.show(many.ws, "mem_2026_11_03_099")
        with pytest.raises(NotFoundError):
            calls.show(many.ws, "project/rules/nothing.md")
        assert not db.ever_filled(many.ws.state_dir)


def test_a_list_meeting_a_locked_cache_says_so_not_a_first_build(many, monkeypatch):
    """A cache locked past the wait (a reindex, or a first build whose transaction locks the
    file) is not known to be a first build: the list says what it knows."""
    import sqlite3

    ws = many.ws
    memory_pack(ws, "gateway")  # built
    monkeypatch.setattr(db, "BUSY_TIMEOUT_S", 0.2)
    many.add("project/more.md", "mem_2026_11_02_003", "Gateway download ceiling")
    holder = sqlite3.connect(ws.state_dir / db.DB_NAME, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        page = _within(lambda: calls.listing(ws, limit=5))
        assert page["note"].startswith("another dmm holds the memory index")
        assert page["total"] == 33
    finally:
        holder.execute("ROLLBACK")
        holder.close()
