"""Fit the conflict detector's confidence weights (dmm/conflicts/data/weights.json).

    python tools/fit_conflicts.py EVAL_DIR            # cross-validate, print, write the weights
    python tools/fit_conflicts.py EVAL_DIR --dry-run  # cross-validate and print only

Every pair an analyzer reports in EVAL_DIR (labelled splits and the whole stores of `real/`,
laid out as tools/eval_conflicts.py reads them) becomes one example: the features of
dmm/conflicts/calibration.py, labelled 1 when the split's expected.json lists the pair (or the
store's truth.json records it) and 0 otherwise. A real store's duplicates whose bodies are near
copies are left out: the store's own scorer counts them as explained either way.

scikit-learn's LogisticRegression is cross-validated with one group per case of a labelled split
and one per real store (LeaveOneGroupOut), so a weight that only fits one case or one store
shows up as a worse held-out figure. The table printed gives, for every set, the held-out
figures next to those of the weights fitted on everything (what ships). Needs the dev extra:
pip install -e '.[dev]'.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from eval_conflicts import (explained_pairs, labelled_cases, load_store,  # noqa: E402
                            near_copies)

from dmm.config import DEFAULTS  # noqa: E402
from dmm.conflicts.calibration import FEATURES, WEIGHTS_FILE, pair_features  # noqa: E402
from dmm.conflicts.features import build  # noqa: E402
from dmm.conflicts.merger import by_pair, kind_of  # noqa: E402
from dmm.conflicts.scanner import candidates  # noqa: E402


def examples(eval_dir: Path) -> list[dict]:
    """One row per reported pair: set, group, pair, label, type, expected type, features."""
    config = dict(DEFAULTS["conflicts"])
    rows = []

    def add(set_name: str, group: str, memories: list, want: dict, explained: set,
            n: int) -> None:
        features = build(memories)
        found = by_pair(candidates(features, set(features), config))
        by_id = {m.id: m for m in memories}
        for (a, b), cands in found.items():
            kind = kind_of(cands, features[a], features[b])
            if (a, b) not in want and (a, b) not in explained and kind == "duplicate" \
                    and near_copies(by_id[a], by_id[b]):
                continue  # explained either way: not evidence for or against
            rows.append({"set": set_name, "group": group, "pair": [a, b],
                         "label": int((a, b) in want or (a, b) in explained),
                         "type": kind, "expected": want.get((a, b)), "n": n,
                         "x": pair_features(features[a], features[b], cands)})
        for pair, kind in want.items():  # missed by every analyzer: a miss whatever the weights
            if pair not in found:
                rows.append({"set": set_name, "group": group, "pair": list(pair), "label": 1,
                             "type": None, "expected": kind, "n": n, "x": None})

    for split in sorted(p for p in eval_dir.iterdir() if p.is_dir() and p.name != "real"):
        for case, want in labelled_cases(split):
            add(split.name, f"{split.name}/{case.name}", load_store(case / "memory"), want, set(),
                0)
    real = eval_dir / "real"
    for store in sorted(p for p in real.iterdir() if (p / "memory").is_dir()):
        n = sum(1 for _ in (store / "memory").rglob("*.md"))
        add(store.name, f"real/{store.name}", load_store(store / "memory"), {},
            explained_pairs(store), n)
        # the store's row in the table even when nothing in it is reported
        rows.append({"set": store.name, "group": f"real/{store.name}", "pair": [], "label": 0,
                     "type": None, "expected": None, "n": n, "x": None})
    return rows


def figures(rows: list[dict], probability: list[float | None], threshold: float) -> dict:
    """Per set: precision, recall, type accuracy (labelled) or unexplained per 100 (real)."""
    by_set: dict[str, dict] = defaultdict(lambda: {"tp": 0, "fp": 0, "fn": 0, "typed": 0,
                                                   "n": 0})
    for row, p in zip(rows, probability):
        s = by_set[row["set"]]
        s["n"] = row["n"]
        flagged = p is not None and p >= threshold
        if row["label"] and flagged:
            s["tp"] += 1
            s["typed"] += row["expected"] is None or row["type"] == row["expected"]
        elif row["label"]:
            s["fn"] += 1
        elif flagged:
            s["fp"] += 1
    out = {}
    for name, s in by_set.items():
        if s["n"]:
            out[name] = {"unexplained_per100": round(100 * s["fp"] / s["n"], 1)}
        else:
            out[name] = {"precision": round(s["tp"] / max(1, s["tp"] + s["fp"]), 3),
                         "recall": round(s["tp"] / max(1, s["tp"] + s["fn"]), 3),
                         "type_accuracy": round(s["typed"] / max(1, s["tp"]), 3)}
    return out


USED = list(FEATURES)  # --without takes features out (ablations)


def fit(rows: list[dict], c: float):
    from sklearn.linear_model import LogisticRegression

    X = [[r["x"][f] for f in USED] for r in rows]
    y = [r["label"] for r in rows]
    return LogisticRegression(C=c, max_iter=5000).fit(X, y)


def predict(model, rows: list[dict]) -> list[float]:
    return list(model.predict_proba([[r["x"][f] for f in USED] for r in rows])[:, 1])


def cross_validated(rows: list[dict], c: float) -> list[float | None]:
    """Held-out probabilities: each group predicted by a model fitted without it."""
    from sklearn.model_selection import LeaveOneGroupOut

    scored = [i for i, r in enumerate(rows) if r["x"] is not None]
    out: list[float | None] = [None] * len(rows)
    groups = [rows[i]["group"] for i in scored]
    for train, test in LeaveOneGroupOut().split(scored, groups=groups):
        train_rows = [rows[scored[i]] for i in train]
        if len({r["label"] for r in train_rows}) < 2:
            continue
        model = fit(train_rows, c)
        for i, p in zip(test, predict(model, [rows[scored[i]] for i in test])):
            out[scored[i]] = p
    return out


GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)


def log_loss(rows: list[dict], probability: list[float | None]) -> float:
    """Mean held-out log loss over the reported pairs (the pairs with a prediction)."""
    import math

    pairs = [(r["label"], min(max(p, 1e-6), 1 - 1e-6))
             for r, p in zip(rows, probability) if p is not None]
    return -sum(math.log(p if y else 1 - p) for y, p in pairs) / max(1, len(pairs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("eval_dir", type=Path)
    ap.add_argument("--c", type=float, help="inverse regularisation strength (default: the "
                    "value of GRID with the lowest held-out log loss)")
    ap.add_argument("--threshold", type=float, default=DEFAULTS["conflicts"]["min_confidence"])
    ap.add_argument("--dry-run", action="store_true", help="do not write the weights")
    ap.add_argument("--without", action="append", default=[], choices=FEATURES,
                    help="leave a feature out (an ablation; implies --dry-run)")
    args = ap.parse_args()
    from tabulate import tabulate

    USED[:] = [f for f in FEATURES if f not in args.without]
    args.dry_run = args.dry_run or bool(args.without)
    rows = examples(args.eval_dir)
    scored = [r for r in rows if r["x"] is not None]
    losses = {}
    for c in ([args.c] if args.c else GRID):
        losses[c] = log_loss(rows, cross_validated(rows, c))
        print(f"C={c:g}: held-out log loss {losses[c]:.4f}", file=sys.stderr)
    args.c = min(losses, key=losses.get)
    held_out = figures(rows, cross_validated(rows, args.c), args.threshold)
    model = fit(scored, args.c)
    everything = iter(predict(model, scored))
    fitted = figures(rows, [next(everything) if r["x"] is not None else None for r in rows],
                     args.threshold)
    table = []
    for name in held_out:
        h, f = held_out[name], fitted[name]
        if "precision" in h:
            table.append([name, f"{h['precision']:.3f}", f"{h['recall']:.3f}",
                          f"{h['type_accuracy']:.3f}", "", f"{f['precision']:.3f}",
                          f"{f['recall']:.3f}", ""])
        else:
            table.append([name, "", "", "", h["unexplained_per100"], "", "",
                          f["unexplained_per100"]])
    positives = sum(r["label"] for r in scored)
    print(f"C={args.c:g}; {len(scored)} reported pairs ({positives} real conflicts), "
          f"{sum(r['label'] for r in rows if r['x'] is None)} labelled pairs no analyzer "
          "reports")
    print(tabulate(table, headers=["set", "held-out precision", "recall", "type accuracy",
                                   "unexplained per 100", "fitted precision", "recall",
                                   "unexplained per 100"], tablefmt="github"))
    weights = {"intercept": round(float(model.intercept_[0]), 4),
               "coefficients": {f: round(float(w), 4) for f, w in zip(USED, model.coef_[0])},
               "fitted": dt.date.today().isoformat(), "C": args.c,
               "examples": len(scored), "positives": sum(r["label"] for r in scored),
               "held_out": held_out}
    print(json.dumps(weights["coefficients"], indent=1))
    if not args.dry_run:
        WEIGHTS_FILE.parent.mkdir(parents=True, exist_ok=True)
        WEIGHTS_FILE.write_text(json.dumps(weights, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {WEIGHTS_FILE.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
