"""Benchmark `dmm serve`: POST /query (the Memory Pack) against a running server, one client
and several at once, on stores of generated memories (run on demand).

    python tests/benchmarks/bench_http.py --sizes 1000,10000 [--requests 200] [--clients 1,8]
        [--baseline /path/to/main/.venv/bin/python --rounds 2]

The store gets random vectors (tests/benchmarks/common.py synthetic_vectors), so the server
ranks by words and meaning from its first request without embedding anything (timings only).

Requests per second and p50/p95 latency as a client measures them (connection, request,
the pack, the JSON), each client on its own keep-alive connection.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (DMM, TASKS, add_baseline_option, byte_compile,  # noqa: E402
                    byte_compile_install, dmm_of, installs, load, pct, synthetic_vectors,
                    warm_store)


@contextlib.contextmanager
def serving(root: Path, dmm: list[str] = DMM, env: dict | None = None,
            ) -> Iterator[Callable[[int, int], tuple[float, list[float]]]]:
    """A warm `dmm serve` in ``root``; yields burst(clients, total) against it."""
    proc = subprocess.Popen([*dmm, "serve", "--port", "0"], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, **(env or {})})
    try:
        port = int(re.search(r":(\d+) ", proc.stdout.readline()).group(1))
        ready(port)
        client(port, TASKS)  # warm the server
        yield lambda clients, total: burst(port, clients, total)
    finally:
        proc.terminate()
        proc.wait()


def ready(port: int, within: float = 120.0) -> None:
    """Wait until the server ranks by meaning (its vectors loaded) unless the layer is off."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("POST", "/query", json.dumps({"query": TASKS[0]}),
                     {"Content-Type": "application/json"})
        pack = json.loads(conn.getresponse().read())
        conn.close()
        if pack["stats"]["ranking"] == "words+meaning" or \
                os.environ.get("DMM_SEMANTIC") == "off":
            return
        time.sleep(0.5)
    raise SystemExit("the server never ranked by meaning")


def client(port: int, requests: list[str]) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.connect()
    # http.client writes the headers and the body apart: without TCP_NODELAY, Nagle's
    # algorithm and the server's delayed ACK add 40 ms to every request (curl and httpx
    # set it too)
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for task in requests:
        body = json.dumps({"query": task, "budget": 1200})
        t = time.perf_counter()
        conn.request("POST", "/query", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        data = response.read()
        times.append(time.perf_counter() - t)
        assert response.status == 200, data[:300]
    conn.close()
    return times


def burst(port: int, clients: int, total: int) -> tuple[float, list[float]]:
    per = [[TASKS[(c + i) % len(TASKS)] for i in range(total // clients)]
           for c in range(clients)]
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda r: client(port, r), per))
    wall = time.perf_counter() - started
    times = [t for r in results for t in r]
    return len(times) / wall, times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--clients", default="1,8")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds per install, alternating (with --baseline)")
    add_baseline_option(ap)
    args = ap.parse_args()
    byte_compile()
    if args.baseline:
        byte_compile_install(args.baseline)
    print(f"started: {load()}", flush=True)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        with warm_store(size, "dmm-bench-http-") as root:
            synthetic_vectors(root)  # the server has nothing to embed (timings only)
            got: dict[tuple, list] = {}
            for _ in range(args.rounds):
                for label, python in installs(args.baseline):
                    with serving(root, dmm_of(python)) as run:
                        for clients in (int(c) for c in args.clients.split(",")):
                            got.setdefault((label, clients), []).append(
                                run(clients, args.requests))
            for (label, clients), results in got.items():
                rps = statistics.median(r[0] for r in results)
                times = [t for r in results for t in r[1]]
                rows.append(f"| {size:,} | {label or '-'} | {clients} | {len(times)} "
                            f"| {rps:.1f} | {statistics.median(times) * 1000:.0f} ms "
                            f"| {pct(times, 0.95) * 1000:.0f} ms |")
    print(f"finished: {load()}")
    print("| memories | install | clients | requests | req/s | p50 | p95 |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
