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
