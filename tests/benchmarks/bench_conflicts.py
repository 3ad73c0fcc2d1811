"""Benchmark conflict detection as whole processes on synthetic stores (run on demand).

    python tests/benchmarks/bench_conflicts.py --sizes 100,1000,10000 [--runs 5]
    python tests/benchmarks/bench_conflicts.py --list-only --sizes 10000 --runs 20 \
        [--baseline /path/to/main/.venv/bin/python]
    python tests/benchmarks/bench_conflicts.py --full-only --sizes 10000,50000 --runs 1 \
        [--baseline /path/to/main/.venv/bin/python]

Reports medians of: `dmm conflicts scan --full`; the incremental scan after a commit that
changes one memory (`dmm conflicts scan`, what the post-commit hook runs); `dmm conflicts
list`; and the time the hooks add to a `git commit` that does not touch .dmm/ (the same commit
with and without the hooks installed, interleaved).

--full-only: `dmm conflicts scan --full` per install (--baseline), alternating on one store per
size: peak resident memory, CPU and wall time, the conflicts found and a digest of them (ids,
pairs, types, methods, confidences of `dmm conflicts list --json`: equal digests, equal
findings).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (DMM, add_baseline_option, byte_compile, byte_compile_install,  # noqa: E402
                    dmm_of, installs, load, make_repo, report_reads, timed)


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


def full_scans(size: int, baseline: str | None, runs: int) -> list[dict]:
    """Full scans of one store of ``size`` memories by each install, alternating."""
    tmp = Path(tempfile.mkdtemp(prefix=f"dmm_bench_cf_full_{size}_"))
    env = {**os.environ, "DMM_SEMANTIC": "off"}
    try:
        make_repo(tmp, size)
        subprocess.run([*DMM, "reindex"], cwd=tmp, check=True, capture_output=True, env=env)
        time.sleep(2.1)
        got: dict[str, dict] = {}
        for _ in range(runs):
            for label, python in installs(baseline):
                dmm = dmm_of(python)
                row = got.setdefault(label, {"install": label, "size": size, "peak": [],
                                             "cpu": [], "wall": []})
                start = time.perf_counter()
                proc = subprocess.Popen([*dmm, "conflicts", "scan", "--full"], cwd=tmp, env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                _, status, usage = os.wait4(proc.pid, 0)
                if os.waitstatus_to_exitcode(status) != 0:
                    raise SystemExit(f"{label}: scan failed: {proc.stderr.read().decode()}")
                row["wall"].append(time.perf_counter() - start)
                row["peak"].append(usage.ru_maxrss / 1024)
                row["cpu"].append(usage.ru_utime + usage.ru_stime)
                listed = json.loads(subprocess.run(
                    [*dmm, "conflicts", "list", "--json", "--limit", "1000000"], cwd=tmp,
                    env=env, check=True, capture_output=True).stdout)["conflicts"]
                row["conflicts"], row["digest"] = len(listed), digest(listed)
        return list(got.values())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def digest(listed: list[dict]) -> str:
    """What a scan found, as a short digest: every field of every conflict (id, memories and
    roles, type, method, confidence, description, evidence) but when it was detected."""
    rows = sorted(json.dumps({k: v for k, v in c.items() if k != "detected_at"}, sort_keys=True)
                  for c in listed)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()[:12]


def report_full(args) -> None:
    if args.baseline:
        byte_compile_install(args.baseline)
    print(f"started: {load()}", flush=True)
    rows = [r for s in args.sizes.split(",") for r in full_scans(int(s), args.baseline,
                                                                   args.runs)]
    print(f"finished: {load()}")
    print("| memories | install | peak RSS | CPU | wall | conflicts | digest |")
    print("|---:|---|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['size']:,} | {r['install'] or '-'} | {statistics.median(r['peak']):.0f} MiB "
              f"| {statistics.median(r['cpu']):.1f} s | {statistics.median(r['wall']):.1f} s "
              f"| {r['conflicts']:,} | {r['digest']} |")


def main() -> None:
    byte_compile()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--list-only", action="store_true",
                    help="only `dmm conflicts list`, per install (--baseline), without and "
                         "with a background process")
    ap.add_argument("--full-only", action="store_true",
                    help="only `dmm conflicts scan --full`, per install (--baseline): peak "
                         "memory, CPU and wall time, conflicts found")
    ap.add_argument("--rounds", type=int, default=2)
    add_baseline_option(ap)
    args = ap.parse_args()
    if args.full_only:
        report_full(args)
        return
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
