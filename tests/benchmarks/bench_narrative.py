"""Benchmark the narrative pass against the stand-in judge on synthetic stores (run on demand).

    python tests/benchmarks/bench_narrative.py --sizes 1000,10000

For each size: a repository with the synthetic store (one commit), the judge set to the
stand-in llm plugin of tests/judge/standin (no network, no key) with no token limit per run,
then `dmm conflicts scan --narrative --json` twice. Reports the batches of the story, the
batches sent, the estimated tokens sent, the answers left out, the conflicts stored and the
wall time of each run. The wall time includes the stand-in's answers (it compares the
sentences of every pair of facts in a batch, tens of milliseconds a batch); a real model takes
seconds a batch, so what is measured here is dmm's own cost. The second run is answered from
the cache: it sends nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from common import DMM, byte_compile, make_repo

STANDIN = Path(__file__).resolve().parents[1] / "judge" / "standin"


def judge_on(root: Path) -> None:
    """The stand-in as the judge, allowed on this clone, with no token limit per run (dmm init
    writes [judge] last)."""
    subprocess.run(["git", "config", "dmm.judge", "standin"], cwd=root, check=True)
    path = root / ".dmm" / "config.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[:text.index("\n[judge]")] + "\n[judge]\nenabled = true\n"
                    'model = "standin"\nmax_tokens = 1000000000\n', encoding="utf-8")


def narrative(root: Path, env: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run([*DMM, "conflicts", "scan", "--narrative", "--json"], cwd=root,
                          env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"dmm conflicts scan --narrative failed: {proc.stderr}")
    return elapsed, json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    args = ap.parse_args()
    byte_compile()
    for size in (int(s) for s in args.sizes.split(",")):
        tmp = Path(tempfile.mkdtemp(prefix="dmm-bench-narrative-"))
        try:
            root = tmp / "repo"
            root.mkdir()
            make_repo(root, size)
            judge_on(root)
            (tmp / "llm").mkdir()
            env = {**os.environ, "PYTHONPATH": str(STANDIN), "DMM_SEMANTIC": "off",
                   "LLM_LOAD_PLUGINS": "dmm-judge-standin", "LLM_USER_PATH": str(tmp / "llm")}
            subprocess.run([*DMM, "conflicts", "scan", "--full"], cwd=root, env=env,
                           check=True, capture_output=True)  # the rules first, as a store has
            for run in ("first", "second"):
                wall, r = narrative(root, env)
                print(f"{size} memories, {run} run: {r['batches']} batches, "
                      f"{r['batches_asked']} sent, {r['batches_cached']} from the cache, "
                      f"~{r['tokens_sent']:,} tokens sent, {len(r['dropped'])} answers left "
                      f"out, {r['conflicts_detected']} conflicts ({r['already_known']} already "
                      f"known), {wall:.1f} s")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
