"""Benchmark the judge's scans on synthetic stores against the stand-in model (run on demand).

    python tests/benchmarks/bench_judge.py --sizes 1000,10000

Per size: `dmm conflicts scan --full --include-rule-extraction` (pairs sent, wall time and the
wall time without the model's: the stand-in answers at once, and its seconds are subtracted
anyway), the same scan again (cache hits, pairs sent: none), and the incremental scan after a
commit that changes one memory (`dmm conflicts scan --include-rule-extraction`: pairs sent,
at most [judge] k beside the pairs the rules flagged). The stand-in is the tests' llm plugin
(tests/judge/standin), loaded by the `dmm` processes through LLM_LOAD_PLUGINS; no network.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import DMM, byte_compile, load, make_repo  # noqa: E402

STANDIN = HERE.parent / "judge" / "standin"


def scan(root: Path, env: dict, *args: str) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run([*DMM, "conflicts", "scan", "--include-rule-extraction", "--json",
                           *args], cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"scan failed: {proc.stderr}")
    return wall, json.loads(proc.stdout)


def bench(size: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"dmm_bench_judge_{size}_"))
    home = tmp / "llm-home"
    env = {**os.environ, "DMM_SEMANTIC": "off", "PYTHONPATH": str(STANDIN),
           "LLM_LOAD_PLUGINS": "dmm-judge-standin", "LLM_USER_PATH": str(home)}
    try:
        files = make_repo(tmp, size)
        subprocess.run([*DMM, "reindex"], cwd=tmp, env=env, check=True, capture_output=True)
        config = tmp / ".dmm" / "config.toml"
        text = config.read_text()
        config.write_text(text[:text.index("\n[judge]")] + '\n[judge]\nenabled = true\n'
                          'model = "standin"\nmax_pairs = 1000000\nmax_tokens = 1000000000\n')
        subprocess.run(["git", "config", "dmm.judge", "standin"], cwd=tmp, check=True)
        out = {"size": size}
        wall, first = scan(tmp, env, "--full")
        j = first["judge"]
        out.update(full_wall=wall, full_without_model=wall - j["model_seconds"],
                   candidates=j["candidates"], sent=j["sent"], tokens=j["estimated_tokens"],
                   conflicts_judged=j["conflicts"])
        wall, again = scan(tmp, env, "--full")
        out.update(again_wall=wall, again_cached=again["judge"]["cached"],
                   again_sent=again["judge"]["sent"])
        target = files[len(files) // 2]
        target.write_text(target.read_text() + "\nRevised: the rule changed last week.\n")
        subprocess.run(["git", "commit", "-qam", "edit"], cwd=tmp, check=True,
                       capture_output=True)
        wall, inc = scan(tmp, env)
        out.update(incremental_wall=wall, incremental_sent=inc["judge"]["sent"],
                   incremental_candidates=inc["judge"]["candidates"],
                   incremental_type=inc["scan_type"])
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    byte_compile()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    args = ap.parse_args()
    print(f"started: {load()}", flush=True)
    rows = [bench(int(s)) for s in args.sizes.split(",")]
    print(f"finished: {load()}")
    print("| memories | full scan: pairs sent (tokens) | wall (without the model) "
          "| again: cache hits, sent, wall | one memory changed: pairs sent, wall |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['size']:,} | {r['sent']:,} ({r['tokens']:,}) | {r['full_wall']:.1f} s "
              f"({r['full_without_model']:.1f} s) | {r['again_cached']:,}, {r['again_sent']}, "
              f"{r['again_wall']:.1f} s | {r['incremental_sent']} of "
              f"{r['incremental_candidates']} ({r['incremental_type']}), "
              f"{r['incremental_wall']:.2f} s |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
