"""Benchmark what agents pay: a `memory_query` round trip through a running `dmm mcp` server
(warm: the server is started once), side by side with the same query as a `dmm query`
process (run on demand).

    python tests/benchmarks/bench_agents.py --sizes 1000,10000 [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DMM, byte_compile, make_repo, timed  # noqa: E402

TASKS = ["add retries with backoff to the partner client", "how are invoices numbered",
         "which database migrations need a review", "rotate the api keys of a service"]


def mcp_round_trips(root: Path, runs: int) -> tuple[float, list[float]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def main():
        started = time.perf_counter()
        params = StdioServerParameters(command=DMM[0], args=["mcp"], cwd=str(root))
        async with Client(params) as client:
            await client.call_tool("memory_query", {"task": "warm up"})
            ready = time.perf_counter() - started
            times = []
            for i in range(runs):
                t = time.perf_counter()
                result = await client.call_tool("memory_query", {"task": TASKS[i % len(TASKS)],
                                                                 "budget": 1200})
                times.append(time.perf_counter() - t)
                assert not result.is_error, result.content[0].text
            return ready, times

    return asyncio.run(main())


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    byte_compile()
    print("| memories | MCP start + first query | MCP memory_query p50 | p95 | `dmm query` process p50 |")
    print("|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        tmp = Path(tempfile.mkdtemp(prefix="dmm-bench-agents-"))
        try:
            root = tmp / "repo"
            root.mkdir()
            make_repo(root, size)
            timed([*DMM, "query", "warm the cache"], root)
            ready, trips = mcp_round_trips(root, args.runs)
            procs = [timed([*DMM, "query", TASKS[i % len(TASKS)], "--json"], root)[0]
                     for i in range(min(args.runs, 15))]
            print(f"| {size:,} | {ready * 1000:.0f} ms | {statistics.median(trips) * 1000:.1f} ms"
                  f" | {pct(trips, 0.95) * 1000:.1f} ms | {statistics.median(procs) * 1000:.0f} ms |")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
