"""What asking the writer costs: finding a proposed memory's neighbours (dmm.proposals.neighbours,
the words-only ranking a one-off `dmm write propose` uses) on a synthetic store, in process, and
the whole `dmm write propose --json` command with and without that step.

    python tests/benchmarks/bench_relations.py --size 10000 [--runs 20]
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
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from common import DMM, pct, warm_store  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    os.environ["DMM_SEMANTIC"] = "off"  # a one-off command ranks by words
    from dmm.index.refresh import open_fresh
    from dmm.memory.parse import parse_memory
    from dmm.proposals.neighbours import nearest
    from dmm.workspace import Workspace

    with warm_store(args.size, "dmm-bench-relations-") as root:
        ws = Workspace(root)
        files = sorted((ws.memory_dir / "project").rglob("*.md"))[:args.runs]
        conn, _ = open_fresh(ws)
        took = []
        for path in files:
            rel = path.relative_to(ws.memory_dir).as_posix()
            memory, _ = parse_memory(path.read_text(), rel)
            start = time.perf_counter()
            found = nearest(ws, conn, memory, exclude=(rel,))
            took.append((time.perf_counter() - start) * 1000)
            assert len(found) <= 5
        conn.close()
        print(f"{args.size} memories: neighbours of one proposal (words only, in process): "
              f"median {statistics.median(took):.1f} ms, p95 {pct(took, 0.95):.1f} ms "
              f"over {len(took)} memories")
        walls = []
        for n, path in enumerate(files[:5]):
            text = path.read_text().replace("\nid: ", "\nold_id: ", 1)
            start = time.perf_counter()
            proc = subprocess.run([*DMM, "write", "propose", "--path", f"project/bench_{n}.md",
                                   "--reason", "bench", "--json"], cwd=root, input=text,
                                  capture_output=True, text=True)
            walls.append((time.perf_counter() - start) * 1000)
            out = json.loads(proc.stdout)
            assert "neighbours" in out, proc.stderr
        print(f"`dmm write propose --json` wall time: median {statistics.median(walls):.0f} ms "
              f"over {len(walls)} proposals")


if __name__ == "__main__":
    main()
