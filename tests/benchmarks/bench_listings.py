"""The everyday listing commands on a ready store, as a person runs them from a terminal (each a
new process): `dmm list`, `conflicts list` and `log` (a page of 50), `status`, `review list` and
`usage top`, with no background process running (every command walks `.dmm/memory/`) and
with one running (it vouches for the cache: docs/cache.md), model off.

    python tests/benchmarks/bench_listings.py STORE [STORE...] [--baseline PYTHON] [--runs 5]

STORE: a repository with its cache built, such as a copy of a store scale_store.py made
(`cp -a /tmp/dmm_scale_stores/50000/after /tmp/me/s50k`; never the original: commands write
the cache). Both installs must read the same cache schema. With --baseline (another install's
python, e.g. main's) each figure is measured for both, alternating run by run, so that they
share the machine's load. Prints medians of wall time and CPU (user + system) per command.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import (byte_compile_install, daemon_pid, dmm_of, installs, load,  # noqa: E402
                    stop_daemon)

COMMANDS = {
    "list --limit 50 --json": ["list", "--limit", "50", "--json"],
    "conflicts list --limit 50 --json": ["conflicts", "list", "--limit", "50", "--json"],
    "status --json": ["status", "--json"],
    "log --limit 50 --json": ["log", "--limit", "50", "--json"],
    "review list --json": ["review", "list", "--json"],
    "usage top --json": ["usage", "top", "--json"],
}
OFF = {**os.environ, "DMM_SEMANTIC": "off"}
# no command starts a background process (the line is above any cache): every one walks
NO_PROCESS = {**OFF, "DMM_WORDS_PROCESS_BYTES": str(1 << 60)}


def once(cmd: list[str], root: Path, env: dict) -> tuple[float, float]:
    """Wall and CPU time (s) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_process(root: Path, python: str) -> None:
    """A background process for ``root``, started as a command at a large store starts one,
    then left to settle (its warm-up and scheduled scans done: its CPU still for 3 s)."""
    subprocess.run([*dmm_of(python), "list", "--limit", "1"], cwd=root, env=OFF,
                   capture_output=True, check=True)
    deadline = time.monotonic() + 30
    while daemon_pid(root) is None:
        if time.monotonic() > deadline:
            raise SystemExit(f"no background process started for {root}")
        time.sleep(0.1)
    pid = daemon_pid(root)
    last, still = cpu_of(pid), 0
    deadline = time.monotonic() + 600
    while still < 3 and time.monotonic() < deadline:
        time.sleep(1)
        now = cpu_of(pid)
        still = still + 1 if now - last < 0.05 else 0
        last = now


def measure(root: Path, baseline: str | None, runs: int) -> dict:
    got: dict[tuple, list[tuple[float, float]]] = {}
    pythons = installs(baseline)
    for background in (False, True):
        stop_daemon(root)
        if background:
            start_process(root, pythons[-1][1])  # this install's (the baseline never asks)
        env = OFF if background else NO_PROCESS
        for name, args in COMMANDS.items():
            for _, python in pythons:
                once([*dmm_of(python), *args], root, env)  # once, unmeasured
            for _ in range(runs):
                for label, python in pythons:
                    got.setdefault((background, name, label), []).append(
                        once([*dmm_of(python), *args], root, env))
    stop_daemon(root)
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--baseline", help="the python of another install, measured alternately")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    for _, python in installs(args.baseline):  # neither pays for compiling its modules
        byte_compile_install(python)
    print(f"started: {load()}", flush=True)
    for root in args.stores:
        got = measure(root.resolve(), args.baseline, args.runs)
        print(f"\n{root} ({load()})")
        print("| command | background process | install | wall p50 | CPU p50 |")
        print("|---|---|---|---:|---:|")
        for (background, name, label), values in got.items():
            wall = statistics.median(v[0] for v in values)
            cpu = statistics.median(v[1] for v in values)
            print(f"| `dmm {name}` | {'running' if background else 'none'} | "
                  f"{label or 'this'} | {wall * 1000:,.0f} ms | {cpu * 1000:,.0f} ms |",
                  flush=True)
    print(f"\nfinished: {load()}")


if __name__ == "__main__":
    main()
