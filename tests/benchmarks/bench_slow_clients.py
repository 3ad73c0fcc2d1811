"""Idle and slow clients against `dmm serve`, on loopback only (issue 26, item 10; run on
demand). Bounded: every loop has a count and a deadline, and everything stops by itself.

    python tests/benchmarks/bench_slow_clients.py [--idle 257] [--slow 300] [--seconds 15]

Phase 1 opens ``--idle`` sockets that send nothing; phase 2 starts ``--slow`` clients that
send a header line every 3 s and never finish. In each phase a working client makes one
request a second; the report says how many it got answered (and with what status), its
latency, and when the server closed the idle or slow sockets.
"""

from __future__ import annotations

import argparse
import http.client
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DMM  # noqa: E402

HOST = "127.0.0.1"  # loopback only


def start(root: Path) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([*DMM, "serve", "--port", "0"], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    port = int(re.search(r":(\d+) ", proc.stdout.readline()).group(1))
    return proc, port


def working_client(port: int, seconds: float) -> list[tuple[int, float]]:
    """One request a second for ``seconds``: (status, latency) each; status 0 = no answer."""
    out = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        began = time.monotonic()
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=10)
            conn.request("GET", "/health")
            status = conn.getresponse().status
            conn.close()
        except OSError:
            status = 0
        out.append((status, time.monotonic() - began))
        time.sleep(max(0.0, 1.0 - (time.monotonic() - began)))
    return out


def watch_closed(socks: list[socket.socket], began: float, closed: list[float],
                 stop: threading.Event) -> None:
    """Record when the server closes each socket (a read returns b'' or fails)."""
    for s in socks:
        s.setblocking(False)
    open_ones = set(range(len(socks)))
    while open_ones and not stop.is_set():
        for n in list(open_ones):
            try:
                if socks[n].recv(4096) == b"":
                    raise ConnectionResetError
            except BlockingIOError:
                continue
            except OSError:
                closed.append(time.monotonic() - began)
                open_ones.discard(n)
        time.sleep(0.05)


def slow_sender(sock: socket.socket, stop: threading.Event, every: float) -> None:
    try:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        n = 0
        while not stop.wait(every):
            sock.sendall(f"X-Slow-{n}: {'a' * 20}\r\n".encode())
            n += 1
    except OSError:
        return


def phase(port: int, count: int, seconds: float, slow: bool) -> dict:
    began = time.monotonic()
    socks = []
    for _ in range(count):
        s = socket.create_connection((HOST, port), timeout=5)
        socks.append(s)
    stop = threading.Event()
    threads = [threading.Thread(target=slow_sender, args=(s, stop, 3.0), daemon=True)
               for s in socks] if slow else []
    for t in threads:
        t.start()
    closed: list[float] = []
    watcher = threading.Thread(target=watch_closed, args=(socks, began, closed, stop),
                               daemon=True)
    watcher.start()
    results = working_client(port, seconds)
    stop.set()
    watcher.join(5)
    for s in socks:
        s.close()
    ok = [lat for status, lat in results if status == 200]
    return {"sockets": count, "kind": "slow headers every 3 s" if slow else "idle",
            "requests": len(results), "answered 200": len(ok),
            "other statuses": sorted({status for status, _ in results if status != 200}),
            "p50 ms": round(statistics.median(ok) * 1000, 1) if ok else None,
            "max ms": round(max(ok) * 1000, 1) if ok else None,
            "closed by server": len(closed),
            "closed after s (median)": round(statistics.median(closed), 1) if closed else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--idle", type=int, default=257)
    ap.add_argument("--slow", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=15.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        subprocess.run([*DMM, "init"], cwd=root, check=True, capture_output=True)
        proc, port = start(root)
        try:
            for result in (phase(port, args.idle, args.seconds, slow=False),
                           phase(port, args.slow, args.seconds, slow=True)):
                print(result, flush=True)
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
