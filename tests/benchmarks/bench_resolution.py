"""Benchmark conflict resolution as whole processes on a synthetic store (run on demand).

    python tests/benchmarks/bench_resolution.py --size 10000 [--runs 5]

Reports medians of `dmm conflicts resolve ID --action A` for every action, of `dmm conflicts
undo`, and of `dmm conflicts resolve --auto --dry-run`. "settled": the cache was refreshed and
scanned before (as after any other command); "back to back": right after the previous
resolution, so the command first rescans the memories that resolution changed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DMM, byte_compile, make_repo, timed  # noqa: E402

ACTIONS = {
    "deprecate": lambda c: ["--target", c["memories"][1]["memory_id"]],
    "merge": lambda c: ["--content", "# Merged benchmark memory\n\nOne rule from two.\n"],
    "clarify": lambda c: ["--clarify", f"{c['memories'][0]['memory_id']}=the benchmark only"],
    "dismiss": lambda c: [],
    "defer": lambda c: [],
}


def bench(size: int, runs: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"dmm_bench_res_{size}_"))
    run = lambda *c: subprocess.run(c, cwd=tmp, check=True, capture_output=True)  # noqa
    try:
        make_repo(tmp, size)
        run(*DMM, "conflicts", "scan", "--full")
        listed = json.loads(run(*DMM, "conflicts", "list", "--json", "--limit", "1000").stdout)
        # pairs with no memory in common, so that one resolution does not change another
        pool, used = [], set()
        for c in listed["conflicts"]:
            ids = {m["memory_id"] for m in c["memories"]}
            if not ids & used:
                pool.append(c)
                used |= ids
        need = len(ACTIONS) * runs * 2
        if len(pool) < need:
            raise SystemExit(f"only {len(pool)} independent conflicts, need {need}")
        out: dict = {"size": size}
        for mode in ("settled", "back to back"):
            for action, extra in ACTIONS.items():
                times = []
                for _ in range(runs):
                    c = pool.pop()
                    if mode == "settled":
                        time.sleep(1.1)  # past the cache's racy-mtime window
                        run(*DMM, "conflicts", "list", "--limit", "1")
                    times.append(timed(DMM + ["conflicts", "resolve", c["conflict_id"],
                                              "--action", action, "--reason", "benchmark",
                                              *extra(c)], tmp)[0])
                    out.setdefault("undo_ids", []).append(c["conflict_id"])
                out[(mode, action)] = statistics.median(times)
        undo = []
        for cid in out.pop("undo_ids")[:runs]:
            time.sleep(1.1)
            run(*DMM, "conflicts", "list", "--limit", "1")
            undo.append(timed(DMM + ["conflicts", "undo", cid, "--reason", "benchmark"], tmp)[0])
        out["undo"] = statistics.median(undo)
        out["auto"] = statistics.median(timed(DMM + ["conflicts", "resolve", "--auto",
                                                     "--dry-run"], tmp)[0] for _ in range(runs))
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    byte_compile()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    r = bench(args.size, args.runs)
    ms = lambda v: f"{v * 1000:.0f} ms"  # noqa: E731
    print(f"{args.size:,} memories, median of {args.runs}\n")
    print("| | " + " | ".join(ACTIONS) + " |")
    print("|---|" + "---:|" * len(ACTIONS))
    for mode in ("settled", "back to back"):
        print(f"| {mode} | " + " | ".join(ms(r[(mode, a)]) for a in ACTIONS) + " |")
    print(f"\nundo (settled): {ms(r['undo'])}; resolve --auto --dry-run: {ms(r['auto'])}")


if __name__ == "__main__":
    main()
