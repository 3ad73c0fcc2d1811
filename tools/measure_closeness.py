"""Can the sentence model judge conflicts? Measure how its closeness separates conflicting pairs.

Run by hand (needs the model, as `pip install .` brings, and the dev extra for scikit-learn):

    .venv/bin/python tools/measure_closeness.py ../shared/eval   # the evaluation folder

For every pair of memories of every case of the labelled splits (`dev/`, `dev2/`) and of every
real store (`real/*/memory`), it computes three closeness figures with the shipped model and
passages (dmm/semantic): the best passage-to-passage cosine, the cosine of the memories' mean
passages, and the cosine of their titles. It prints their distribution per set and label, then
fits a logistic regression on those three figures on one labelled split and applies it to the
other split and to the real stores (whose pairs the detector must not report): the held-out
precision and recall at the threshold best on the training split and at the one giving precision
0.85 there, and how many pairs per 100 memories each real store would see flagged.

What it showed (docs/conflicts.md, "What the sentence model can and cannot do"): closeness ranks a
small case's conflicting pairs first (held-out AUC 0.98), but the real stores' unrelated pairs
are as close as the labelled conflicts (up to 0.96 for guides of one collection), so as a judge
it flags 41-1,044 pairs per 100 memories at useful recall and finds none of the other split's
conflicts at precision 0.85.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from eval_conflicts import labelled_cases, load  # noqa: E402

from dmm.semantic import chunks, model  # noqa: E402

FIGURES = ("best_passage", "mean_passage", "title")


def pair_rows(embedder, group: str, case: str, folder: Path, labels: dict) -> list[dict]:
    found = {m.id: (m.title, m.body) for m in load(folder)}
    ids = sorted(found)
    passages = {i: embedder.embed(chunks.passages(*found[i])) for i in ids}
    titles = dict(zip(ids, embedder.embed([found[i][0] or " " for i in ids])))
    means = {}
    for i in ids:
        mean = passages[i].mean(axis=0)
        means[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    rows = []
    for a, b in itertools.combinations(ids, 2):
        rows.append({"group": group, "case": case, "label": labels.get((a, b), "none"),
                     "best_passage": float((passages[a] @ passages[b].T).max()),
                     "mean_passage": float(means[a] @ means[b]),
                     "title": float(titles[a] @ titles[b])})
    return rows


def collect(eval_dir: Path) -> tuple[list[dict], dict[str, int]]:
    embedder = model.load(threads=2)
    rows, sizes = [], {}
    for split in ("dev", "dev2"):
        for case, labels in labelled_cases(eval_dir / split):
            rows += pair_rows(embedder, split, case.name, case / "memory", labels)
    for store in sorted(p for p in (eval_dir / "real").iterdir() if (p / "memory").is_dir()):
        sizes[store.name] = len(load(store / "memory"))
        rows += pair_rows(embedder, "real", store.name, store / "memory", {})
    return rows, sizes


def distributions(rows: list[dict]) -> None:
    by = defaultdict(list)
    for r in rows:
        by[(r["group"], "conflict" if r["label"] != "none" else "none")].append(r)
        if r["label"] == "duplicate":
            by[(r["group"], "duplicate")].append(r)
    print("set   label      pairs  " + "  ".join(f"{f:>22}" for f in FIGURES))
    print(" " * 25 + "  ".join(f"{'p10 / p50 / p90 / max':>22}" for _ in FIGURES))
    for (group, label), part in sorted(by.items()):
        cells = []
        for f in FIGURES:
            x = np.array([r[f] for r in part])
            cells.append(" / ".join(f"{v:.2f}" for v in (*np.percentile(x, [10, 50, 90]),
                                                            x.max())))
        print(f"{group:5} {label:10} {len(part):6}  " + "  ".join(f"{c:>22}" for c in cells))


def held_out(rows: list[dict], sizes: dict[str, int]) -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    def xy(part):
        return (np.array([[r[f] for f in FIGURES] for r in part]),
                np.array([r["label"] != "none" for r in part]))

    def pr(p, y, t):
        tp, fp = int(((p >= t) & y).sum()), int(((p >= t) & ~y).sum())
        return tp / max(1, tp + fp), tp / max(1, int(y.sum()))

    real = [r for r in rows if r["group"] == "real"]
    xr, _ = xy(real)
    for train, test in (("dev", "dev2"), ("dev2", "dev")):
        xa, ya = xy([r for r in rows if r["group"] == train])
        xb, yb = xy([r for r in rows if r["group"] == test])
        fit = LogisticRegression(class_weight="balanced").fit(xa, ya)
        pa, pb, preal = (fit.predict_proba(x)[:, 1] for x in (xa, xb, xr))
        f1 = {t: 2 * p * r / (p + r) if p + r else 0.0
              for t in np.unique(pa) for p, r in [pr(pa, ya, t)]}
        best = max(f1, key=f1.get)
        strict = min((t for t in np.unique(pa) if pr(pa, ya, t)[0] >= 0.85), default=1.0)
        print(f"\nfitted on {train}, held out {test}: AUC {roc_auc_score(yb, pb):.3f}")
        for name, t in (("best F1 on training", best), ("precision 0.85 on training", strict)):
            p, r = pr(pb, yb, t)
            flags = ", ".join(
                f"{s} {100 * sum(1 for x, row in zip(preal, real) if row['case'] == s and x >= t) / n:.1f}"
                for s, n in sorted(sizes.items()))
            print(f"  threshold at {name}: held-out P {p:.2f} R {r:.2f}; "
                  f"real stores, pairs flagged per 100 memories: {flags}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("eval_dir", type=Path, help="the shared evaluation folder")
    args = parser.parse_args()
    rows, sizes = collect(args.eval_dir)
    distributions(rows)
    held_out(rows, sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
