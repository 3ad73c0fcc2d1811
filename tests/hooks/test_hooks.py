"""The git hooks, exercised by real git commit, merge and rebase."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import git, run_dmm

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hooked(repo):
    proc = repo.dmm("hooks", "install", "--json")
    assert proc.returncode == 0, proc.stderr
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "init")
    return repo


def commit(repo, message: str) -> str:
    """git commit, returning stderr (where hooks report)."""
    import subprocess

    proc = subprocess.run(["git", "commit", "-qm", message], cwd=repo.root, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def add_conflicting_pair(repo) -> None:
    repo.add("project/old.md", "mem_2025_01_01_001", "Old rule", "Use the old tool.")
    repo.add("project/new.md", "mem_2025_06_01_001", "New rule", "Use the new tool.",
             extra="supersedes: [mem_2025_01_01_001]\n")


def test_a_memory_commit_is_scanned_and_reported(hooked):
    add_conflicting_pair(hooked)
    git(hooked.root, "add", "-A")
    err = commit(hooked, "two memories")
    assert "1 new memory conflict found (1 supersession)" in err
    data = json.loads(hooked.dmm("conflicts", "list", "--json").stdout)
    assert data["total"] == 1
    assert json.loads(hooked.dmm("status", "--json").stdout)["conflicts"]["unresolved"] == 1


def test_a_commit_outside_memory_never_starts_dmm(hooked, tmp_path):
    marker = tmp_path / "ran"
    script = tmp_path / "fake-dmm"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    env = {**os.environ, "DMM_HOOK_COMMAND": str(script)}
    import subprocess

    (hooked.root / "code.py").write_text("x = 1\n")
    git(hooked.root, "add", "code.py")
    subprocess.run(["git", "commit", "-qm", "code"], cwd=hooked.root, env=env, check=True)
    assert not marker.exists()
    hooked.add("project/a.md", "mem_2025_01_01_001", "A memory")
    git(hooked.root, "add", "-A")
    subprocess.run(["git", "commit", "-qm", "memory"], cwd=hooked.root, env=env, check=True)
    assert marker.exists()


def test_a_failing_scan_never_blocks_the_commit(hooked, tmp_path):
    import subprocess

    hooked.add("project/a.md", "mem_2025_01_01_001", "A memory")
    git(hooked.root, "add", "-A")
    env = {**os.environ, "DMM_HOOK_COMMAND": "false"}
    proc = subprocess.run(["git", "commit", "-qm", "memory"], cwd=hooked.root, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert "conflict scan failed" in proc.stderr
    assert git(hooked.root, "log", "-1", "--format=%s").strip() == "memory"


def test_merge_and_rebase_run_the_scan(hooked):
    root = hooked.root
    git(root, "checkout", "-q", "-b", "feature")
    add_conflicting_pair(hooked)
    git(root, "add", "-A")
    commit(hooked, "memories on a branch")
    git(root, "checkout", "-q", "main")
    (root / "other.txt").write_text("x\n")
    git(root, "add", "other.txt")
    commit(hooked, "main moves on")
    import subprocess

    scans = lambda: len(json.loads(hooked.dmm("conflicts", "stats", "--json").stdout)[  # noqa
        "recent_scans"])
    before = scans()
    merge = subprocess.run(["git", "merge", "-q", "--no-edit", "feature"], cwd=root,
                           capture_output=True, text=True)
    assert merge.returncode == 0, merge.stderr
    assert scans() == before + 1  # post-merge scanned the memories the merge brought
    # a rebase that brings memory changes runs post-rewrite
    git(root, "checkout", "-q", "-b", "topic", "HEAD~2")
    hooked.add("project/third.md", "mem_2025_07_01_001", "Third rule", "Another rule.",
               extra="supersedes: [mem_2025_06_01_001]\n")
    git(root, "add", "-A")
    commit(hooked, "third")
    rebase = subprocess.run(["git", "rebase", "-q", "main"], cwd=root, capture_output=True,
                            text=True)
    assert rebase.returncode == 0, rebase.stderr
    data = json.loads(hooked.dmm("conflicts", "list", "--json").stdout)
    assert data["total"] == 2


def test_an_existing_hook_is_chained_and_restored(repo):
    hooks = Path(git(repo.root, "rev-parse", "--git-path", "hooks").strip())
    hooks = hooks if hooks.is_absolute() else repo.root / hooks
    hooks.mkdir(parents=True, exist_ok=True)
    mine = hooks / "post-commit"
    mine.write_text("#!/bin/sh\necho my-own-hook-ran >&2\n")
    mine.chmod(0o755)
    original = mine.read_text()
    repo.dmm("hooks", "install")
    assert (hooks / "post-commit.legacy").read_text() == original
    git(repo.root, "add", "-A")
    assert "my-own-hook-ran" in commit(repo, "init")
    status = json.loads(repo.dmm("hooks", "status", "--json").stdout)["hooks"]
    assert status[0]["state"] == "installed" and status[0]["legacy"]
    repo.dmm("hooks", "uninstall")
    assert mine.read_text() == original and not (hooks / "post-commit.legacy").exists()
    assert not (hooks / "post-merge").exists()


def test_core_hooks_path_is_respected(repo):
    git(repo.root, "config", "core.hooksPath", ".githooks")
    repo.dmm("hooks", "install")
    assert (repo.root / ".githooks" / "post-commit").exists()
    assert not (repo.root / ".git" / "hooks" / "post-commit").exists()
    add_conflicting_pair(repo)
    git(repo.root, "add", "-A")
    assert "new memory conflict" in commit(repo, "memories")


def test_init_installs_the_hooks_unless_told_not_to(git_repo, tmp_path):
    proc = run_dmm("init", "--json", cwd=git_repo)
    assert json.loads(proc.stdout)["hooks_installed"] == ["post-commit", "post-merge",
                                                          "post-rewrite"]
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    proc = run_dmm("init", "--no-hooks", "--json", cwd=other)
    assert json.loads(proc.stdout)["hooks_installed"] == []
    assert not (other / ".git" / "hooks" / "post-commit").exists()


def test_the_pre_commit_framework_hook_definition():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = hooks[0]
    assert hook["id"] == "dmm-conflicts" and hook["always_run"] is True
    assert hook["pass_filenames"] is False and "post-commit" in hook["stages"]
    assert hook["entry"].startswith("dmm hooks run")


def test_the_hook_entry_point_runs_without_a_shim(hooked):
    add_conflicting_pair(hooked)
    proc = hooked.dmm("hooks", "run", "post-commit", env={"GIT_INDEX_FILE": ".git/index"})
    assert proc.returncode == 0 and "new memory conflict" in proc.stderr


def test_a_memory_committed_with_errors_is_named_by_the_hook(hooked):
    hooked.write("project/broken.md", "---\ntags: [x]\n---\n\n# No id, no fields\n\nText.\n")
    git(hooked.root, "add", "-A")
    err = commit(hooked, "a broken memory")
    said = [line for line in err.splitlines() if "project/broken.md" in line]
    assert len(said) == 1 and "dmm validate" in said[0], err
    hooked.add("project/fine.md", "mem_2026_01_01_001", "Fine rule", "Use the fine tool.")
    git(hooked.root, "add", "-A")
    assert "broken" not in commit(hooked, "a fine memory")  # said once, for its commit


def test_a_large_commit_is_scanned_in_the_background(hooked):
    """The commit returns while the scan has not even started (the test holds the clone's
    background-scan lock), and the scan's conflicts appear once it ran."""
    import sqlite3
    import time

    from dmm.fsutil import file_lock
    from dmm.hooks.run import FOREGROUND_MAX, LOCK_NAME, LOG_NAME
    from dmm.index import db

    ws = hooked.ws
    add_conflicting_pair(hooked)
    for i in range(FOREGROUND_MAX):
        hooked.add(f"project/n{i}.md", f"mem_2025_02_01_{i:03d}", f"Note {i} on topic {i}",
                   f"Topic {i} stands alone: word{i}a word{i}b.")
    git(hooked.root, "add", "-A")
    log = ws.state_dir / LOG_NAME

    def stored() -> int:
        if not (ws.state_dir / db.DB_NAME).exists():  # the hook did not even read the files
            return 0
        conn = sqlite3.connect(f"file:{ws.state_dir / db.DB_NAME}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT count(*) FROM conflicts").fetchone()[0]
        finally:
            conn.close()

    with file_lock(ws.shared_state_dir / LOCK_NAME):
        err = commit(hooked, "many memories")
        assert "scanning 12 changed memories for conflicts in the background" in err
        assert str(log) in err and "dmm conflicts list" in err
        assert stored() == 0 and "scan done" not in log.read_text()
    deadline = time.monotonic() + 120
    while "scan done" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "scan done" in log.read_text(), log.read_text()
    assert "1 new memory conflict found (1 supersession)" in log.read_text()
    assert stored() == 1
    assert json.loads(hooked.dmm("conflicts", "list", "--json").stdout)["total"] == 1



def test_the_hook_looks_only_at_the_files_the_commit_changed(hooked):
    """An edit left uncommitted is not read by the hook of a commit that did not include it
    (the next command's refresh reads it); the committed one is scanned."""
    from dmm.index import db, read
    from dmm.index.refresh import open_fresh

    add_conflicting_pair(hooked)
    hooked.add("project/other.md", "mem_2025_03_01_001", "Other rule", "Use the other tool.")
    git(hooked.root, "add", "-A")
    commit(hooked, "three memories")
    hooked.add("project/other.md", "mem_2025_03_01_001", "Other rule, edited", "Edited.")
    hooked.add("project/newest.md", "mem_2025_09_01_001", "Newest rule", "Use the newest tool.",
               extra="supersedes: [mem_2025_06_01_001]\n")
    git(hooked.root, "add", ".dmm/memory/project/newest.md")
    err = commit(hooked, "newest")
    assert "new memory conflict" in err and "1 supersession" in err
    conn = db.connect(hooked.ws.state_dir)  # the cache as the hook left it
    assert [m.title for m in read.find(conn, "mem_2025_03_01_001")] == ["Other rule"]
    conn.close()
    conn, _ = open_fresh(hooked.ws)  # any other command walks the store
    assert [m.title for m in read.find(conn, "mem_2025_03_01_001")] == ["Other rule, edited"]
    conn.close()


def test_a_large_first_commit_goes_to_the_background_unread(repo):
    """A first commit (a store added to a repository at once) has no parent to compare with:
    its files are what it holds, and many of them are scanned in the background, never read
    by the hook (10,000 memories held `git commit` for 14 s)."""
    from dmm.fsutil import file_lock
    from dmm.hooks.run import FOREGROUND_MAX, LOCK_NAME
    from dmm.index import db

    assert repo.dmm("hooks", "install").returncode == 0
    for i in range(FOREGROUND_MAX + 1):
        repo.add(f"project/n{i}.md", f"mem_2025_02_01_{i:03d}", f"Note {i} on topic {i}",
                 f"Topic {i} stands alone: word{i}a word{i}b.")
    git(repo.root, "add", "-A")
    with file_lock(repo.ws.shared_state_dir / LOCK_NAME):  # the background scan waits
        err = commit(repo, "the whole store")
        assert "in the background" in err, err
        assert not (repo.ws.state_dir / db.DB_NAME).exists()  # the hook read no file
