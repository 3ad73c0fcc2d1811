"""Benchmark the incremental conflict scan and the post-commit hook on a large store (on demand).

    DMM_SEMANTIC=off python tests/benchmarks/bench_incremental.py --size 10000 \
        --keep /tmp/dmm_bench_inc [--runs 5] [--many 400] [--profile out.prof]
    DMM_SEMANTIC=off python tests/benchmarks/bench_incremental.py --store /tmp/me/s50k \
        --baseline /path/to/main/bin/python --baseline-store /tmp/me/s50k_main --many 0

Builds (or, with --keep, reuses: a 50,000-memory store costs minutes to generate, commit and
scan fully) a repository of ``--size`` synthetic memories with dmm's hooks installed and a full
scan done, or uses the one ``--store`` names (a copy: the benchmark commits to it), then
reports medians of:

- ``duration_ms`` of `dmm conflicts scan --json` after one memory changed (the incremental
  scan), and the command's wall time;
- the wall time of `git commit` of one changed memory, post-commit hook included;
- the wall time of `git commit` of ``--many`` changed memories (the hook must hand the scan
  to the background), and how long after the commit the scan's conflicts are listed.

--profile writes cProfile statistics of one incremental scan, run in this process.

--baseline (the python of another install, e.g. main's) with --baseline-store (its own copy
of the store: each install keeps its cache there, of its own schema) measures both, alternating
run by run, and prints each figure for 'before' and 'after'. The post-commit hook runs the dmm
of the install measured (DMM_HOOK_COMMAND), whichever install put the hook there.
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
from common import DMM, dmm_of, load, make_repo  # noqa: E402

ENV = {**os.environ, "DMM_SEMANTIC": "off"}


def run(root: Path, *cmd: str, dmm: list[str] = DMM) -> subprocess.CompletedProcess:
    """``cmd`` in ``root``, the post-commit hook running ``dmm``."""
    return subprocess.run(cmd, cwd=root, check=True, capture_output=True, text=True,
                          env={**ENV, "DMM_HOOK_COMMAND": dmm[0]})


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


def incremental(root: Path, files: list[Path], i: int, dmm: list[str] = DMM) -> tuple[int, float]:
    """(duration_ms, wall in s) of the incremental scan after the ``i``-th edit."""
    edit(files[(i * 7919 + 13) % len(files)], f"scan {time.time_ns()}")
    settle()
    start = time.perf_counter()
    out = run(root, *dmm, "conflicts", "scan", "--json", dmm=dmm).stdout
    wall = time.perf_counter() - start
    result = json.loads(out)
    assert result["scan_type"] == "incremental", result["scan_type"]
    # committed without the hook: the next round starts from a scanned, clean tree
    run(root, "git", "-c", "core.hooksPath=/dev/null", "commit", "-qam", "edit")
    return result["duration_ms"], wall


def commit_one(root: Path, files: list[Path], i: int, dmm: list[str] = DMM) -> float:
    """Wall time (s) of `git commit` of the ``i``-th changed memory, the hook included."""
    edit(files[(i * 104729 + 7) % len(files)], f"commit {time.time_ns()}")
    settle()
    run(root, "git", "add", "-A", ".dmm/memory")
    start = time.perf_counter()
    run(root, "git", "commit", "-qm", "one memory", dmm=dmm)
    return time.perf_counter() - start


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
    ap.add_argument("--store", type=Path, help="an existing repository with hooks installed "
                    "and a full scan done (a copy: the benchmark commits to it)")
    ap.add_argument("--baseline", metavar="PYTHON", help="the python of another install of "
                    "dmm, measured alternately on --baseline-store ('before')")
    ap.add_argument("--baseline-store", type=Path, help="the baseline's copy of the store")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--many", type=int, default=400, help="memories of the large commit "
                    "(0: skip it)")
    ap.add_argument("--profile", help="write cProfile statistics of one incremental scan here")
    args = ap.parse_args()
    if bool(args.baseline) != bool(args.baseline_store):
        ap.error("--baseline and --baseline-store go together")
    os.environ["DMM_SEMANTIC"] = "off"
    root = args.store or store(args.keep, args.size)
    files = memory_files(root)
    print(f"started: {load()}", flush=True)
    if args.profile:
        profile(root, files, args.profile)
        return
    measured = [("after" if args.baseline else "", root, DMM)]
    if args.baseline:
        measured.insert(0, ("before", args.baseline_store, dmm_of(args.baseline)))
    size = f"{len(files):,}"
    scans: dict[str, list] = {label: [] for label, _, _ in measured}
    commits: dict[str, list] = {label: [] for label, _, _ in measured}
    for i in range(args.runs):  # installs alternate run by run: the load changes meanwhile
        for label, where, dmm in measured:
            scans[label].append(incremental(where, memory_files(where), i, dmm))
    for label, _, _ in measured:
        durations = [d for d, _ in scans[label]]
        walls = [w for _, w in scans[label]]
        print(f"{label} incremental scan at {size}: duration_ms median "
              f"{statistics.median(durations)} (all: {durations}); `dmm conflicts scan` wall "
              f"{statistics.median(walls):.2f} s", flush=True)
    print(f"({load()})", flush=True)
    for i in range(args.runs):
        for label, where, dmm in measured:
            commits[label].append(commit_one(where, memory_files(where), i, dmm))
    for label, _, _ in measured:
        walls = commits[label]
        print(f"{label} git commit of one memory at {size} (hook included): median "
              f"{statistics.median(walls):.2f} s (all: {', '.join(f'{w:.2f}' for w in walls)})",
              flush=True)
    if args.many:
        wall, until, said = commit_many(root, files, args.many)
        print(f"git commit of {args.many} memories: {wall:.2f} s; scan done "
              f"{until:.1f} s after the commit started; the hook said: {said!r}")
    print(f"finished: {load()}")


if __name__ == "__main__":
    main()
