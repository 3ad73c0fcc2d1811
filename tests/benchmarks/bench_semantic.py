"""Benchmark the semantic layer (issue 27), before and after, in one run (on demand).

    python tests/benchmarks/bench_semantic.py --sizes 1000,10000 --embed 10000 --runs 10
    python tests/benchmarks/bench_semantic.py --sizes 50000 --runs 5      # synthetic vectors
    python tests/benchmarks/bench_semantic.py --sizes 1000,10000,50000 --runs 10 \
        --baseline /path/to/main/.venv/bin/python                      # two installs compared

For each size: a synthetic store (tests/benchmarks/generate.py) in a temporary repository.
With ``--baseline``, each figure is measured for both installs on the same store, in
alternating rounds (``--rounds``), rows "before" (the baseline) and "after" (this checkout).
Within a row, "by words" is dmm with DMM_SEMANTIC=off and "with the process" the default, where
`dmm query` and the hooks ask the repository's background process. Reported:

- `dmm query` as a whole process: wall and CPU (user+sys of that process; the background
  process's own CPU per query is reported beside it), and `python -c pass` of this venv;
- the UserPromptSubmit hook (`dmm agent hook user-prompt-submit`) as a whole process;
- a warm in-process query (what `dmm mcp` / `dmm serve` / the background process do), for
  tasks it was asked before and for tasks whose words it never saw;
- the first full semantic index (`dmm reindex`, real embedding) for sizes given in --embed
  (with --pinned-too, first with the pinned model, then with the default int8 one);
  other sizes get random unit vectors written straight into the vector cache (timing of the
  query only: the cost of a cosine does not depend on the values; never a quality figure);
- re-embedding one changed memory (in process: refresh + sync).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import shutil
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from common import (DMM, add_baseline_option, byte_compile,  # noqa: E402
                    byte_compile_install, daemon_pid, dmm_of, installs, load, make_repo,
                    stop_daemon, synthetic_vectors)

QUERIES = ["how do we retry failed payment jobs", "which timeout applies to outbound requests",
           "may I deploy on friday", "where do secrets for the api live",
           "what is the rate limit for tenants"]
FRESH_TASKS = ["rotate the signing keys of the billing service", "why is the nightly export slow",
               "who owns the feature flags for checkout", "cache headers for static assets",
               "migrate the sessions table without downtime", "which queue carries audit events",
               "how are invoices numbered per tenant", "retention of access logs",
               "add pagination to the search endpoint", "backoff for the partner webhook"]


def run(cmd, cwd, env=None, stdin=None) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys) of one whole process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            env={**os.environ, **(env or {})})
    if stdin:
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed: {proc.stderr.read().decode()}")
    return wall, usage.ru_utime + usage.ru_stime


def daemon_cpu(root: Path) -> float:
    fields = Path(f"/proc/{daemon_pid(root)}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))


def in_process(root: Path, runs: int, semantic: bool, python: str = sys.executable,
               ) -> tuple[float, float]:
    """Median seconds of a warm query in a long-lived process (of the install of
    ``python``): tasks it was asked before, and tasks whose words it never saw."""
    code = f"""
import json, statistics, sys, time
from pathlib import Path
from dmm.workspace import Workspace
from dmm.query.run import memory_pack
from dmm.semantic import service
ws = Workspace(Path({str(root)!r}))
if {semantic}:
    service.enable()
memory_pack(ws, "warm up")
out = []
qs = {QUERIES!r}
for q in qs:
    memory_pack(ws, q)  # each task's words once: what a process that has served a while holds
for i in range({runs}):
    t = time.perf_counter(); p = memory_pack(ws, qs[i % len(qs)]); out.append(time.perf_counter() - t)
    assert p.ranking == ("words+meaning" if {semantic} else "words"), p.notes
new = []
for q in {FRESH_TASKS!r}:  # words this process was never asked
    t = time.perf_counter(); p = memory_pack(ws, q); new.append(time.perf_counter() - t)
print(statistics.median(out), statistics.median(new))
"""
    env = {**os.environ, "DMM_SEMANTIC": "on" if semantic else "off"}
    out = subprocess.run([python, "-c", code], cwd=root, env=env, check=True,
                         capture_output=True, text=True).stdout
    repeated, fresh = out.strip().splitlines()[-1].split()
    return float(repeated), float(fresh)


def reembed_one(root: Path, files: list[Path]) -> float:
    code = f"""
import time
from pathlib import Path
from dmm.workspace import Workspace
from dmm.index.refresh import open_fresh
from dmm.semantic.index import SemanticIndex
ws = Workspace(Path({str(root)!r}))
idx = SemanticIndex(ws.shared_state_dir, threads=2)
conn, _ = open_fresh(ws); idx.sync(conn); conn.close()
target = Path({str(files[len(files) // 2])!r})
target.write_text(target.read_text() + "\\nOne more sentence about retries.\\n")
t = time.perf_counter()
conn, _ = open_fresh(ws); n = idx.sync(conn); conn.close()
assert n == 1, n
print(time.perf_counter() - t)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=root, check=True,
                         env={**os.environ, "DMM_SEMANTIC": "on"},
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def measure(root: Path, python: str, runs: int) -> dict:
    """One install's figures on the store at ``root`` (its own background process)."""
    dmm = dmm_of(python)
    off = {"DMM_SEMANTIC": "off"}
    hook_input = json.dumps({"prompt": QUERIES[0]})
    r: dict = {}
    stop_daemon(root)
    r["before_query"] = [run([*dmm, "query", QUERIES[i % 5]], root, off) for i in range(runs)]
    r["before_hook"] = [run([*dmm, "agent", "hook", "user-prompt-submit"], root, off,
                            hook_input) for _ in range(runs)]
    r["before_warm"], r["before_warm_new"] = zip(in_process(root, runs, False, python))
    run([*dmm, "query", "start the background process"], root)
    cpu0 = daemon_cpu(root)
    r["after_query"] = [run([*dmm, "query", QUERIES[i % 5]], root) for i in range(runs)]
    r["daemon_cpu_per_query"] = [(daemon_cpu(root) - cpu0) / runs]
    r["after_hook"] = [run([*dmm, "agent", "hook", "user-prompt-submit"], root, None,
                           hook_input) for _ in range(runs)]
    r["after_warm"], r["after_warm_new"] = zip(in_process(root, runs, True, python))
    stop_daemon(root)
    return r


def bench(size: int, runs: int, embed: bool, baseline: str | None, rounds: int,
          pinned_too: bool = False) -> list[dict]:
    """Rows for ``size``: one per install, measured in alternating rounds on one store."""
    tmp = Path(tempfile.mkdtemp(prefix=f"dmm_sem_{size}_"))
    try:
        files = make_repo(tmp, size)
        run([*DMM, "reindex"], tmp, {"DMM_SEMANTIC": "off"})
        time.sleep(2.1)  # past the cache's racy-mtime window
        python = [run([sys.executable, "-c", "pass"], tmp) for _ in range(runs)]
        first: dict = {}
        if embed and pinned_too:  # the pinned model first, then its vectors are dropped
            first["pinned_wall"], first["pinned_cpu"] = run([*DMM, "reindex"], tmp,
                                                            {"DMM_SEMANTIC_INT8": "off"})
            (tmp / ".git" / "dmm" / "semantic.sqlite3").unlink()
        if embed:
            first["index_wall"], first["index_cpu"] = run([*DMM, "reindex"], tmp)
        else:
            synthetic_vectors(tmp)
        samples: dict[str, dict] = {label: {} for label, _ in installs(baseline)}
        for _ in range(rounds):
            for label, py in installs(baseline):
                for key, values in measure(tmp, py, runs).items():
                    samples[label].setdefault(key, []).extend(values)
        rows = []
        for label, _ in installs(baseline):
            got = samples[label]
            row = {"size": size, "install": label, "python": medians(python), **first,
                   "daemon_cpu_per_query": statistics.median(got["daemon_cpu_per_query"]),
                   **{k: statistics.median(got[k]) for k in (
                       "before_warm", "after_warm", "before_warm_new", "after_warm_new")}}
            for key in ("before_query", "before_hook", "after_query", "after_hook"):
                row[key] = medians(got[key])
            rows.append(row)
        if embed:
            rows[-1]["reembed_one"] = reembed_one(tmp, files)
        return rows
    finally:
        stop_daemon(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    byte_compile()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--embed", default="", help="sizes whose index is really embedded")
    ap.add_argument("--pinned-too", action="store_true",
                    help="first index with the pinned model too (DMM_SEMANTIC_INT8=off), "
                         "then with the default int8 one, on the same store")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds per install, alternating (medians over all)")
    add_baseline_option(ap)
    args = ap.parse_args()
    if args.baseline:
        byte_compile_install(args.baseline)
    embed = {int(s) for s in args.embed.split(",") if s}
    print(f"started: {load()}", flush=True)
    rows = [row for s in args.sizes.split(",")
            for row in bench(int(s), args.runs, int(s) in embed, args.baseline, args.rounds,
                             args.pinned_too)]
    ms = lambda v: f"{v * 1000:.0f}"  # noqa: E731
    print(f"finished: {load()}")
    print("| memories | install | python -c pass wall/CPU ms | query by words wall/CPU ms "
          "(x pass CPU) | query (background process) wall/CPU ms (x pass CPU) + its CPU ms "
          "| hook by words / with the process ms | warm in-process query by words / with "
          "meaning ms | the same, new words | first index | re-embed one |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        p = r["python"][1]
        index = (f"{r['index_wall']:.0f} s wall, {r['index_cpu']:.0f} s CPU"
                 if "index_wall" in r else "synthetic vectors")
        if "pinned_wall" in r:
            index += f" (pinned model: {r['pinned_wall']:.0f} s wall, {r['pinned_cpu']:.0f} s CPU)"
        print(f"| {r['size']:,} | {r['install'] or '-'} | {ms(r['python'][0])}/{ms(p)} "
              f"| {ms(r['before_query'][0])}/{ms(r['before_query'][1])} "
              f"({r['before_query'][1] / p:.1f}x) "
              f"| {ms(r['after_query'][0])}/{ms(r['after_query'][1])} "
              f"({r['after_query'][1] / p:.1f}x) + {ms(r['daemon_cpu_per_query'])} "
              f"| {ms(r['before_hook'][0])}/{ms(r['after_hook'][0])} "
              f"| {ms(r['before_warm'])}/{ms(r['after_warm'])} "
              f"| {ms(r['before_warm_new'])}/{ms(r['after_warm_new'])} | {index} "
              f"| {ms(r['reembed_one']) + ' ms' if 'reembed_one' in r else '-'} |")


if __name__ == "__main__":
    main()
