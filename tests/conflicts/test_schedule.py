"""Conflict scans on a schedule (issue 37 item 5, seed 000 5.9 ScanConfig): the `[scan]` keys,
validated; `incremental_on_commit = false` leaves a real commit unscanned; the long-lived
background process brings the scan up to date as it starts (`scan_at_startup`) and scans the
whole store when its last full scan is older than `periodic_interval_hours`
(`periodic_enabled`), through `dmm conflicts scan` (so the shared results are published too)."""

from __future__ import annotations

import datetime as dt
import sqlite3
import subprocess
import threading
import time

import pytest

from dmm.config import parse
from dmm.conflicts import schedule
from dmm.errors import InvalidInputError
from tests.conftest import git


def _settings(repo, text: str) -> None:
    (repo.root / ".dmm" / "config.toml").write_text(text, encoding="utf-8")


def _scans(repo) -> list[str]:
    """The scan types the work tree's cache recorded, newest first."""
    from dmm.conflicts import store

    path = repo.ws.state_dir / "cache.sqlite3"
    if not path.exists():
        return []
    conn = sqlite3.connect(path)
    try:
        return [r["scan_type"] for r in store.scans(conn)]
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def _pair(repo) -> None:
    repo.add("project/old.md", "mem_2025_01_01_001", "Old rule", "Use the old tool.")
    repo.add("project/new.md", "mem_2025_06_01_001", "New rule", "Use the new tool.",
             extra="supersedes: [mem_2025_01_01_001]\n")


def test_the_scan_keys_are_read_and_checked():
    cfg = parse(b"[scan]\nperiodic_enabled = false\nperiodic_interval_hours = 6\n"
                b"scan_at_startup = false\nincremental_on_commit = false\n", "config.toml")
    assert cfg["scan"] == {"periodic_enabled": False, "periodic_interval_hours": 6,
                           "scan_at_startup": False, "incremental_on_commit": False}
    assert parse(None, "config.toml")["scan"]["incremental_on_commit"] is True
    for bad, words in ((b"periodic_interval_hours = 0", "outside"),
                       (b"periodic_interval_hours = 1.5", "whole number"),
                       (b"periodic_enabled = 1", "must be bool"),
                       (b"periodic_scan = true", "unknown setting scan.periodic_scan")):
        with pytest.raises(InvalidInputError) as caught:
            parse(b"[scan]\n" + bad + b"\n", "config.toml")
        assert words in caught.value.message and "scan." in caught.value.message


def test_a_periodic_scan_is_due_by_the_age_of_the_last_full_one():
    now = dt.datetime(2026, 11, 28, 12, tzinfo=dt.timezone.utc)
    assert schedule.periodic_due(None, now, 24)
    assert not schedule.periodic_due(now - dt.timedelta(hours=23, minutes=59), now, 24)
    assert schedule.periodic_due(now - dt.timedelta(hours=24), now, 24)
    assert schedule.periodic_due(now - dt.timedelta(hours=2), now, 1)


@pytest.fixture
def hooked(repo):
    proc = repo.dmm("hooks", "install", "--json")
    assert proc.returncode == 0, proc.stderr
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "init")
    return repo


def _commit(repo, message: str) -> str:
    git(repo.root, "add", "-A")
    proc = subprocess.run(["git", "commit", "-qm", message], cwd=repo.root, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_incremental_on_commit_false_leaves_the_commit_unscanned(hooked):
    before = len(_scans(hooked))  # the fixture's first commit was scanned
    _settings(hooked, "[scan]\nincremental_on_commit = false\n")
    _pair(hooked)
    err = _commit(hooked, "two memories, not scanned")
    assert "conflict" not in err and len(_scans(hooked)) == before
    _settings(hooked, "[scan]\nincremental_on_commit = true\n")
    hooked.add("project/third.md", "mem_2025_07_01_001", "Third rule", "Use a third tool.")
    err = _commit(hooked, "scanned again")
    assert len(_scans(hooked)) > before, err  # the hook scanned, and found the pair's conflict
    assert "new memory conflict" in err


def test_the_schedule_asks_for_the_scans_its_settings_name(repo):
    _pair(repo)
    plan = schedule.Schedule(repo.root, threading.Event())
    _settings(repo, "[scan]\nperiodic_enabled = false\nscan_at_startup = false\n")
    assert plan.due(first=True) is None
    _settings(repo, "[scan]\nperiodic_enabled = false\nscan_at_startup = true\n")
    assert plan.due(first=True) == "update"  # never scanned
    assert plan.due(first=False) is None  # only as the process starts
    assert plan.scan(full=False) == 0
    assert _scans(repo) and plan.due(first=True) is None  # up to date: nothing to do
    _settings(repo, "[scan]\nperiodic_enabled = true\nscan_at_startup = false\n")
    if "full" not in _scans(repo):
        assert plan.due(first=False) == "full"  # no full scan yet
        assert plan.scan(full=True) == 0
    assert _scans(repo)[0] == "full"
    assert plan.due(first=False) is None  # the last full scan is recent
    _settings(repo, "[scan]\nperiodic_enabled = true\nperiodic_interval_hours = 1\n")
    assert plan.due(first=False) is None


@pytest.mark.slow
def test_the_background_process_runs_the_schedule(repo, monkeypatch):
    """A real background process (model off, started for the store as a large one would be)
    scans the never-scanned store as it starts, through `dmm conflicts scan`."""
    from dmm.background import client

    _pair(repo)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "pair")
    _settings(repo, "[scan]\nperiodic_enabled = false\nscan_at_startup = true\n")
    env = {"DMM_SEMANTIC": "off", client.LEXICAL_ENV: "1", schedule.QUIET_ENV: "0"}
    assert repo.dmm("reindex", env=env).returncode == 0
    assert _scans(repo) == []
    try:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        assert repo.dmm("query", "which tool do we use?").returncode == 0
        deadline = time.monotonic() + 60
        while not _scans(repo) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _scans(repo), (repo.ws.shared_state_dir / client.LOG).read_text()
        assert "scheduled incremental conflict scan" in (
            repo.ws.shared_state_dir / client.LOG).read_text()
        listed = repo.dmm("conflicts", "list", "--json")
        assert '"supersession"' in listed.stdout or '"total": 1' in listed.stdout
    finally:
        _stop(repo)


def _stop(repo) -> None:
    from dmm.background import client

    try:
        client.ask(repo.root, repo.ws.shared_state_dir, {"op": "stop", "semantic": False},
                   start_if_absent=False)
    except client.Unavailable:
        pass  # not running


@pytest.mark.slow
def test_dmm_serve_runs_the_schedule(repo, monkeypatch):
    """`dmm serve` scans the never-scanned store as it starts (scan_at_startup), once no
    request is being answered."""
    from tests.agents.server import Server

    _pair(repo)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "pair")
    _settings(repo, "[scan]\nperiodic_enabled = false\nscan_at_startup = true\n")
    monkeypatch.setenv(schedule.QUIET_ENV, "0")
    server = Server(repo.root)
    try:
        deadline = time.monotonic() + 60
        while not _scans(repo) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _scans(repo), "dmm serve did not scan"
        status, listed = server.get("/conflicts")
        assert status == 200 and listed["total"] == 1, listed
    finally:
        server.proc.terminate()
        server.proc.wait(30)


def test_the_schedule_waits_for_a_commits_background_scan_and_asks_again(repo):
    """The hook's background scan of a large commit and the schedule's scan at start-up were
    two full scans of one store at once: the schedule now waits for the hook's and finds the
    store scanned."""
    from dmm.fsutil import file_lock
    from dmm.hooks.run import LOCK_NAME

    _pair(repo)
    _settings(repo, "[scan]\nperiodic_enabled = true\nscan_at_startup = true\n")
    plan = schedule.Schedule(repo.root, threading.Event())
    assert plan.due(first=True) == "full"  # never scanned
    with file_lock(repo.ws.shared_state_dir / LOCK_NAME):  # the hook's scan is running
        stepping = threading.Thread(target=plan.step, args=(True,))
        stepping.start()
        stepping.join(1.0)
        assert stepping.is_alive() and _scans(repo) == []  # it waits, it does not scan
        assert repo.dmm("conflicts", "scan", "--full").returncode == 0  # as the hook's would
    stepping.join(60)
    assert not stepping.is_alive() and _scans(repo) == ["full"]  # nothing due: no second scan
