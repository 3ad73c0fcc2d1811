"""Benchmark conflict detection as whole processes on synthetic stores (run on demand).

    python tests/benchmarks/bench_conflicts.py --sizes 100,1000,10000 [--runs 5]
    python tests/benchmarks/bench_conflicts.py --list-only --sizes 10000 --runs 20 \
        [--baseline /path/to/main/.venv/bin/python]

Reports medians of: `dmm conflicts scan --full`; the incremental scan after a commit that
changes one memory (`dmm conflicts scan`, what the post-commit hook runs); `dmm conflicts
list`; and the time the hooks add to a `git commit` that does not touch .dmm/ (the same commit
with and without the hooks installed, interleaved).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (DMM, add_baseline_option, byte_compile, make_repo,  # noqa: E402
                    report_reads, timed)


def bench(size: int, runs: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"dmm_bench_cf_{size}_"))
    run = lambda *c: subprocess.run(c, cwd=tmp, check=True, capture_output=True)  # noqa
    try:
        files = make_repo(tmp, size)
        run(*DMM, "reindex")
        time.sleep(2.1)
        out = {"size": size}
        out["full"] = statistics.median(timed(DMM + ["conflicts", "scan", "--full"], tmp)[0]
                                        for _ in range(max(1, runs // 2)))
        incremental = []
        for i in range(runs):
            target = files[(i * 7919) % len(files)]
            target.write_text(target.read_text() + f"\nRevised {i}.\n")
            run("git", "commit", "-qam", f"edit {i}")
            incremental.append(timed(DMM + ["conflicts", "scan"], tmp)[0])
        out["incremental"] = statistics.median(incremental)
        time.sleep(2.1)
        timed(DMM + ["conflicts", "list"], tmp)
        out["list"] = statistics.median(timed(DMM + ["conflicts", "list"], tmp)[0]
                                        for _ in range(runs))
        with_hooks, without = [], []
        for i in range(runs * 2):
            hooked = i % 2 == 0
            run(*DMM, "hooks", "install" if hooked else "uninstall")
            (tmp / "code.txt").write_text(f"change {i}\n")
            run("git", "add", "code.txt")
            start = time.perf_counter()
            run("git", "commit", "-qm", f"code {i}")
            (with_hooks if hooked else without).append(time.perf_counter() - start)
        out["hook_overhead"] = statistics.median(with_hooks) - statistics.median(without)
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def full_scan(root: Path) -> None:
    subprocess.run([*DMM, "conflicts", "scan", "--full"], cwd=root, check=True,
                   capture_output=True)


def main() -> None:
    byte_compile()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--list-only", action="store_true",
                    help="only `dmm conflicts list`, per install (--baseline), without and "
                         "with a background process")
    ap.add_argument("--rounds", type=int, default=2)
    add_baseline_option(ap)
    args = ap.parse_args()
    if args.list_only:
        report_reads(args, {"conflicts list": ["conflicts", "list"]}, full_scan)
        return
    rows = [bench(int(s), args.runs) for s in args.sizes.split(",")]
    ms = lambda v: f"{v * 1000:.0f} ms"  # noqa: E731
    print("| memories | full scan | incremental scan (1 changed) | conflicts list "
          "| hooks on a commit outside .dmm/ |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['size']:,} | {r['full']:.2f} s | {ms(r['incremental'])} | {ms(r['list'])} "
              f"| {ms(r['hook_overhead'])} |")


if __name__ == "__main__":
    main()
