"""The background process serves every work tree of its clone: what it keeps in memory per
work tree (the semantic index, the resident postings) is bounded by
semantic.resident_worktrees, the least recently asked of dropped (issue 36 item 6)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from dmm.lru import recent
from dmm.semantic import service


def test_recent_keeps_the_most_recently_used_within_the_limit():
    table: dict = {}
    for key in "abc":
        recent(table, key, lambda: object(), limit=2)
    assert list(table) == ["b", "c"]  # a, the least recently used, dropped
    kept = table["b"]
    assert recent(table, "b", lambda: object(), limit=2) is kept  # not made again
    recent(table, "d", lambda: object(), limit=2)
    assert list(table) == ["b", "d"]  # c was the least recently used once b was asked of


def test_recent_never_drops_what_is_in_use():
    table: dict = {}
    for key in "abc":
        recent(table, key, lambda: object(), limit=1, in_use=lambda k: k == "a")
    assert list(table) == ["a", "c"]  # over the limit rather than lose a build under way


@pytest.fixture
def no_indexes(monkeypatch):
    monkeypatch.setattr(service, "_indexes", {})
    monkeypatch.setattr(service, "_threads", {})
    monkeypatch.setattr(service, "_failed", {})


def test_the_background_process_keeps_at_most_the_limit_of_work_trees_indexes(no_indexes,
                                                                               tmp_path):
    keys = [(tmp_path / f"wt{i}", None) for i in range(3)]
    first = service._index(keys[0], 2)
    service._index(keys[1], 2)
    service._index(keys[2], 2)
    assert list(service._indexes) == keys[1:]
    assert service._index(keys[0], 2) is not first  # read again when next asked of


def test_an_index_being_built_is_not_dropped(no_indexes, tmp_path):
    keys = [(tmp_path / f"wt{i}", None) for i in range(3)]
    release = threading.Event()
    builder = threading.Thread(target=release.wait, daemon=True)
    builder.start()
    try:
        service._index(keys[0], 1)
        service._threads[keys[0]] = builder  # its sync is under way
        service._index(keys[1], 1)
        service._index(keys[2], 1)
        assert list(service._indexes) == [keys[0], keys[2]]
    finally:
        release.set()
        builder.join()
    service._index(keys[1], 1)  # built: now it may go, and its thread with it
    assert list(service._indexes) == [keys[1]]
    assert keys[0] not in service._threads


def test_the_bound_is_a_setting_with_a_range(repo):
    from dmm.config import RANGES

    assert service.resident_limit(repo.ws) == 4
    assert RANGES["semantic.resident_worktrees"] == (1, 1000)


def test_the_resident_postings_are_bounded_too(repo, monkeypatch):
    from dmm.index.refresh import open_fresh
    from dmm.query import resident

    monkeypatch.setattr(resident, "_enabled", True)
    monkeypatch.setattr(resident, "_stores", {})
    repo.add("project/a.md", "mem_2026_11_03_001", "Gateway upload size ceiling")
    conn, _ = open_fresh(repo.ws)
    try:
        for name in ("one", "two", "three"):
            resident.state(Path(name), conn, limit=2)
    finally:
        conn.close()
    assert list(resident._stores) == [Path("two"), Path("three")]
