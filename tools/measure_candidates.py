"""Which memories should a conflict scan compare? Candidate recall of TF-IDF, the sentence model
and both, on the labelled splits pooled into one store each.

Run by hand (needs the model, as `pip install .` brings):

    .venv/bin/python tools/measure_candidates.py ../shared/eval   # the evaluation folder

A conflict scan compares pairs of memories; an analyzer can only report a pair it is given
(seed 000, 5.3: the semantic analyzer proposes the similar pairs, others judge them). For each
labelled split (`dev/`, `dev2/`) every case's memories are pooled into one store (ids prefixed
by their case, so a case's memories meet the other cases' as distractors, as in a real store),
and for every labelled conflicting pair it asks whether the pair is proposed:

- one way, top k: the partner is among the k nearest of either memory (k = 1, 3, 5, 10), by
  TF-IDF cosine (the scan's own vectors, `conflicts/features.py`), by the sentence model
  (best passage against best passage, or mean passage against mean passage, `dmm/semantic`),
  or by either (the union of both top-k lists);
- the scan's own candidates (`scanner.candidate_pairs`: TF-IDF cosine >= pair_similarity, plus
  the alternatives' pairs), run per case, as `dmm conflicts scan --full` runs on each case, and
  on the pooled store.

It prints recall and the pairs proposed per memory (the cost: every pair is read by every
analyzer, and by the judge when one is configured).

    .venv/bin/python tools/measure_candidates.py ../shared/eval --scan-with-model 3

scores the detector (tools/eval_conflicts.py: the labelled splits and the real stores) when the
scan's candidates are joined by the model's k nearest active memories of each memory (through
the same filters: contexts set apart, parallel documents, two kinds of one thing), to see what
today's analyzers make of the pairs the model proposes.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from eval_conflicts import labelled_cases, load  # noqa: E402

from dmm.config import DEFAULTS  # noqa: E402
from dmm.conflicts.features import build  # noqa: E402
from dmm.conflicts import scanner  # noqa: E402
from dmm.conflicts.contexts import apart  # noqa: E402
from dmm.conflicts.pairs import NEAR_COPY, cosine, kinds, parallel  # noqa: E402
from dmm.conflicts.scanner import candidate_pairs  # noqa: E402
from dmm.semantic import chunks, model  # noqa: E402

KS = (1, 3, 5, 10)


def pooled(split: Path) -> tuple[list, dict[tuple[str, str], str], list[set[str]]]:
    """The split's memories as one store (ids prefixed by case), its labelled pairs, and the
    ids of each case."""
    memories, labels, cases = [], {}, []
    for case, want in labelled_cases(split):
        ids = set()
        for m in load(case / "memory"):
            mid = f"{case.name}/{m.id}"
            memories.append(dataclasses.replace(m, id=mid, path=f"{case.name}/{m.path}"))
            ids.add(mid)
        cases.append(ids)
        labels.update({tuple(sorted(f"{case.name}/{i}" for i in pair)): kind
                       for pair, kind in want.items()})
    return memories, labels, cases


def similarities(memories: list, embedder) -> dict[str, np.ndarray]:
    """Square matrices of closeness between every two memories (the diagonal set to -inf)."""
    features = build(memories)
    ids = [m.id for m in memories]
    n = len(ids)
    tfidf = np.zeros((n, n))
    for i in range(n):
        lookup = features[ids[i]].vector.lookup()
        for j in range(i + 1, n):
            tfidf[i, j] = tfidf[j, i] = cosine(features[ids[i]], features[ids[j]], lookup)
    passages = [embedder.embed(chunks.passages(m.title, m.body)) for m in memories]
    means = np.stack([p.mean(axis=0) / max(float(np.linalg.norm(p.mean(axis=0))), 1e-12)
                      for p in passages])
    best = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            best[i, j] = best[j, i] = float((passages[i] @ passages[j].T).max())
    out = {"tfidf": tfidf, "model best passage": best, "model mean passage": means @ means.T}
    for m in out.values():
        np.fill_diagonal(m, -np.inf)
    return out


def top_k_pairs(sim: np.ndarray, k: int, active: np.ndarray) -> set[tuple[int, int]]:
    """The pairs one-way top-k proposes: each active memory with its k nearest active ones."""
    masked = np.where(active[None, :], sim, -np.inf)
    out = set()
    for i in np.nonzero(active)[0]:
        for j in np.argsort(-masked[i], kind="stable")[:k]:
            out.add((min(i, j), max(i, j)))
    return out


def report(split: Path, embedder, show: bool = False) -> None:
    memories, labels, cases = pooled(split)
    ids = [m.id for m in memories]
    index = {mid: n for n, mid in enumerate(ids)}
    active = np.array([m.is_active for m in memories])
    wanted = {(min(index[a], index[b]), max(index[a], index[b])) for a, b in labels
              if a in index and b in index}
    sims = similarities(memories, embedder)
    n_active = int(active.sum())
    print(f"\n{split.name}: {len(memories)} memories pooled ({n_active} active), "
          f"{len(wanted)} labelled pairs")
    print(f"{'proposed by':34s} " + "  ".join(f"top{k:<2d} recall / pairs per memory"
                                             for k in KS))
    rows = dict(sims)
    rows["tfidf + model best passage"] = None
    for name, sim in rows.items():
        cells = []
        for k in KS:
            if sim is None:
                got = top_k_pairs(sims["tfidf"], k, active) | top_k_pairs(
                    sims["model best passage"], k, active)
            else:
                got = top_k_pairs(sim, k, active)
            cells.append(f"{len(wanted & got) / len(wanted):.3f} / {len(got) / n_active:5.2f}"
                         + " " * 16)
        print(f"{name:34s} " + "  ".join(cells))
    cfg = DEFAULTS["conflicts"]
    for label, groups in (("scan's candidates, per case", cases),
                          ("scan's candidates, pooled", [set(ids)])):
        got: set[tuple[int, int]] = set()
        for group in groups:
            features = build([m for m in memories if m.id in group])
            for a, b, _ in candidate_pairs(features, set(features), cfg["pair_similarity"],
                                           cfg["skip_ephemeral_pairs"]):
                got.add((min(index[a], index[b]), max(index[a], index[b])))
        print(f"{label:34s} {len(wanted & got) / len(wanted):.3f} / "
              f"{len(got) / n_active:5.2f}")
        for k in (1, 2, 3, 5):
            both = got | top_k_pairs(sims["model best passage"], k, active)
            print(f"{'  + model best passage top' + str(k):34s} "
                  f"{len(wanted & both) / len(wanted):.3f} / {len(both) / n_active:5.2f}")
        if show:
            for i, j in sorted(wanted - got):
                print(f"    not proposed: {ids[i]} ~ {ids[j]} (tfidf {sims['tfidf'][i, j]:.2f}, "
                      f"model {sims['model best passage'][i, j]:.2f}, active "
                      f"{bool(active[i])}/{bool(active[j])})")


def scan_with_model(eval_dir: Path, embedder, k: int) -> None:
    """The detector's figures when the model's k nearest join the scan's candidates."""
    import eval_conflicts

    cache: dict[tuple[str, str], np.ndarray] = {}

    def vectors(f) -> np.ndarray:
        key = (f.memory.title, f.memory.body)
        if key not in cache:
            cache[key] = embedder.embed(chunks.passages(*key))
        return cache[key]

    words_only = scanner.candidate_pairs

    def with_model(features, focus, min_sim, skip_ephemeral):
        out = words_only(features, focus, min_sim, skip_ephemeral)
        have = {(a, b) for a, b, _ in out}
        active = [i for i, f in features.items() if f.memory.is_active]
        for i in sorted(i for i in focus if i in features and features[i].memory.is_active):
            mine = vectors(features[i])
            near = sorted(((float((mine @ vectors(features[j]).T).max()), j)
                           for j in active if j != i), reverse=True)[:k]
            for _, j in near:
                key = (i, j) if i < j else (j, i)
                f, g = features[i], features[j]
                if key in have or apart(f.named_contexts, g.named_contexts) or parallel(f, g):
                    continue
                sim = cosine(f, g)
                if sim >= NEAR_COPY or not kinds(f, g):
                    have.add(key)
                    out.append((key[0], key[1], sim))
        return sorted(out)

    scanner.candidate_pairs = with_model  # this process only: a measurement, not a setting
    try:
        print(eval_conflicts.table(eval_conflicts.evaluate(eval_dir)))
    finally:
        scanner.candidate_pairs = words_only


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("eval_dir", type=Path)
    ap.add_argument("--show", action="store_true", help="list the pairs not proposed")
    ap.add_argument("--scan-with-model", type=int, metavar="K",
                    help="score the detector with the model's K nearest as extra candidates")
    args = ap.parse_args()
    embedder = model.load(threads=1)
    if args.scan_with_model:
        scan_with_model(args.eval_dir, embedder, args.scan_with_model)
        return 0
    for split in ("dev", "dev2"):
        report(args.eval_dir / split, embedder, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
