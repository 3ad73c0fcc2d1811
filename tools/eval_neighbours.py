"""How often the neighbours a proposal gets back (dmm.proposals.neighbours) hold the memory it
conflicts with: the labelled cases of a case set (each a folder with memory/ and expected.json)
pooled into one store, each labelled pair's first memory "proposed" against the rest.

    python tools/eval_neighbours.py [--meaning] ../shared/eval/dev ../shared/eval/dev2

Prints, per set: pairs, recall@1/3/5 one way (the first memory of each pair finds the second),
either way, and the time to find one memory's neighbours. Ranks by words, as a one-off
`dmm write propose` does; --meaning builds the semantic index first and ranks by words and
meaning fused, as a long-lived `dmm mcp` or `dmm serve` does.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def pooled(cases: Path, root: Path) -> list[tuple[str, str]]:
    """Every case's memories under one store at ``root`` (each case in its own sub-folder of
    every scope, so paths never collide); returns the labelled pairs."""
    pairs = []
    memory = root / ".dmm" / "memory"
    for case in sorted(p for p in cases.iterdir() if (p / "expected.json").is_file()):
        for path in (case / "memory").rglob("*.md"):
            rel = path.relative_to(case / "memory")
            dest = memory / rel.parts[0] / case.name / Path(*rel.parts[1:])
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
        for c in json.loads((case / "expected.json").read_text())["conflicts"]:
            pairs.append(tuple(c["memories"]))
    return pairs


def evaluate(cases: Path, meaning: bool = False) -> None:
    from dmm.index import read
    from dmm.index.refresh import open_fresh
    from dmm.proposals.neighbours import nearest
    from dmm.scaffold import init
    from dmm.workspace import Workspace

    tmp = Path(tempfile.mkdtemp(prefix="dmm-eval-neighbours-"))
    try:
        root = tmp / "repo"
        root.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        ws = Workspace(root)
        init(ws)
        for starter in (ws.memory_dir / "baseline").glob("*.md"):
            starter.unlink()
        pairs = pooled(cases, root)
        conn, _ = open_fresh(ws)
        if meaning:
            from dmm.semantic import service

            built, why = service.build_now(ws, conn)
            if why:
                raise SystemExit(f"no semantic index: {why}")
        by_id = {m.id: m for m in read.memories(conn)}
        ranks, took = [], []
        for a, b in pairs:
            found = []
            for x, y in ((a, b), (b, a)):
                if x not in by_id:
                    found.append(None)
                    continue
                start = time.perf_counter()
                near = [n.memory_id for n in nearest(ws, conn, by_id[x],
                                                     exclude=(by_id[x].path,))]
                took.append((time.perf_counter() - start) * 1000)
                found.append(near.index(y) + 1 if y in near else None)
            ranks.append(found)
        conn.close()
        n = len(ranks)

        def at(k: int, either: bool) -> float:
            hit = [any(r is not None and r <= k for r in (f if either else f[:1])) for f in ranks]
            return sum(hit) / n if n else 0.0

        print(f"{cases.name} ({'words+meaning' if meaning else 'words'}): {len(by_id)} memories, {n} labelled pairs; one way "
              f"R@1 {at(1, False):.2f} R@3 {at(3, False):.2f} R@5 {at(5, False):.2f}; "
              f"either way R@5 {at(5, True):.2f}; neighbours of one memory: median "
              f"{statistics.median(took):.1f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    args = sys.argv[1:]
    meaning = "--meaning" in args
    args = [a for a in args if a != "--meaning"]
    if not args:
        raise SystemExit(__doc__)
    if meaning:
        from dmm.semantic import service

        os.environ["DMM_SEMANTIC"] = "on"
        service.enable()
    else:
        os.environ["DMM_SEMANTIC"] = "off"
    for arg in args:
        evaluate(Path(arg), meaning)


if __name__ == "__main__":
    main()
