"""Benchmark write-back as whole processes on a synthetic store (run on demand).

    python tests/benchmarks/bench_writeback.py --size 10000 [--runs 5]

Reports medians of `dmm write propose`, `dmm review process X` (every automated check,
including the duplicate check against the whole store, then the merge), and the cost of usage
logging inside `dmm query` (query with and without logging).
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
from common import DMM, byte_compile, make_repo, timed  # noqa: E402

NEW = """---
tags: [benchmark, retries]
priority: 0.6
confidence: active
---

# Benchmark proposal {i}: outbound calls to partner {i} retry with jittered backoff

Calls to partner system {i} retry at most {i} times with jittered exponential backoff starting
at {i}00 ms. {filler}

Why: partner {i} rate-limits bursts, and synchronized retries made an outage worse.
"""


def usage_log_cost(root: Path, query: str, runs: int) -> list[float]:
    """Seconds that logging one query's pack costs, measured in-process (one call per run)."""
    from dmm import config
    from dmm.index.refresh import open_fresh
    from dmm.query.pack import PackOptions, build_pack
    from dmm.usage.log import log_query
    from dmm.workspace import Workspace

    ws = Workspace(root)
    conn, _ = open_fresh(ws)
    pack = build_pack(conn, query, PackOptions(budget=1200), config.DEFAULTS["query"])
    conn.close()
    costs = []
    for _ in range(runs):
        start = time.perf_counter()
        log_query(ws, pack, 100)
        costs.append(time.perf_counter() - start)
    return costs


def main() -> None:
    byte_compile()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dmm_bench_wb_"))
    try:
        make_repo(tmp, args.size)
        subprocess.run(DMM + ["reindex"], cwd=tmp, check=True, capture_output=True)
        time.sleep(2.1)
        propose, process = [], []
        for i in range(args.runs):
            text = NEW.format(i=i, filler=f"Partner {i} documents its limits. " * 40)
            start = time.perf_counter()
            proc = subprocess.run(DMM + ["write", "propose", "--path", f"project/bench/p{i}.md",
                                         "--reason", "benchmark"], cwd=tmp, input=text,
                                  capture_output=True, text=True, check=True)
            propose.append(time.perf_counter() - start)
            pid = proc.stdout.strip()
            process.append(timed(DMM + ["review", "process", pid], tmp)[0])
        time.sleep(2.1)
        query = "how do we retry failed payment jobs"
        queries = [timed(DMM + ["query", query, "--json"], tmp)[0] for _ in range(args.runs * 3)]
        log_costs = usage_log_cost(tmp, query, args.runs * 3)
        ms = lambda v: f"{statistics.median(v) * 1000:.0f} ms"  # noqa: E731
        share = statistics.median(log_costs) / statistics.median(queries)
        print("| memories | write propose | review process ID | query (whole process) "
              "| usage logging inside it |")
        print("|---:|---:|---:|---:|---:|")
        print(f"| {args.size:,} | {ms(propose)} | {ms(process)} | {ms(queries)} | "
              f"{statistics.median(log_costs) * 1000:.1f} ms ({share:.1%}) |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
