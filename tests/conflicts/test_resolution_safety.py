"""No data loss, proven: a resolution (or undo) that fails at any step leaves files, refs, the
index and the cache exactly as they were; a successful one keeps every old content in git."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from dmm.conflicts import service
from dmm.conflicts.resolver import ResolutionRequest
from dmm.errors import DmmError, GitError
from dmm.gitrepo import Git
from dmm.index.refresh import open_fresh
from dmm.landing import _Index
from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT, snapshot, store  # noqa: F401
from tests.conftest import git

# every git operation each command goes through, in order
COMMIT_STEPS = ("tree_with", "commit_tree", "check_sync", "update_refs", "sync", "install")
INDEX_STEPS = ("check_sync", "sync", "install")  # done on git's locked index, by dmm.landing
RESOLVE_STEPS = ("show_blob", "hash_blob") + COMMIT_STEPS
UNDO_STEPS = ("blob_ids",) + COMMIT_STEPS
REQUESTS = {
    "deprecate": dict(target=OLD_LIMIT),
    "merge": dict(content="# Gateway upload ceiling\n\nIt is 50 MB; 413 above it.\n"),
    "clarify": dict(clarifications={OLD_LIMIT: "internal gateway", NEW_LIMIT: "public"}),
    "dismiss": {},
    "defer": {},
}


def _settle(repo) -> None:
    """Age the memory files past the cache's racy-mtime window (files written in the second
    the cache was refreshed are re-read every time), then refresh and scan, as any command
    would, so that the cache's bytes only change when something writes to it."""
    old = time.time() - 10
    for path in repo.memory.rglob("*.md"):
        os.utime(path, (old, old))
    conn, _ = open_fresh(repo.ws)
    try:
        service.conflicts(repo.ws, conn)
    finally:
        conn.close()


def _cache(repo) -> str:
    digest = hashlib.sha1()
    for path in sorted(repo.ws.state_dir.glob("cache.sqlite3*")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def _conflict(repo):
    conn, _ = open_fresh(repo.ws)
    try:
        found, _ = service.conflicts(repo.ws, conn, [OLD_LIMIT], status="unresolved")
    finally:
        conn.close()
    return next(c for c in found if {m.memory_id for m in c.memories} == {OLD_LIMIT, NEW_LIMIT})


def _resolve(repo, action: str):
    conflict = _conflict(repo)
    conn, _ = open_fresh(repo.ws)
    try:
        return service.resolve(repo.ws, conn, ResolutionRequest(
            conflict.conflict_id, action, "injected failure test", **REQUESTS[action]),
            conflict=conflict)
    finally:
        conn.close()


def _fail(monkeypatch, step: str) -> list[int]:
    calls = []

    def broken(self, *args, **kw):
        calls.append(1)
        raise GitError(f"injected failure in {step}")

    monkeypatch.setattr(_Index if step in INDEX_STEPS else Git, step, broken)
    return calls


@pytest.mark.parametrize("action", list(REQUESTS))
@pytest.mark.parametrize("step", RESOLVE_STEPS)
def test_a_resolution_failing_at_any_step_changes_nothing(store, monkeypatch, action, step):
    _settle(store)
    before, cache = snapshot(store), _cache(store)
    calls = _fail(monkeypatch, step)
    with pytest.raises(DmmError, match="injected"):
        _resolve(store, action)
    assert calls
    monkeypatch.undo()
    assert snapshot(store) == before
    assert _cache(store) == cache


@pytest.mark.parametrize("step", UNDO_STEPS)
def test_an_undo_failing_at_any_step_changes_nothing(store, monkeypatch, step):
    result = _resolve(store, "deprecate")
    _settle(store)
    before, cache = snapshot(store), _cache(store)
    calls = _fail(monkeypatch, step)
    with pytest.raises(DmmError, match="injected"):
        service.undo(store.ws, result.conflict_id, "injected")
    assert calls
    monkeypatch.undo()
    assert snapshot(store) == before and _cache(store) == cache


@pytest.mark.parametrize("action", list(REQUESTS))
def test_every_old_content_stays_recoverable_from_git(store, action):
    originals = {p.relative_to(store.root).as_posix(): p.read_bytes()
                 for p in store.memory.rglob("*.md")}
    result = _resolve(store, action)
    assert git(store.root, "rev-parse", "HEAD").strip() == result.commit
    for path, data in originals.items():
        assert git(store.root, "show", f"HEAD~1:{path}").encode() == data
        # and `dmm history` follows each memory through the move to deprecated/
        proc = store.dmm("history", path.removeprefix(".dmm/memory/"))
        assert proc.returncode == 0, proc.stderr
