"""Conflict scans on a schedule (seed 000 section 5.9, its ``ScanConfig``), run by the
long-lived processes: the repository's background process and `dmm serve`.

``[scan] scan_at_startup``: as such a process starts, the scan is brought up to date when the
memories changed since the last one (or none was ever made). ``periodic_enabled``: the whole
store is scanned again when the cache's last full scan is older than
``periodic_interval_hours``; judged by that scan's time, not by the process's, so a process that
restarts often does not scan more often. (``incremental_on_commit`` is read by git's
post-commit hook, dmm/hooks/run.py.)

Each scan is its own process (`dmm conflicts scan`, at low priority): a scan is seconds of
Python that, inside the process answering prompts, would hold the interpreter while a prompt
waits; and it starts only after QUIET_S without a request. Its result goes where every scan's
goes: the work tree's cache and the clone's shared results (conflicts/shared.py). One scan at a
time per work tree, whichever process runs the schedule (an flock in its state folder).

IO: reads the cache's scan history and the settings; starts `dmm conflicts scan` processes.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

CHECK_S = 60.0  # how often the schedule is looked at (a due scan starts within this)
QUIET_S = 5.0  # a scan waits for this long without a request (a prompt is never slowed)
QUIET_ENV = "DMM_SCAN_QUIET_S"  # seconds instead (tests)
LOCK = "scan-schedule.lock"


def last_full_scan(conn: sqlite3.Connection) -> dt.datetime | None:
    """When the cache's last full scan started (UTC), or None."""
    from dmm.conflicts import store

    for record in store.scans(conn, 50):
        if record.get("scan_type") == "full":
            try:
                when = dt.datetime.fromisoformat(str(record.get("started_at")))
            except ValueError:
                continue
            return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)
    return None


def periodic_due(last: dt.datetime | None, now: dt.datetime, hours: float) -> bool:
    """Whether a periodic full scan is due: none made yet, or the last one ``hours`` old."""
    return last is None or now - last >= dt.timedelta(hours=hours)


def startup_due(conn: sqlite3.Connection, cfg: dict) -> bool:
    """Whether the scan is behind the memories (or was never made, or with other settings)."""
    from dmm.conflicts import store
    from dmm.conflicts.analyzers import fingerprint

    changed = store.changed_since_scan(conn, fingerprint(cfg))
    return changed is None or bool(changed[0]) or changed[1]


def quiet_s() -> float:
    try:
        return max(0.0, float(os.environ.get(QUIET_ENV) or QUIET_S))
    except ValueError:
        return QUIET_S


class Schedule:
    """The schedule of one work tree (``root``), run in a thread until ``stop`` is set.
    ``idle()`` says how long the process has gone without a request (None: never wait)."""

    def __init__(self, root: Path, stop: threading.Event,
                 idle: Callable[[], float] | None = None) -> None:
        self.root, self.stop, self.idle = root, stop, idle

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, daemon=True, name="dmm-scan-schedule")
        thread.start()
        return thread

    def run(self) -> None:
        first = True
        while not self.stop.is_set():
            try:
                self.step(first)
            except Exception as exc:  # noqa: BLE001 - a schedule never takes its process down
                self._say(f"dmm: scheduled scan skipped: {type(exc).__name__}: {exc}")
            first = False
            if self.stop.wait(CHECK_S):
                return

    def due(self, first: bool) -> str | None:
        """"full", "update" or None: the scan the settings and the cache ask for now."""
        from dmm.index.refresh import open_fresh
        from dmm.workspace import Workspace

        ws = Workspace(self.root)  # the settings as they are now
        cfg = ws.config["scan"]
        if not (cfg["periodic_enabled"] or (first and cfg["scan_at_startup"])):
            return None
        conn, _ = open_fresh(ws)
        try:
            if cfg["periodic_enabled"] and periodic_due(
                    last_full_scan(conn), dt.datetime.now(dt.timezone.utc),
                    float(cfg["periodic_interval_hours"])):
                return "full"
            if first and cfg["scan_at_startup"] and startup_due(conn, ws.config["conflicts"]):
                return "update"
        finally:
            conn.close()
        return None

    def step(self, first: bool) -> None:
        if self.due(first) is None:
            return
        while self.idle is not None and self.idle() < quiet_s():
            if self.stop.wait(max(0.05, quiet_s() - self.idle())):
                return
        from dmm.fsutil import file_lock
        from dmm.hooks.run import LOCK_NAME
        from dmm.workspace import Workspace

        # a commit's background scan (hooks/run.py) may be making this very scan: after it
        # ends, what is still due is asked again (a first commit's scan is a full one)
        with file_lock(Workspace(self.root).shared_state_dir / LOCK_NAME):
            kind = self.due(first)
            if kind is not None:
                self.scan(full=kind == "full")

    def scan(self, full: bool) -> int | None:
        """Run `dmm conflicts scan` (``--full``) for the work tree, at low priority, unless
        another process's schedule is scanning it; its exit status, or None when skipped."""
        import fcntl

        from dmm.fsutil import open_nofollow, state_folder
        from dmm.workspace import Workspace

        folder = state_folder(Workspace(self.root).state_dir)
        fd = open_nofollow(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # another schedule scans it now
            args = [sys.executable, "-I", "-m", "dmm", "-C", str(self.root), "conflicts",
                    "scan", *(["--full"] if full else [])]
            self._say(f"dmm: scheduled {'full' if full else 'incremental'} conflict scan")
            # its report is not read; its errors go where this process's go (the background
            # process's log, `dmm serve`'s stderr)
            return subprocess.run(args, cwd=self.root, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, preexec_fn=_nice,
                                  check=False).returncode
        finally:
            os.close(fd)

    def _say(self, line: str) -> None:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}", file=sys.stderr, flush=True)


def _nice() -> None:
    try:
        os.nice(10)  # the person's and the agent's commands come first
    except OSError:
        pass
