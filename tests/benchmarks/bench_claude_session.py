"""Benchmark the processes and memory of a real Claude Code session (issue 36, item 6; run on
demand, where `claude` is installed from the npm registry): a repository of ``--size``
generated memories set up by `dmm agent setup claude`, then `claude -p` driven through a whole
session by the stand-in model on 127.0.0.1 (tests/agents/standin.py: three `memory_query`
calls and a final answer, each answer after ``--think`` seconds, as a model takes). While it runs, every process of the install's dmm is sampled from
/proc: its kind (`dmm mcp`, the background process, a hook, another command), its peak
resident memory, and whether it loaded the model (onnxruntime mapped). After the session,
the processes still running and their memory, at once and ``--settle`` seconds later.

    python tests/benchmarks/bench_claude_session.py [--size 2000] [--baseline OTHER_PYTHON]
        [--clients /work/clients/node_modules/.bin] [--settle 30] [--think 5]

--baseline: the same session with another install's dmm first ('before'); the model cache is
the user's own (DMM_CACHE_DIR as set), so neither pays for deriving the model.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from common import (dmm_of, installs, load, make_repo, processes,  # noqa: E402
                    stop_daemon)

from tests.agents.standin import StandIn  # noqa: E402

TASKS = ["how are invoices numbered", "add retries with backoff to the partner client",
         "rotate the api keys of a service"]
PAGE = 4096 // 1024  # kB per page of /proc/PID/statm


def _processes(root: Path, bin_dir: Path) -> dict[int, tuple[str, str]]:
    """{pid: (kind, command line)} of the processes of the install in ``bin_dir`` serving
    ``root`` (started from it, or the background process named after it)."""
    found = {}
    for pid, argv, cwd in processes():
        line = " ".join(argv)
        if not argv[0].startswith(str(bin_dir)):
            continue
        if "-m dmm.background.daemon" in line or "-m dmm.semantic.daemon" in line:  # older
            if str(root) in argv:
                found[pid] = ("background process", line)
        elif cwd.startswith(str(root)) or str(root) in argv:
            kind = "dmm mcp" if " mcp" in line else "hook" if " hook " in line else \
                "conflict scan" if " conflicts scan" in line else "other"
            found[pid] = (kind, line)
    return found


def _rss_kb(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return None


def _has_model(pid: int) -> bool:
    try:
        return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text(errors="replace")
    except OSError:
        return False


class Sampler:
    """Samples the install's processes every 0.1 s until stopped."""

    def __init__(self, root: Path, bin_dir: Path):
        self.root, self.bin_dir = root, bin_dir
        self.seen: dict[int, dict] = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def sample(self) -> dict[int, int]:
        now = {}
        for pid, (kind, line) in _processes(self.root, self.bin_dir).items():
            rss = _rss_kb(pid)
            if rss is None:
                continue
            now[pid] = rss
            entry = self.seen.setdefault(pid, {"kind": kind, "line": line, "peak_kb": 0,
                                               "model": False})
            entry["peak_kb"] = max(entry["peak_kb"], rss)
            entry["model"] = entry["model"] or _has_model(pid)
        return now

    def run(self) -> None:
        while not self.stopped.is_set():
            self.sample()
            self.stopped.wait(0.1)

    def __enter__(self) -> "Sampler":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()


def session(python: str, size: int, clients: Path, settle: float, think: float) -> dict:
    bin_dir = Path(python).parent
    tmp = Path(tempfile.mkdtemp(prefix="dmm_bench_claude_"))
    root = tmp / "repo"
    root.mkdir()
    home = tmp / "home"
    home.mkdir()
    make_repo(root, size, dmm_of(python))
    env = {**os.environ, "HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin"}
    env.pop("DMM_SEMANTIC", None)  # the model on, as a user has it
    subprocess.run([str(bin_dir / "dmm"), "agent", "setup", "claude"], cwd=root, env=env,
                   check=True, capture_output=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "dmm agent setup claude"], cwd=root, check=True)
    (home / ".claude.json").write_text(json.dumps({"projects": {str(root): {
        "hasTrustDialogAccepted": True}}}))
    (root / ".claude" / "settings.local.json").write_text(json.dumps(
        {"enabledMcpjsonServers": ["dmm"]}))
    steps = [{"tool": "memory_query", "input": {"task": t}} for t in TASKS] + [{"text": "Done."}]
    started = time.perf_counter()
    with StandIn(steps, pause=think) as standin, Sampler(root, bin_dir) as sampler:
        proc = subprocess.run(
            [str(clients / "claude"), "-p", "How are invoices numbered?",
             "--allowedTools", "mcp__dmm"], cwd=root, capture_output=True, text=True,
            timeout=300, stdin=subprocess.DEVNULL,
            env={**env, "ANTHROPIC_BASE_URL": standin.url, "ANTHROPIC_API_KEY": "sk-standin",
                 "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
        wall = time.perf_counter() - started
        results = standin.tool_results()
        at_end = sampler.sample()
    time.sleep(settle)
    after = Sampler(root, bin_dir)
    later = after.sample()
    later_model = {pid for pid in later if _has_model(pid)}
    stop_daemon(root)
    for pid, (kind, _) in _processes(root, bin_dir).items():  # an older install's, by name
        if kind == "background process":
            os.kill(pid, 15)
    return {"exit": proc.returncode, "wall_s": round(wall, 1), "tool_results": len(results),
            "processes": sampler.seen, "at_end": at_end, "later": later,
            "later_model": sorted(later_model),
            "kinds": {p: e["kind"] for p, e in {**sampler.seen, **after.seen}.items()}}


def report(label: str, r: dict) -> None:
    print(f"\n## {label or 'this install'}: claude -p exit {r['exit']}, {r['wall_s']} s, "
          f"{r['tool_results']} tool results")
    print("| process | kind | peak RSS | model loaded | command |")
    print("|---|---|---:|---|---|")
    for pid, e in sorted(r["processes"].items()):
        command = " ".join(e["line"].split()[1:])[:60]
        print(f"| {pid} | {e['kind']} | {e['peak_kb'] / 1024:.0f} MB | "
              f"{'yes' if e['model'] else 'no'} | `{command}` |")
    for name, now in (("at the session's end", r["at_end"]), ("later", r["later"])):
        total = sum(now.values()) / 1024
        kinds = ", ".join(f"{r['kinds'].get(p, '?')} {kb / 1024:.0f} MB"
                          for p, kb in sorted(now.items()))
        print(f"- {name}: {len(now)} processes, {total:.0f} MB ({kinds or 'none'})")
    print(f"- processes with the model loaded later: {len(r['later_model'])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=2000)
    ap.add_argument("--baseline", metavar="PYTHON")
    ap.add_argument("--clients", type=Path, default=Path(os.environ.get(
        "DMM_AGENT_CLIENTS", "/work/clients/node_modules/.bin")))
    ap.add_argument("--settle", type=float, default=30.0)
    ap.add_argument("--think", type=float, default=5.0, help="seconds the stand-in model "
                    "takes per answer (a real one takes seconds: the session lasts)")
    args = ap.parse_args()
    if not (args.clients / "claude").exists():
        sys.exit(f"claude is not installed in {args.clients} (npm install @anthropic-ai/"
                 "claude-code there, or give --clients)")
    print(f"started: {load()}", flush=True)
    for label, python in installs(args.baseline):
        report(label, session(python, args.size, args.clients, args.settle, args.think))
    print(f"\nfinished: {load()}")


if __name__ == "__main__":
    main()
