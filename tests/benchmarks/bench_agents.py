"""Benchmark what agents pay: a `memory_query` round trip through a running `dmm mcp` server
(warm: the server is started once), a `POST /query` through a running `dmm serve` (one client),
the `UserPromptSubmit` hook end to end (a process fed the hook's JSON, as Claude Code runs it),
and the same query as a `dmm query` process, side by side on one store (run on demand).

    python tests/benchmarks/bench_agents.py --sizes 1000,10000 [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_http import serving  # noqa: E402
from common import DMM, TASKS, byte_compile, pct, timed, warm_store  # noqa: E402


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


def hook_runs(root: Path, runs: int) -> list[float]:
    import json
    import subprocess

    times = []
    for i in range(runs):
        payload = json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": str(root),
                              "prompt": TASKS[i % len(TASKS)]})
        t = time.perf_counter()
        proc = subprocess.run([*DMM, "agent", "hook", "user-prompt-submit"], cwd=root,
                              input=payload, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        assert proc.returncode == 0 and not proc.stdout.startswith("(dmm:"), proc.stdout
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    byte_compile()
    print("| memories | MCP start + first query | MCP memory_query p50 | p95 "
          "| HTTP POST /query p50 | p95 | UserPromptSubmit hook p50 | p95 "
          "| `dmm query` process p50 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        with warm_store(size, "dmm-bench-agents-") as root:
            ready, trips = mcp_round_trips(root, args.runs)
            with serving(root) as http:
                _, posts = http(1, args.runs)
            hooks = hook_runs(root, min(args.runs, 20))
            procs = [timed([*DMM, "query", TASKS[i % len(TASKS)], "--json"], root)[0]
                     for i in range(min(args.runs, 15))]
        ms = lambda v: f"{v * 1000:.0f} ms"  # noqa: E731
        print(f"| {size:,} | {ms(ready)} | {ms(statistics.median(trips))} "
              f"| {ms(pct(trips, 0.95))} | {ms(statistics.median(posts))} "
              f"| {ms(pct(posts, 0.95))} | {ms(statistics.median(hooks))} "
              f"| {ms(pct(hooks, 0.95))} | {ms(statistics.median(procs))} |")

if __name__ == "__main__":
    main()
