"""Scale benchmark: 10,000 / 50,000 / 100,000 memories of a realistic store (scale_store.py).

For each size it reports the first (lexical) index, a full conflict scan (CPU, wall, peak
memory, conflicts found), an incremental scan and a commit (post-commit hook) after one changed
memory, a query process, the first page of `dmm list` and `dmm conflicts list`, the conflict
query itself (in process), `dmm status`, and `dmm list --json` of the whole store; then the
growth exponent of each figure between sizes (1: linear in the store; 0: independent of it).

    python tests/benchmarks/bench_scale.py --sizes 10000,50000 [--baseline PYTHON] [--runs 5]

Stores are generated once under --stores (default /tmp/dmm_scale_stores) and reused by later
runs (delete the folder to start over): generating and committing 100,000 files takes minutes.
With --baseline (the python of another install, e.g. main's), each install works on its own
copy of each store (a `git clone`: the two caches' schemas may differ, and each would rebuild
the other's), measured alternately. Everything runs with DMM_SEMANTIC=off; with --semantic,
only a first semantic index of each size's store is measured instead (see docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import byte_compile_install, dmm_of, installs, load  # noqa: E402
from scale_store import generate  # noqa: E402

ENV = {**os.environ, "DMM_SEMANTIC": "off"}
TASK = "how many times does the worker retry a failed job"


def run(cmd: list[str], cwd: Path, env: dict | None = None) -> dict:
    """Wall time (s) of one process and its stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env or ENV)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return {"wall": wall, "out": out}


def run_measured(cmd: list[str], cwd: Path, env: dict | None = None) -> dict:
    """run() with CPU (s, user + system, with the children it waited for) and peak RSS (MiB),
    as wait4 reports them for the child."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env or ENV)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode()[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mib": usage.ru_maxrss / 1024, "out": out}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def store_for(size: int, stores: Path, label: str, python: str,
              copy_of: str | None = None, convert: str | None = None) -> tuple[Path, dict]:
    """The repository of ``size`` memories for the install ``label`` (generated once, then
    cloned per install), its cache built and fully scanned by that install; what its set-up
    measured (first index, full scan), kept beside it so a later run reports them too.
    ``copy_of``: instead, a copy (files, times and cache) of that label's repository, whose
    cache the SQL ``convert`` turns into this install's schema (the first index and the full
    scan are then that install's figures: same code, and minutes saved at 50,000)."""
    origin = stores / f"{size}" / "origin"
    ready = origin.parent / "planted.json"  # written last: the store is complete
    if not ready.exists():
        subprocess.run(["rm", "-rf", str(origin)], check=True)
        origin.mkdir(parents=True)
        git(origin, "init", "-q", "-b", "main")
        git(origin, "config", "user.name", "bench")
        git(origin, "config", "user.email", "bench@example.com")
        run([*dmm_of(python), "init", "--no-hooks"], origin)
        planted = generate(origin / ".dmm" / "memory", size)
        git(origin, "add", "-A")
        git(origin, "commit", "-qm", "store")
        ready.write_text(json.dumps(planted.__dict__))
    root = stores / f"{size}" / (label or "after")
    facts = root.parent / f"{label or 'after'}.json"
    if not facts.exists() and copy_of:
        subprocess.run(["rm", "-rf", str(root)], check=True)
        subprocess.run(["cp", "-a", str(root.parent / copy_of), str(root)], check=True)
        cache = sqlite3.connect(root / ".git" / "dmm" / "cache.sqlite3")
        cache.executescript(convert or "")
        cache.close()
        run([*dmm_of(python), "hooks", "install"], root)
        copied = json.loads((root.parent / f"{copy_of}.json").read_text())
        facts.write_text(json.dumps({**copied, "copied_from": copy_of}))
    if not facts.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
        git(origin.parent, "clone", "-q", "--no-hardlinks", str(origin), str(root))
        git(root, "config", "user.name", "bench")
        git(root, "config", "user.email", "bench@example.com")
        dmm = dmm_of(python)
        index = run_measured([*dmm, "reindex"], root)
        scan = run_measured([*dmm, "conflicts", "scan", "--full", "--json"], root)
        found = json.loads(scan["out"])
        run([*dmm, "hooks", "install"], root)
        facts.write_text(json.dumps({
            "index_wall": index["wall"], "index_cpu": index["cpu"],
            "scan_wall": scan["wall"], "scan_cpu": scan["cpu"], "scan_rss": scan["rss_mib"],
            "conflicts": found.get("conflicts_detected"),
            "planted": json.loads(ready.read_text())}))
    return root, json.loads(facts.read_text())


def change_one(root: Path, n: int) -> str:
    """Append a sentence to one memory (a different one each time); its path."""
    files = sorted((root / ".dmm" / "memory" / "project").rglob("*.md"))
    path = files[(n * 7919) % len(files)]
    with path.open("a", encoding="utf-8") as f:
        f.write(f"\nRevisited in round {n}: still holds.\n")
    return str(path.relative_to(root))


CONFLICT_QUERY = """
import sys, time
from dmm.conflicts import store
from dmm.conflicts.model import OPEN
from dmm.index.refresh import open_fresh
from dmm.workspace import Workspace
from pathlib import Path
ws = Workspace(Path(sys.argv[1]))
conn, _ = open_fresh(ws)
closed = {c for c, d in store.decisions(ws.conflicts_dir).items() if d.get("status") not in OPEN}
times = []
for _ in range(5):
    start = time.perf_counter()
    store.query(conn, exclude=closed, limit=50)
    times.append(time.perf_counter() - start)
print(sorted(times)[2])
"""

# each command of READS run again inside one warm process (click's runner), and the walk of
# the store's files alone: what a command costs beyond Python's start, its imports and the
# freshness walk, the figures a loaded machine distorts least
IN_PROCESS = """
import json, os, statistics, sys, time
from pathlib import Path
from click.testing import CliRunner
from dmm import store
from dmm.cli import cli
root = Path(sys.argv[1])
os.chdir(root)
out = {}
start = time.perf_counter()
for _ in range(3):
    store.scan(root / ".dmm" / "memory")
out["walk of the store's files (in process)"] = (time.perf_counter() - start) / 3
runner = CliRunner()
for name, args in json.loads(sys.argv[2]).items():
    runner.invoke(cli, args)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        result = runner.invoke(cli, args)
        times.append(time.perf_counter() - start)
        assert result.exit_code == 0, result.output
    out[name + " (in process)"] = statistics.median(times)
print(json.dumps(out))
"""

READS = {  # name -> dmm arguments (each a whole process)
    "query": ["query", TASK, "--json"],
    "list first page": ["list", "--limit", "50", "--json"],
    "list --json (all)": ["list", "--json"],
    "conflicts list first page": ["conflicts", "list", "--limit", "50", "--json"],
    "status": ["status", "--json"],
    "log first page": ["log", "--limit", "50", "--json"],
    "usage top": ["usage", "top", "--json"],
    "review list": ["review", "list", "--json"],
}


def measure(size: int, root: Path, python: str, runs: int, round_no: int) -> dict:
    dmm = dmm_of(python)
    got: dict[str, list[float]] = {}
    for name, args in READS.items():
        run([*dmm, *args], root)  # once, unmeasured
        got[name] = [run([*dmm, *args], root)["wall"] for _ in range(runs)]
    got["conflict query (in process)"] = [float(run(
        [python, "-c", CONFLICT_QUERY, str(root)], root)["out"])]
    warm = {name: args for name, args in READS.items() if name != "query"}
    for name, value in json.loads(run([python, "-c", IN_PROCESS, str(root), json.dumps(warm)],
                                      root)["out"]).items():
        got[name] = [value]
    got["python -c pass"] = [run([python, "-c", "pass"], root)["wall"] for _ in range(runs)]
    for i in range(max(1, runs // 2)):
        change_one(root, round_no * 100 + i)
        time.sleep(0.05)
        scan = run([*dmm, "conflicts", "scan", "--json"], root)
        got.setdefault("incremental scan (duration_ms)", []).append(
            json.loads(scan["out"])["duration_ms"] / 1000)
        got.setdefault("incremental scan (process)", []).append(scan["wall"])
        path = change_one(root, round_no * 100 + 50 + i)
        git(root, "add", path)
        got.setdefault("commit with hook", []).append(
            run(["git", "commit", "-qm", f"change {i}"], root,
                {**ENV, "DMM_HOOK_COMMAND": dmm[0]})["wall"])
    return got


def first_semantic(root: Path, python: str) -> dict:
    """A first semantic index of the store at ``root``, on a copy whose vectors are removed:
    `dmm reindex` with the model on, less the same reindex with it off run on the copy just
    before (the lexical part). Minutes per 10,000 memories: the model embeds every passage."""
    copy = root.parent / "semantic-copy"
    subprocess.run(["rm", "-rf", str(copy)], check=True)
    subprocess.run(["cp", "-a", str(root), str(copy)], check=True)
    try:
        reindex = [*dmm_of(python), "reindex", "--json"]
        lexical = run_measured(reindex, copy)
        # the vector cache (dmm/semantic/vectors.py: DB_NAME) in the clone's shared folder
        (copy / ".git" / "dmm" / "semantic.sqlite3").unlink(missing_ok=True)
        both = run_measured(reindex, copy, {**os.environ, "DMM_SEMANTIC": "on"})
    finally:
        subprocess.run(["rm", "-rf", str(copy)], check=True)
    return {"embedded": json.loads(both["out"])["embedded"],
            "cpu": both["cpu"] - lexical["cpu"], "wall": both["wall"] - lexical["wall"],
            "rss_mib": both["rss_mib"]}


def exponent(small: tuple[int, float], big: tuple[int, float]) -> float:
    return math.log(big[1] / small[1]) / math.log(big[0] / small[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,50000")
    ap.add_argument("--stores", type=Path, default=Path("/tmp/dmm_scale_stores"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--baseline", metavar="PYTHON",
                    help="the python of another install (e.g. main's): rows 'before'/'after'")
    ap.add_argument("--baseline-cache-sql", metavar="SQL",
                    help="with --baseline: its store is a copy of this install's, cache and "
                         "all, converted by SQL (e.g. \"DROP INDEX conflicts_rank; ... PRAGMA "
                         "user_version = 9\"): no second first index and full scan")
    ap.add_argument("--semantic", action="store_true",
                    help="instead: a first semantic index of each size's store, this install")
    args = ap.parse_args()
    for _, python in installs(args.baseline):
        byte_compile_install(python)
    print(f"started: {load()}", flush=True)
    if args.semantic:
        for size in (int(s) for s in args.sizes.split(",")):
            root, _ = store_for(size, args.stores, "", sys.executable)
            got = first_semantic(root, sys.executable)
            print(f"{size:,} memories: {got['embedded']:,} embedded, CPU {got['cpu']:.0f} s, "
                  f"wall {got['wall']:.0f} s, peak RSS {got['rss_mib']:.0f} MiB; {load()}",
                  flush=True)
        return
    table: dict[tuple[str, str], dict[int, float]] = {}
    facts: dict[tuple[str, int], dict] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        roots = {}
        for label, python in reversed(installs(args.baseline)):  # this install first
            copy = "after" if label == "before" and args.baseline_cache_sql else None
            roots[label] = store_for(size, args.stores, label, python, copy,
                                     args.baseline_cache_sql)
        for label, (_, f) in roots.items():
            facts[(label, size)] = f
            for key, name in (("index_cpu", "first index, lexical (CPU s)"),
                              ("index_wall", "first index, lexical (wall s)"),
                              ("scan_cpu", "full scan (CPU s)"),
                              ("scan_rss", "full scan peak RSS (MiB)")):
                table.setdefault((name, label), {})[size] = f[key]
        samples: dict[tuple[str, str], list[float]] = {}
        for round_no in range(args.rounds):
            for label, python in installs(args.baseline):
                got = measure(size, roots[label][0], python, args.runs, round_no)
                for name, values in got.items():
                    samples.setdefault((name, label), []).extend(values)
        for key, values in samples.items():
            table.setdefault(key, {})[size] = statistics.median(values)
        print(f"{size:,} done: {load()}", flush=True)
    print(f"finished: {load()}\n")
    for (label, size), f in sorted(facts.items()):
        planted = f["planted"]
        print(f"{label or 'this'} {size:,}: {f['conflicts']} conflicts found by a full scan "
              f"({f['conflicts'] * 1000 / size:.0f} per 1,000); planted: "
              f"{planted['contradictions']} contradictions, {planted['duplicates']} "
              f"near-duplicates; kinds {planted['kinds']}")
    sizes = sorted({s for v in table.values() for s in v})
    print("\n| figure | install | " + " | ".join(f"{s:,}" for s in sizes)
          + " | growth exponent |")
    print("|---|---|" + "---:|" * (len(sizes) + 1))
    for (name, label), by_size in table.items():
        cells = []
        for s in sizes:
            v = by_size.get(s)
            cells.append("" if v is None else (f"{v:.0f}" if "MiB" in name or "(CPU s)" in name
                                               or "wall s" in name else f"{v * 1000:.0f} ms"))
        known = sorted(by_size.items())
        growth = (f"{exponent(known[0], known[-1]):.2f}"
                  if len(known) > 1 and known[0][1] > 0 else "")
        print(f"| {name} | {label or '-'} | " + " | ".join(cells) + f" | {growth} |")


if __name__ == "__main__":
    main()
