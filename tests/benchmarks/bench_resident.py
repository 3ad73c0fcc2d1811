"""Benchmark the memory of the repository's background process as it serves more work trees
of one clone (issue 36 item 6, run on demand): a repository of ``--size`` memories and
``--worktrees`` linked work trees at the same commit; a query from each work tree in turn,
each waiting for its semantic index (DMM_SEMANTIC_WAIT_S), and the process's resident memory
(VmRSS of /proc/<pid>/status) after each. Run once per value of semantic.resident_worktrees
(``--limits``), written into every work tree's .dmm/config.toml.

    python tests/benchmarks/bench_resident.py [--size 1000] [--worktrees 6] [--limits 1,4,100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TASKS, daemon_pid, dmm_of, load, make_repo, stop_daemon  # noqa: E402


def rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def set_limit(tree: Path, limit: int) -> None:
    config = tree / ".dmm" / "config.toml"
    text = config.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("resident_worktrees")]
    at = lines.index("[semantic]") + 1
    lines.insert(at, f"resident_worktrees = {limit}")
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")


def run(dmm: list[str], size: int, worktrees: int, limits: list[int]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-resident-"))
    try:
        root = tmp / "repo"
        root.mkdir()
        make_repo(root, size)
        trees = [root]
        for i in range(worktrees - 1):
            tree = tmp / f"wt{i}"
            subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree)], cwd=root,
                           check=True, capture_output=True)
            trees.append(tree)
        env = {**os.environ, "DMM_SEMANTIC_WAIT_S": "900"}
        env.pop("DMM_AGENT", None)
        print(f"{size} memories per work tree, {worktrees} work trees; {load()}")
        for limit in limits:
            for tree in trees:
                set_limit(tree, limit)
            stop_daemon(root)
            figures = []
            for n, tree in enumerate(trees, 1):
                subprocess.run([*dmm, "query", TASKS[n % len(TASKS)], "--json"], cwd=tree,
                               env=env, check=True, capture_output=True)
                figures.append(f"{n}: {rss_mb(daemon_pid(root)):.0f}")
            print(f"  resident_worktrees = {limit}: VmRSS (MB) after work trees "
                  f"{', '.join(figures)}", flush=True)
        stop_daemon(root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--worktrees", type=int, default=6)
    ap.add_argument("--limits", default="1,4,100")
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    run(dmm_of(args.python), args.size, args.worktrees,
        [int(x) for x in args.limits.split(",")])


if __name__ == "__main__":
    main()
