"""Benchmark the foundation commands as whole processes on synthetic stores (run on demand).

    python tests/benchmarks/bench_foundation.py --sizes 100,1000,10000 [--runs 10]
    python tests/benchmarks/bench_foundation.py --reads --sizes 10000,50000 --runs 10 \
        [--baseline /path/to/main/.venv/bin/python]

For each size it makes a temporary git repository, runs `dmm init`, generates the store,
commits it, and reports medians of: `python -c pass` (the floor), `dmm query` with a fresh
cache and its peak memory, `dmm query` right after one memory file changed, `dmm reindex` from
nothing, and `dmm status` on an unchanged store. Figures go to stdout as a markdown table.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (DMM, add_baseline_option, byte_compile, make_repo,  # noqa: E402
                    report_reads, timed)

QUERIES = ["how do we retry failed payment jobs", "which timeout applies to outbound requests",
           "may I deploy on friday", "where do secrets for the api live",
           "what is the rate limit for tenants"]


def bench(size: int, runs: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"dmm_bench_{size}_"))
    try:
        files = make_repo(tmp, size)
        out: dict = {"size": size}
        out["python"] = statistics.median(timed([sys.executable, "-c", "pass"], tmp)[0]
                                          for _ in range(runs))
        reindex = []
        for _ in range(3):
            shutil.rmtree(tmp / ".git" / "dmm", ignore_errors=True)
            reindex.append(timed(DMM + ["reindex"], tmp)[0])
        out["reindex"] = statistics.median(reindex)
        time.sleep(2.1)  # let the files age past the cache's racy-mtime window
        timed(DMM + ["status"], tmp)
        query, rss = [], []
        for i in range(runs):
            t, r = timed(DMM + ["query", QUERIES[i % len(QUERIES)], "--budget", "1200"], tmp)
            query.append(t)
            rss.append(r)
        out["query"] = statistics.median(query)
        out["query_json"] = statistics.median(
            timed(DMM + ["query", QUERIES[i % len(QUERIES)], "--json"], tmp)[0]
            for i in range(runs))
        out["query_rss_mib"] = max(rss) / 1024
        changed = []
        for i in range(min(runs, 5)):
            target = files[(i * 7919) % len(files)]
            target.write_text(target.read_text(encoding="utf-8") + f"\nEdited {i}.\n",
                              encoding="utf-8")
            changed.append(timed(DMM + ["query", QUERIES[i % len(QUERIES)]], tmp)[0])
        out["query_after_change"] = statistics.median(changed)
        time.sleep(2.1)
        timed(DMM + ["status"], tmp)
        out["status"] = statistics.median(timed(DMM + ["status"], tmp)[0] for _ in range(runs))
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    byte_compile()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--reads", action="store_true",
                    help="only `dmm list` and `dmm status`, per install (--baseline), "
                         "without and with a background process")
    ap.add_argument("--rounds", type=int, default=2)
    add_baseline_option(ap)
    args = ap.parse_args()
    if args.reads:
        report_reads(args, {"list": ["list"], "list --json": ["list", "--json"],
                             "status": ["status"]})
        return
    rows = [bench(int(s), args.runs) for s in args.sizes.split(",")]
    ms = lambda v: f"{v * 1000:.0f} ms"  # noqa: E731
    print("| memories | python -c pass | query (fresh cache) | query --json | query peak RSS "
          "| query after 1 change | reindex from nothing | status (unchanged) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['size']:,} | {ms(r['python'])} | {ms(r['query'])} | {ms(r['query_json'])} "
              f"| {r['query_rss_mib']:.0f} MiB | {ms(r['query_after_change'])} "
              f"| {r['reindex']:.2f} s | {ms(r['status'])} |")


if __name__ == "__main__":
    main()
