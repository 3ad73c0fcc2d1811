"""The background process watches the memory folder, and a short command whose repository has
one running asks it to vouch for the cache instead of walking the folder itself (the pattern
of git's fsmonitor daemon): every change that finished before the command is seen."""

from __future__ import annotations

import json
import os

import pytest

from dmm import store
from dmm.index import read
from dmm.index.refresh import open_fresh
from tests.conftest import memory_text
from tests.semantic.test_background import _query, _store

pytestmark = pytest.mark.slow


def _no_walk(monkeypatch):
    def refuse(memory_dir):
        raise AssertionError("walked the memory folder")

    monkeypatch.setattr(store, "scan", refuse)


def test_a_command_asks_the_running_process_and_sees_a_change_without_walking(
        repo, stop_daemons, monkeypatch):
    _store(repo)
    stop_daemons.append(repo.root)
    _query(repo)  # starts the background process
    target = repo.memory / "project/m2.md"
    st = target.stat()
    target.write_text(memory_text("mem_2026_01_01_002", "Releases happen on Fridays",
                                  "We ship a new version every Friday morning after the "
                                  "change log is reviewed by the release manager."),
                      encoding="utf-8")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    _no_walk(monkeypatch)
    conn, report = open_fresh(repo.ws)
    try:
        assert report.read == 0  # the background process read the file
        assert read.find(conn, "mem_2026_01_01_002")[0].title == "Releases happen on Fridays"
    finally:
        conn.close()


def test_a_file_written_just_before_a_command_is_listed(repo, stop_daemons):
    _store(repo)
    stop_daemons.append(repo.root)
    _query(repo)
    for n in range(5):
        repo.add(f"project/new{n}.md", f"mem_2026_02_02_00{n}", f"New memory {n}")
        proc = repo.dmm("list", "--json")
        assert proc.returncode == 0, proc.stderr
        paths = {m["path"] for m in json.loads(proc.stdout)["memories"]}
        assert {f"project/new{k}.md" for k in range(n + 1)} <= paths
        pack, _ = _query(repo, f"new memory {n}")
        assert f"project/new{n}.md" in [e["path"] for e in pack["retrieved"]]


def _rewrite_keeping_mtime(repo, title: str) -> None:
    """Change a memory file and put its mtime back (the size may tell a walk)."""
    target = repo.memory / "project/m2.md"
    st = target.stat()
    text = memory_text("mem_2026_01_01_002", title,
                       "We ship a new version every Friday morning after the change log is "
                       "reviewed by the release manager.")
    target.write_text(text, encoding="utf-8")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_with_the_layer_switched_off_a_command_still_asks_the_running_process(
        repo, stop_daemons, monkeypatch):
    """Vouching needs no model: a command with DMM_SEMANTIC=off asks the running process
    (started with the model on here; with the model off in test_by_words.py)."""
    _store(repo)
    stop_daemons.append(repo.root)
    _query(repo)
    monkeypatch.setenv("DMM_SEMANTIC", "off")
    _rewrite_keeping_mtime(repo, "Releases happen on Fridays")
    _no_walk(monkeypatch)
    conn, report = open_fresh(repo.ws)
    try:
        assert report.read == 0
        assert read.find(conn, "mem_2026_01_01_002")[0].title == "Releases happen on Fridays"
    finally:
        conn.close()
