"""Benchmark what an agent's client waits for and receives (run on demand):

- `dmm mcp` from process start to the answers of `initialize` and `tools/list` (what decides
  whether Codex includes the server in its first request), and to the first tool call;
- the UserPromptSubmit hook: its time and its pack's size (characters, UTF-16 units as
  Claude Code counts them, tokens) for a short prompt and for a long one (a question with a
  pasted traceback);
- the SessionStart hook's baseline.

    python tests/benchmarks/bench_agent_start.py --sizes 1000 [--runs 20]

Raw JSON-RPC over the process's pipes, as a client speaks it (no client library in between).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DMM, TASKS, pct, warm_store  # noqa: E402

LONG_PROMPT = ("How are invoices numbered? The export fails with this traceback:\n"
               + "\n".join(f'  File "/srv/app/module_{n}.py", line {n}, in handler_{n}\n'
                           f"    result = compute(payload[{n}])" for n in range(120)))


def mcp_start(root: Path) -> tuple[float, float, float]:
    """Seconds from starting `dmm mcp` to the initialize answer, the tools/list answer and the
    first memory_list answer."""
    began = time.perf_counter()
    proc = subprocess.Popen([*DMM, "mcp"], cwd=root, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def ask(message: dict) -> None:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    def answer() -> dict:
        return json.loads(proc.stdout.readline())

    ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    answer()
    initialized = time.perf_counter() - began
    ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
    ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    answer()
    listed = time.perf_counter() - began
    ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "memory_list", "arguments": {"limit": 1}}})
    answer()
    called = time.perf_counter() - began
    proc.stdin.close()
    proc.wait(30)
    return initialized, listed, called


def hook(root: Path, event: str, payload: dict) -> tuple[float, str]:
    began = time.perf_counter()
    out = subprocess.run([*DMM, "agent", "hook", event], cwd=root, input=json.dumps(payload),
                         capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - began, out


def tokens(text: str) -> int:
    from dmm.memory.tokens import count_tokens

    return count_tokens(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1000")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    for size in [int(s) for s in args.sizes.split(",")]:
        with warm_store(size, f"agent-start-{size}-") as root:
            starts = [mcp_start(root) for _ in range(args.runs)]
            print(f"{size} memories, dmm mcp, {args.runs} starts: initialize p50 "
                  f"{pct([s[0] for s in starts], 0.5) * 1000:.0f} ms p95 "
                  f"{pct([s[0] for s in starts], 0.95) * 1000:.0f} ms; tools/list p50 "
                  f"{pct([s[1] for s in starts], 0.5) * 1000:.0f} ms p95 "
                  f"{pct([s[1] for s in starts], 0.95) * 1000:.0f} ms; first tool call p50 "
                  f"{pct([s[2] for s in starts], 0.5) * 1000:.0f} ms", flush=True)
            for name, prompt in (("short prompt", TASKS[1]),
                                 ("long prompt", LONG_PROMPT)):
                runs = [hook(root, "user-prompt-submit", {"prompt": prompt})
                        for _ in range(args.runs)]
                text = runs[-1][1]
                print(f"{size} memories, UserPromptSubmit hook, {name} ({len(prompt)} chars): "
                      f"p50 {pct([r[0] for r in runs], 0.5) * 1000:.0f} ms p95 "
                      f"{pct([r[0] for r in runs], 0.95) * 1000:.0f} ms; pack {len(text)} "
                      f"chars, {len(text.encode('utf-16-le')) // 2} UTF-16 units, "
                      f"{tokens(text)} tokens, of which the prompt line "
                      f"{len(text.splitlines()[0]) if text else 0} chars", flush=True)
            took, text = hook(root, "session-start", {"source": "startup"})
            print(f"{size} memories, SessionStart hook: {took * 1000:.0f} ms, baseline "
                  f"{len(text)} chars, {tokens(text)} tokens", flush=True)


if __name__ == "__main__":
    main()
