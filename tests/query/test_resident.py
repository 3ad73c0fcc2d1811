"""The ranking a long-lived process keeps in memory (dmm/query/resident.py) gives the rows of
the SQL ranking, in the same order, through changes of the store; the pack built from the head
of it is the pack built from the whole list."""

from __future__ import annotations

import datetime as dt

import pytest

from dmm.index import db
from dmm.index.refresh import open_fresh
from dmm.query import rank as sql_rank
from dmm.query import resident
from dmm.query.pack import PackOptions, _candidate_filter, build_pack
from tests.benchmarks.generate import generate
from tests.conftest import memory_text

TASKS = ["add retries with backoff to the partner client", "how are invoices numbered",
         "which database migrations need a review", "rotate the api keys of a service",
         "cache invalidation for tenants", "zzz no such word"]
FILTERS = [PackOptions(budget=1200), PackOptions(budget=300, scopes=("project",)),
           PackOptions(budget=5000, include_deprecated=True, exclude_ephemeral=True),
           PackOptions(budget=800, tags=("api", "billing"))]


@pytest.fixture
def store(repo, monkeypatch):
    monkeypatch.setattr(resident, "_enabled", True)
    monkeypatch.setattr(resident, "_stores", {})
    files = generate(repo.memory, 250, seed=11)
    return repo, files


def _state(ws, close: bool = True):
    """(a connection to the fresh cache, the resident state it reads)."""
    conn, _ = open_fresh(ws)
    with db.snapshot(conn):
        st = resident.state(ws.state_dir, conn)
    if close:
        conn.close()
    return conn, st


def _same_rankings(ws) -> int:
    conn, _ = open_fresh(ws)
    cfg = ws.config["query"]
    compared = 0
    try:
        with db.snapshot(conn):
            st = resident.state(ws.state_dir, conn)
            for opts in FILTERS:
                where, params = _candidate_filter(opts)
                for task in TASKS:
                    expected = sql_rank.rank(conn, task, where, params, cfg)
                    got = list(resident.rank(st, conn, task, where, params, cfg))
                    assert [r.doc for r in got] == [r.doc for r in expected], (task, opts)
                    for a, b in zip(got, expected):
                        assert a.relevance == pytest.approx(b.relevance, abs=1e-12)
                        assert a.score == pytest.approx(b.score, abs=1e-12)
                        assert a.tokens == b.tokens
                    compared += len(expected)
    finally:
        conn.close()
    return compared


def test_the_rows_and_their_order_are_those_of_sql(store):
    repo, _ = store
    assert _same_rankings(repo.ws) > 500


def test_changed_removed_and_added_memories_are_ranked_as_sql_ranks_them(store):
    repo, files = store
    _same_rankings(repo.ws)  # postings now held for these tasks' words
    files[3].write_text(files[3].read_text() + "\nInvoices are numbered per tenant and "
                        "rotated yearly; retries never renumber them.\n", encoding="utf-8")
    files[7].unlink()
    repo.add("project/new/invoices.md", "mem_2026_09_09_001", "Invoice numbering",
             "Invoices are numbered by the billing service with a gapless sequence.")
    assert _same_rankings(repo.ws) > 500
    # the highest doc number is given again to the memory that replaces it: its new words
    # must count, not the ones held for the old text
    conn, _ = open_fresh(repo.ws)
    last = conn.execute("SELECT path FROM memories ORDER BY doc DESC LIMIT 1").fetchone()[0]
    conn.close()
    (repo.memory / last).write_text(memory_text("mem_2026_09_09_002", "Partner client retries",
                                                "Backoff doubles from one second."),
                                    encoding="utf-8")
    assert _same_rankings(repo.ws) > 500


def test_many_changes_reload_the_postings_and_stay_equal(store, monkeypatch):
    repo, files = store
    _same_rankings(repo.ws)
    for f in files[:60]:
        f.write_text(f.read_text().replace("the", "a"), encoding="utf-8")
    monkeypatch.setattr(resident, "REBASE_MIN", 10)  # 60 > 10: read the postings anew
    before = resident._stores[repo.ws.state_dir].ref_id
    assert _same_rankings(repo.ws) > 500
    assert resident._stores[repo.ws.state_dir].ref_id == before + 1


def test_a_state_that_is_no_longer_the_newest_is_ranked_by_sql(store):
    repo, files = store
    ws = repo.ws
    old, st = _state(ws, close=False)
    files[0].write_text(files[0].read_text() + "\nMore.\n", encoding="utf-8")
    new, _ = open_fresh(ws)
    with db.snapshot(new):
        resident.state(ws.state_dir, new)
    # the old state never reads postings held for the newer one: the caller ranks by SQL
    assert st.postings(old, "zebra-no-such-term") is None
    old.close()
    new.close()


def test_a_pack_from_the_head_of_the_ranking_is_the_whole_lists_pack(store):
    repo, _ = store
    conn, _ = open_fresh(repo.ws)
    cfg = repo.ws.config["query"]
    try:
        with db.snapshot(conn):
            st = resident.state(repo.ws.state_dir, conn)
            for opts in FILTERS:
                opts.today = dt.date(2026, 1, 1)
                for task in TASKS:
                    whole = build_pack(conn, task, opts, cfg).to_dict()
                    head = build_pack(conn, task, opts, cfg, resident=st).to_dict()
                    assert head == whole, (task, opts)
    finally:
        conn.close()


def test_postings_read_all_at_once_rank_as_sql(store):
    repo, files = store
    ws = repo.ws
    _, st = _state(ws)
    held = resident._stores[ws.state_dir]
    assert held.preload(lambda: db.connect(ws.state_dir), st) > 100
    assert held.preloaded_ref == st.ref_id
    files[5].write_text(files[5].read_text() + "\nInvoices again.\n", encoding="utf-8")
    assert _same_rankings(ws) > 500  # a changed memory's words come from the new state


def test_a_preload_for_a_state_that_moved_on_keeps_nothing(store):
    repo, files = store
    ws = repo.ws
    _, st = _state(ws)
    files[1].write_text(files[1].read_text() + "\nMoved on.\n", encoding="utf-8")
    conn, _ = open_fresh(ws)  # the cache is at a newer state than ``st``
    conn.close()
    assert resident._stores[ws.state_dir].preload(lambda: db.connect(ws.state_dir), st) == 0


def test_a_preload_paused_for_a_request_lets_the_request_write_the_cache(store, monkeypatch):
    """While a request is answered the preload pauses between its reads, holding no read
    lock: the request's refresh commits at once (once it waited for the preload, which
    waited for it, and the background process answered nothing), and the preload, finding
    the cache moved on, keeps nothing."""
    import threading
    import time
    import types

    repo, files = store
    ws = repo.ws
    _, st = _state(ws)
    paused = threading.Event()

    def sleep(seconds: float) -> None:
        paused.set()
        time.sleep(seconds)

    from dmm import priority

    monkeypatch.setattr(priority, "time", types.SimpleNamespace(sleep=sleep,
                                                                 monotonic=time.monotonic))
    monkeypatch.setattr(resident, "PRELOAD_ROWS", 200)  # many reads, a pause before each
    loaded = []
    with priority.answering():
        reader = threading.Thread(target=lambda: loaded.append(resident._stores[
            ws.state_dir].preload(lambda: db.connect(ws.state_dir), st)))
        reader.start()
        assert paused.wait(10)
        files[2].write_text(files[2].read_text() + "\nWritten meanwhile.\n", encoding="utf-8")
        with db.impatient():  # a lock held elsewhere fails at once rather than in 30 s
            conn, _ = open_fresh(ws)
        try:
            assert conn.execute("SELECT count(*) FROM bodies WHERE body LIKE "
                                "'%Written meanwhile.%'").fetchone()[0] == 1
        finally:
            conn.close()
    reader.join(10)
    assert loaded == [0]
