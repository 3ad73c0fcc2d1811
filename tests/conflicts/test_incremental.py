"""An incremental scan reads only what changed and what a full scan would compare it with, and
finds for the changed memories exactly the conflicts a full scan finds for them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dmm.conflicts.service import run_scan
from dmm.index.refresh import open_fresh
from tests.conftest import git

WORDTRAP = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "wordtrap" / "memory"


def touching(conn, ids: set[str]) -> dict[str, tuple]:
    """The stored conflicts involving any of ``ids``, as what a person sees of them."""
    return {cid: (a, b, kind, method, round(conf, 6), description)
            for cid, a, b, kind, method, conf, description in conn.execute(
                "SELECT conflict_id, a, b, type, detection_method, confidence, description "
                "FROM conflicts") if {a, b} & ids}


@pytest.fixture
def store(repo):
    """A small real store (46 memories of one delivery platform, written by hand) with a
    conflict of each common kind planted, committed and scanned fully."""
    shutil.copytree(WORDTRAP, repo.memory, dirs_exist_ok=True)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "store")
    conn, _ = open_fresh(repo.ws)
    run_scan(repo.ws, conn, full=True)
    return repo, conn


def files(repo) -> list[Path]:
    return sorted(repo.memory.rglob("*.md"))


def memory_id(path: Path) -> str:
    return next(line.split(":", 1)[1].strip() for line in path.read_text().splitlines()
                if line.startswith("id:"))


def repeat_and_reverse(paths: list[Path]) -> list[Path]:
    """Edit every seventh memory to bring another memory's words and a reversal of it:
    duplicates, overlaps, contradictions and values to compare, among memories of one
    subject. Returns the edited paths."""
    edited = paths[::7]
    for i, path in enumerate(edited):
        other = paths[(paths.index(path) + 3) % len(paths)]
        body = other.read_text().split("---", 2)[2].strip().splitlines()
        said = " ".join(line for line in body if line and not line.startswith("#"))[:400]
        path.write_text(path.read_text() + f"\n{said}\n\nWe no longer do this since 2026; "
                        f"the limit is now {10 + i} per minute.\n")
    return edited


def test_an_incremental_scan_finds_what_a_full_scan_finds_for_the_changed_memories(store):
    repo, conn = store
    paths = files(repo)
    changed = {memory_id(path) for path in repeat_and_reverse(paths)}
    repo.add("project/added.md", "mem_2026_11_28_001", paths[5].stem.replace("_", " "),
             paths[5].read_text().split("---", 2)[2].replace("#", "").strip()
             + "\nDo not do this any more.")
    changed.add("mem_2026_11_28_001")
    conn.close()
    conn, _ = open_fresh(repo.ws)
    result = run_scan(repo.ws, conn)
    assert result.scan_type == "incremental"
    assert result.memories_scanned == len(changed)
    incremental = touching(conn, changed)
    run_scan(repo.ws, conn, full=True)
    full = touching(conn, changed)
    conn.close()
    assert full, "the planted changes bring conflicts"
    assert incremental == full



def test_what_changed_since_the_scan_is_read_from_the_touched_files_alone(store):
    from dmm.conflicts import store as conflict_store
    from dmm.conflicts.analyzers import fingerprint

    repo, conn = store
    paths = files(repo)
    ids = [memory_id(p) for p in paths[:4]]
    paths[0].write_text(paths[0].read_text() + "\nOne more sentence.\n")  # changed
    paths[1].touch()  # re-read, the same content
    paths[2].unlink()  # gone
    (paths[3].parent / "moved.md").write_text(paths[3].read_text())  # moved: a new path
    paths[3].unlink()
    conn.close()
    conn, _ = open_fresh(repo.ws)
    fp = fingerprint(repo.ws.config["conflicts"])
    touched = conflict_store.touched_paths(conn)
    assert touched is not None and len(touched) == 5
    by_touched = conflict_store.changed_since_scan(conn, fp)
    assert by_touched == ({ids[0], ids[3]}, True)
    conn.execute("DELETE FROM meta WHERE key = 'touched'")  # not known: every digest decides
    assert conflict_store.changed_since_scan(conn, fp) == by_touched
    conn.close()
    conn, _ = open_fresh(repo.ws)
    run_scan(repo.ws, conn)  # records the scanned digests from every row again, then tracks
    assert _recorded(conn) == _as_cached(conn) and conflict_store.touched_paths(conn) == []
    paths[0].write_text(paths[0].read_text() + "\nAnd another.\n")
    conn.close()
    conn, _ = open_fresh(repo.ws)
    assert conflict_store.changed_since_scan(conn, fp) == ({ids[0]}, False)
    run_scan(repo.ws, conn)  # rewrites that one row
    assert _recorded(conn) == _as_cached(conn)
    conn.close()


def _recorded(conn) -> list:
    """Each memory as the last scan recorded it (table ``scanned``)."""
    return sorted(conn.execute("SELECT path, id, digest FROM scanned"))


def _as_cached(conn) -> list:
    return sorted(conn.execute("SELECT path, id, digest FROM memories"))
