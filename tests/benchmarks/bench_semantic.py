"""Benchmark the semantic layer (issue 27), before and after, in one run (on demand).

    python tests/benchmarks/bench_semantic.py --sizes 1000,10000 --embed 10000 --runs 10
    python tests/benchmarks/bench_semantic.py --sizes 50000 --runs 5      # synthetic vectors

For each size: a synthetic store (tests/benchmarks/generate.py) in a temporary repository.
"before" is dmm answering by words (DMM_SEMANTIC=off: what every release before this one did);
"after" is the default, with the background process and the semantic index. Reported:

- `dmm query` as a whole process: wall and CPU (user+sys of that process; the background
  process's own CPU per query is reported beside it), and `python -c pass` of this venv;
- the UserPromptSubmit hook (`dmm agent hook user-prompt-submit`) as a whole process;
- a warm in-process query (what `dmm mcp` / `dmm serve` / the background process do);
- the first full semantic index (`dmm reindex`, real embedding) for sizes given in --embed;
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
from common import DMM, byte_compile, make_repo  # noqa: E402

QUERIES = ["how do we retry failed payment jobs", "which timeout applies to outbound requests",
           "may I deploy on friday", "where do secrets for the api live",
           "what is the rate limit for tenants"]


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
    from dmm.semantic import client

    pid = client.ask(root, root / ".dmm/index", {"op": "hello"}, start_if_absent=False)["pid"]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))


def synthetic_vectors(root: Path) -> None:
    """Random unit vectors for every memory, stored as the index would store them."""
    import numpy as np

    from dmm.index.refresh import open_fresh
    from dmm.semantic import chunks, model, vectors
    from dmm.workspace import Workspace

    ws = Workspace(root)
    conn, _ = open_fresh(ws)
    rng = np.random.default_rng(7)
    rows = []
    for title, body in conn.execute("SELECT m.title, b.body FROM memories m JOIN bodies b "
                                    "ON b.doc = m.doc"):
        n = len(chunks.passages(title, body))
        v = rng.standard_normal((n, model.DIMENSION)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        rows.append((chunks.text_key(model.MODEL_ID, title, body), n,
                     v.astype(np.float16).tobytes()))
    store = vectors.connect(ws.index_dir)
    vectors.store(store, rows)
    store.close()
    conn.close()


def in_process(root: Path, runs: int, semantic: bool) -> float:
    """Median ms of a warm query in a long-lived process."""
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
for i in range({runs}):
    t = time.perf_counter(); p = memory_pack(ws, qs[i % len(qs)]); out.append(time.perf_counter() - t)
    assert p.ranking == ("words+meaning" if {semantic} else "words"), p.notes
print(statistics.median(out))
"""
    env = {**os.environ, "DMM_SEMANTIC": "on" if semantic else "off"}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def reembed_one(root: Path, files: list[Path]) -> float:
    code = f"""
import time
from pathlib import Path
from dmm.workspace import Workspace
from dmm.index.refresh import open_fresh
from dmm.semantic.index import SemanticIndex
ws = Workspace(Path({str(root)!r}))
idx = SemanticIndex(ws.index_dir, threads=2)
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


def bench(size: int, runs: int, embed: bool) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"dmm_sem_{size}_"))
    r: dict = {"size": size}
    try:
        files = make_repo(tmp, size)
        off = {"DMM_SEMANTIC": "off"}
        run([*DMM, "reindex"], tmp, off)
        time.sleep(2.1)  # past the cache's racy-mtime window
        r["python"] = medians([run([sys.executable, "-c", "pass"], tmp) for _ in range(runs)])
        hook_input = json.dumps({"prompt": QUERIES[0]})
        r["before_query"] = medians([run([*DMM, "query", QUERIES[i % 5]], tmp, off)
                                     for i in range(runs)])
        r["before_hook"] = medians([run([*DMM, "agent", "hook", "user-prompt-submit"], tmp,
                                        off, hook_input) for _ in range(runs)])
        r["before_warm"] = in_process(tmp, runs, False)
        if embed:
            r["index_wall"], r["index_cpu"] = run([*DMM, "reindex"], tmp)
        else:
            synthetic_vectors(tmp)
        run([*DMM, "query", "start the background process"], tmp)
        cpu0 = daemon_cpu(tmp)
        after = [run([*DMM, "query", QUERIES[i % 5]], tmp) for i in range(runs)]
        r["daemon_cpu_per_query"] = (daemon_cpu(tmp) - cpu0) / runs
        r["after_query"] = medians(after)
        r["after_hook"] = medians([run([*DMM, "agent", "hook", "user-prompt-submit"], tmp,
                                       None, hook_input) for _ in range(runs)])
        r["after_warm"] = in_process(tmp, runs, True)
        if embed:
            r["reembed_one"] = reembed_one(tmp, files)
        from tests.semantic.conftest import stop_daemon

        stop_daemon(tmp)
        return r
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    byte_compile()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--embed", default="", help="sizes whose index is really embedded")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    embed = {int(s) for s in args.embed.split(",") if s}
    rows = [bench(int(s), args.runs, int(s) in embed) for s in args.sizes.split(",")]
    ms = lambda v: f"{v * 1000:.0f}"  # noqa: E731
    print("| memories | python -c pass wall/CPU ms | query before wall/CPU ms (x pass CPU) "
          "| query after wall/CPU ms (x pass CPU) + background CPU ms | hook before/after ms "
          "| warm query before/after ms | first index | re-embed one |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        p = r["python"][1]
        index = (f"{r['index_wall']:.0f} s wall, {r['index_cpu']:.0f} s CPU"
                 if "index_wall" in r else "synthetic vectors")
        print(f"| {r['size']:,} | {ms(r['python'][0])}/{ms(p)} "
              f"| {ms(r['before_query'][0])}/{ms(r['before_query'][1])} "
              f"({r['before_query'][1] / p:.1f}x) "
              f"| {ms(r['after_query'][0])}/{ms(r['after_query'][1])} "
              f"({r['after_query'][1] / p:.1f}x) + {ms(r['daemon_cpu_per_query'])} "
              f"| {ms(r['before_hook'][0])}/{ms(r['after_hook'][0])} "
              f"| {ms(r['before_warm'])}/{ms(r['after_warm'])} | {index} "
              f"| {ms(r['reembed_one']) + ' ms' if 'reembed_one' in r else '-'} |")


if __name__ == "__main__":
    main()
