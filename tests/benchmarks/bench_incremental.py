"""Benchmark the incremental conflict scan and the post-commit hook on a large store (on demand).

    DMM_SEMANTIC=off python tests/benchmarks/bench_incremental.py --size 10000 \
        --keep /tmp/dmm_bench_inc [--runs 5] [--many 400] [--profile out.prof]

Builds (or, with --keep, reuses: a 50,000-memory store costs minutes to generate, commit and
scan fully) a repository of ``--size`` synthetic memories with dmm's hooks installed and a full
scan done, then reports medians of:

- ``duration_ms`` of `dmm conflicts scan --json` after one memory changed (the incremental
  scan), and the command's wall time;
- the wall time of `git commit` of one changed memory, post-commit hook included;
- the wall time of `git commit` of ``--many`` changed memories (the hook must hand the scan
  to the background), and how long after the commit the scan's conflicts are listed.

--profile writes cProfile statistics of one incremental scan, run in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DMM, load, make_repo  # noqa: E402

ENV = {**os.environ, "DMM_SEMANTIC": "off"}


def run(root: Path, *cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=root, check=True, capture_output=True, text=True, env=ENV)


def store(keep: Path | None, size: int) -> Path:
    """A repository of ``size`` memories, hooks installed, fully scanned (reused when kept)."""
    import tempfile

    base = keep or Path(tempfile.mkdtemp(prefix="dmm_bench_inc_"))
    root = base / f"repo{size}"
    if (root / ".dmm" / "ready").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    make_repo(root, size)
    run(root, *DMM, "hooks", "install")
    run(root, *DMM, "conflicts", "scan", "--full")
    (root / ".dmm" / "ready").write_text("")  # untracked: .dmm/memory/ holds the memories
    print(f"store of {size:,} built in {time.perf_counter() - started:.0f} s", flush=True)
    return root


def memory_files(root: Path) -> list[Path]:
    return sorted((root / ".dmm" / "memory").rglob("*.md"))


def edit(path: Path, tag: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\nRevised {tag}: retry at most "
                    "3 times.\n", encoding="utf-8")


def settle() -> None:
    time.sleep(2.1)  # past the cache's racy-mtime window, as a person's next command would be


def incremental(root: Path, files: list[Path], runs: int) -> tuple[list[int], list[float]]:
    durations, walls = [], []
    for i in range(runs):
        edit(files[(i * 7919 + 13) % len(files)], f"scan {time.time_ns()}")
        settle()
        start = time.perf_counter()
        out = run(root, *DMM, "conflicts", "scan", "--json").stdout
        walls.append(time.perf_counter() - start)
        result = json.loads(out)
        durations.append(result["duration_ms"])
        assert result["scan_type"] == "incremental", result["scan_type"]
        # committed without the hook: the next round starts from a scanned, clean tree
        run(root, "git", "-c", "core.hooksPath=/dev/null", "commit", "-qam", "edit")
    return durations, walls


def commit_one(root: Path, files: list[Path], runs: int) -> list[float]:
    walls = []
    for i in range(runs):
        edit(files[(i * 104729 + 7) % len(files)], f"commit {time.time_ns()}")
        settle()
        run(root, "git", "add", "-A", ".dmm/memory")
        start = time.perf_counter()
        run(root, "git", "commit", "-qm", "one memory")
        walls.append(time.perf_counter() - start)
    return walls


def commit_many(root: Path, files: list[Path], many: int) -> tuple[float, float, str]:
    """(wall of the commit, seconds until a scan is no longer needed, the hook's stderr)."""
    step = max(1, len(files) // many)
    for path in files[::step][:many]:
        edit(path, f"many {time.time_ns()}")
    settle()
    run(root, "git", "add", "-A", ".dmm/memory")
    start = time.perf_counter()
    done = run(root, "git", "commit", "-qm", f"{many} memories")
    wall = time.perf_counter() - start
    while True:  # the scan is done when the last scan recorded covers the commit
        if scanned(root):
            break
        time.sleep(0.5)
    return wall, time.perf_counter() - start, done.stderr.strip()


def scanned(root: Path) -> bool:
    """Whether the cache's last scan saw the memories as they are (read-only, no scan)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from dmm.conflicts import store as cstore
    from dmm.conflicts.analyzers import fingerprint
    from dmm.index import db
    from dmm.workspace import Workspace

    import fcntl

    ws = Workspace(root)
    lock = ws.shared_state_dir / "hook-scan.lock"
    if lock.exists():  # a background scan holds it while it runs
        with open(lock) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
    if not (ws.state_dir / db.DB_NAME).exists():
        return False
    conn = db.connect(ws.state_dir)
    try:
        delta = cstore.changed_since_scan(conn, fingerprint(ws.config["conflicts"]))
        return delta is not None and not delta[0] and not delta[1]
    finally:
        conn.close()


def profile(root: Path, files: list[Path], out: str) -> None:
    import cProfile

    from dmm.conflicts.service import run_scan
    from dmm.index.refresh import open_fresh
    from dmm.workspace import Workspace

    edit(files[len(files) // 3], f"profile {time.time_ns()}")
    settle()
    ws = Workspace(root)
    conn, _ = open_fresh(ws)
    prof = cProfile.Profile()
    prof.enable()
    result = run_scan(ws, conn)
    prof.disable()
    conn.close()
    prof.dump_stats(out)
    print(f"profiled: {result.scan_type} scan, duration_ms {result.duration_ms}")
    run(root, "git", "-c", "core.hooksPath=/dev/null", "commit", "-qam", "edit")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--keep", type=Path, help="build the store here once and reuse it")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--many", type=int, default=400, help="memories of the large commit "
                    "(0: skip it)")
    ap.add_argument("--profile", help="write cProfile statistics of one incremental scan here")
    args = ap.parse_args()
    os.environ["DMM_SEMANTIC"] = "off"
    root = store(args.keep, args.size)
    files = memory_files(root)
    print(f"started: {load()}", flush=True)
    if args.profile:
        profile(root, files, args.profile)
        return
    durations, walls = incremental(root, files, args.runs)
    print(f"incremental scan at {args.size:,}: duration_ms median {statistics.median(durations)}"
          f" (all: {durations}); `dmm conflicts scan` wall {statistics.median(walls):.2f} s",
          flush=True)
    commits = commit_one(root, files, args.runs)
    print(f"git commit of one memory (hook included): median {statistics.median(commits):.2f} s"
          f" (all: {', '.join(f'{w:.2f}' for w in commits)})", flush=True)
    if args.many:
        wall, until, said = commit_many(root, files, args.many)
        print(f"git commit of {args.many} memories: {wall:.2f} s; scan done "
              f"{until:.1f} s after the commit started; the hook said: {said!r}")
    print(f"finished: {load()}")


if __name__ == "__main__":
    main()
