"""A long-lived process watches .dmm/memory/ instead of walking it (dmm/index/watch.py): no
walk while nothing changes, every change seen by the next check (even one that keeps the
file's size and mtime), and the walk again wherever a watch cannot be trusted."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from dmm.index import read, watch
from dmm.index.refresh import open_fresh, rebuild
from tests.conftest import memory_text

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


@pytest.fixture
def watched(repo, monkeypatch):
    monkeypatch.setattr(watch, "_enabled", True)
    monkeypatch.setattr(watch, "_watches", {})
    yield repo
    for w in watch._watches.values():
        w.close()


def _titles(ws) -> dict[str, str]:
    conn, _ = open_fresh(ws)
    try:
        return {m.path: m.title for m in read.memories(conn)}
    finally:
        conn.close()


def _watch(ws) -> watch.Watch:
    return watch.for_dir(ws.memory_dir)


def test_nothing_changed_means_no_walk_and_a_fresh_cache(watched):
    watched.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    assert _titles(watched.ws) == {"project/a.md": "Alpha"}
    w = _watch(watched.ws)
    assert w.why_not is None and w.walks == 1
    for _ in range(3):
        conn, report = open_fresh(watched.ws)
        conn.close()
        assert report.was_fresh
    assert w.walks == 1


def test_a_rewrite_with_the_same_size_and_mtime_is_seen_without_a_walk(watched):
    p = watched.add("project/a.md", "mem_2026_01_01_001", "Version A")
    _titles(watched.ws)
    st = p.stat()
    p.write_text(memory_text("mem_2026_01_01_001", "Version B"), encoding="utf-8")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _titles(watched.ws) == {"project/a.md": "Version B"}
    assert _watch(watched.ws).walks == 1  # only the changed file was looked at


def test_added_removed_renamed_files_and_new_folders_are_seen(watched):
    a = watched.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    watched.add("project/b.md", "mem_2026_01_01_002", "Beta")
    _titles(watched.ws)
    a.unlink()
    assert _titles(watched.ws) == {"project/b.md": "Beta"}
    os.rename(watched.memory / "project/b.md", watched.memory / "project/c.md")
    assert _titles(watched.ws) == {"project/c.md": "Beta"}
    watched.add("project/deep/er/d.md", "mem_2026_01_01_004", "Delta")  # new folders: a walk
    assert set(_titles(watched.ws)) == {"project/c.md", "project/deep/er/d.md"}
    # a file in a folder that appeared since is watched too
    (watched.memory / "project/deep/er/d.md").write_text(
        memory_text("mem_2026_01_01_004", "Delta two"), encoding="utf-8")
    assert _titles(watched.ws)["project/deep/er/d.md"] == "Delta two"
    shutil.rmtree(watched.memory / "project/deep")
    assert set(_titles(watched.ws)) == {"project/c.md"}


def test_a_memory_folder_replaced_under_the_watch_is_walked_again(watched):
    watched.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    _titles(watched.ws)
    os.rename(watched.memory, watched.root / ".dmm" / "old-memory")
    watched.add("global/z.md", "mem_2026_01_01_009", "Zulu", scope="global")
    assert _titles(watched.ws) == {"global/z.md": "Zulu"}
    (watched.memory / "global/z.md").write_text(memory_text("mem_2026_01_01_009", "Zulu two",
                                                            scope="global"), encoding="utf-8")
    assert _titles(watched.ws) == {"global/z.md": "Zulu two"}


def test_another_process_rebuilding_the_cache_is_noticed(watched):
    watched.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    _titles(watched.ws)
    conn, _ = rebuild(watched.ws)  # `dmm reindex`: a new cache under the watch's feet
    conn.close()
    assert _titles(watched.ws) == {"project/a.md": "Alpha"}
    os.remove(watched.ws.state_dir / "cache.sqlite3")
    assert _titles(watched.ws) == {"project/a.md": "Alpha"}


def test_hidden_files_are_ignored_as_the_walk_ignores_them(watched):
    watched.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    _titles(watched.ws)
    (watched.memory / "project/.a.md.swp").write_text("editor state")
    conn, report = open_fresh(watched.ws)
    conn.close()
    assert report.was_fresh and _watch(watched.ws).walks == 1


def test_a_file_system_that_cannot_be_watched_is_walked_every_time(watched, monkeypatch):
    monkeypatch.setattr(watch, "LOCAL_FILE_SYSTEMS", frozenset())
    p = watched.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    _titles(watched.ws)
    w = _watch(watched.ws)
    assert "file system" in w.why_not
    st = p.stat()
    p.write_text(memory_text("mem_2026_01_01_001", "Bravo"), encoding="utf-8")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # within the racy window: re-read
    assert _titles(watched.ws) == {"project/a.md": "Bravo"}
    assert w.walks == 2


def test_without_the_inotify_package_it_walks(watched, monkeypatch):
    monkeypatch.setitem(sys.modules, "inotify_simple", None)  # import fails
    watched.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    assert _titles(watched.ws) == {"project/a.md": "Alpha"}
    assert "inotify_simple" in _watch(watched.ws).why_not
    watched.add("project/b.md", "mem_2026_01_01_002", "Beta")
    assert len(_titles(watched.ws)) == 2


def test_no_watches_left_means_the_walk(watched, monkeypatch):
    import errno

    import inotify_simple

    def refuse(self, path, mask):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(inotify_simple.INotify, "add_watch", refuse)
    watched.add("project/a.md", "mem_2026_01_01_001", "Alpha")
    assert _titles(watched.ws) == {"project/a.md": "Alpha"}
    assert "cannot watch" in _watch(watched.ws).why_not
    watched.add("project/b.md", "mem_2026_01_01_002", "Beta")
    assert len(_titles(watched.ws)) == 2


def test_the_file_system_of_a_path_is_read_from_the_mount_table(tmp_path):
    assert watch.file_system(tmp_path) is not None
    assert watch.file_system(tmp_path) == watch.file_system(tmp_path / "missing" / "deeper")
