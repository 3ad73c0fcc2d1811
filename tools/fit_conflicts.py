"""Fit the conflict detector's confidence weights (dmm/conflicts/data/weights.json).

    python tools/fit_conflicts.py EVAL_DIR            # cross-validate, print, write the weights
    python tools/fit_conflicts.py EVAL_DIR --dry-run  # cross-validate and print only
    python tools/fit_conflicts.py EVAL_DIR --stores MORE/real  # more whole stores, as negatives

Every pair an analyzer reports in EVAL_DIR (labelled splits and the whole stores of `real/`,
laid out as tools/eval_conflicts.py reads them) becomes one example: the features of
dmm/conflicts/calibration.py, labelled 1 when the split's expected.json lists the pair (or the
store's truth.json records it) and 0 otherwise. A real store's duplicates whose bodies are near
copies are left out: the store's own scorer counts them as explained either way. `--stores DIR`
adds the stores of DIR (converted by tools/convert_store.py from public collections, each with
`memory/` and an optional `truth.json`) as further real stores: the labelled cases hold few pairs
an analyzer reports wrongly, and a fit that sees few false reports trusts every report.

The model is scikit-learn's L2-regularised logistic regression, fitted with scipy (which
scikit-learn installs) so that the weights of evidence stay >= 0 (calibration.EVIDENCE), and
cross-validated with scikit-learn's LeaveOneGroupOut: one group per case of a labelled split and
one per real store, so a weight that only fits one case or one store shows up as a worse held-out
figure. The regularisation is the strongest within one standard error of the lowest held-out log
loss. The table printed gives, for every set, the held-out figures next to those of the weights
fitted on everything (what ships). Needs the dev extra: pip install -e '.[dev]'.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from eval_conflicts import (explained_pairs, labelled_cases, load_store,  # noqa: E402
                            near_copies)

from dmm.config import DEFAULTS  # noqa: E402
from dmm.conflicts.calibration import (EVIDENCE, FEATURES, WEIGHTS_FILE,  # noqa: E402
                                       pair_features)
from dmm.conflicts.features import build  # noqa: E402
from dmm.conflicts.merger import by_pair, kind_of  # noqa: E402
from dmm.conflicts.scanner import candidates  # noqa: E402


def examples(eval_dir: Path, more: list[Path] = ()) -> list[dict]:
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
    stores = [p for real in [eval_dir / "real", *more] if real.is_dir()
              for p in real.iterdir() if (p / "memory").is_dir()]
    for store in sorted(stores, key=lambda p: p.name):
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


class Model(NamedTuple):
    intercept: float
    coefficients: list[float]

    def predict(self, rows: list[dict]) -> list[float]:
        return [1.0 / (1.0 + math.exp(-(self.intercept + sum(
            w * r["x"][f] for f, w in zip(USED, self.coefficients))))) for r in rows]


def fit(rows: list[dict], c: float) -> Model:
    """L2-regularised logistic regression (scikit-learn's objective: half the squared weights
    plus C times the log loss, the intercept free), with the weights of EVIDENCE kept >= 0
    (scipy's L-BFGS-B, which scikit-learn's LogisticRegression has no bounds for)."""
    import numpy as np
    from scipy.optimize import minimize
    from scipy.special import expit

    X = np.array([[r["x"][f] for f in USED] for r in rows], dtype=float)
    y = np.array([r["label"] for r in rows], dtype=float)

    def objective(theta):
        z = X @ theta[1:] + theta[0]
        loss = np.sum(y * np.logaddexp(0, -z) + (1 - y) * np.logaddexp(0, z))
        residual = expit(z) - y
        grad = np.concatenate([[c * residual.sum()], theta[1:] + c * (X.T @ residual)])
        return 0.5 * theta[1:] @ theta[1:] + c * loss, grad

    bounds = [(None, None)] + [(0.0, None) if f in EVIDENCE else (None, None) for f in USED]
    result = minimize(objective, np.zeros(len(USED) + 1), jac=True, method="L-BFGS-B",
                      bounds=bounds, options={"maxiter": 10000})
    return Model(float(result.x[0]), [float(w) for w in result.x[1:]])


def predict(model: Model, rows: list[dict]) -> list[float]:
    return model.predict(rows)


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


GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)


def log_loss(rows: list[dict], probability: list[float | None]) -> tuple[float, float]:
    """Mean held-out log loss over the reported pairs (the pairs with a prediction), and its
    standard error."""
    import math

    losses = [-math.log(p if y else 1 - p) for y, p in
              ((r["label"], min(max(p, 1e-6), 1 - 1e-6))
               for r, p in zip(rows, probability) if p is not None)]
    n = max(1, len(losses))
    mean = sum(losses) / n
    spread = math.sqrt(sum((x - mean) ** 2 for x in losses) / max(1, n - 1))
    return mean, spread / math.sqrt(n)


def chosen_c(losses: dict[float, tuple[float, float]]) -> float:
    """The strongest regularisation whose held-out loss is within one standard error of the
    best (the one-standard-error rule): with a hundred-odd examples, a weaker one buys a
    smaller loss that is noise, and weights sharp enough to overrule every analyzer."""
    best = min(losses, key=lambda c: losses[c][0])
    bound = losses[best][0] + losses[best][1]
    return min(c for c, (loss, _) in losses.items() if loss <= bound)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("eval_dir", type=Path)
    ap.add_argument("--c", type=float, help="inverse regularisation strength (default: the "
                    "smallest value of GRID within one standard error of the lowest held-out "
                    "log loss)")
    ap.add_argument("--threshold", type=float, default=DEFAULTS["conflicts"]["min_confidence"])
    ap.add_argument("--dry-run", action="store_true", help="do not write the weights")
    ap.add_argument("--stores", action="append", default=[], type=Path,
                    help="a folder of more real stores (repeatable): negatives unless their "
                         "truth.json records the pair")
    ap.add_argument("--without", action="append", default=[], choices=FEATURES,
                    help="leave a feature out (an ablation; implies --dry-run)")
    args = ap.parse_args()
    from tabulate import tabulate

    USED[:] = [f for f in FEATURES if f not in args.without]
    args.dry_run = args.dry_run or bool(args.without)
    rows = examples(args.eval_dir, args.stores)
    scored = [r for r in rows if r["x"] is not None]
    losses = {}
    for c in ([args.c] if args.c else GRID):
        losses[c] = log_loss(rows, cross_validated(rows, c))
        print(f"C={c:g}: held-out log loss {losses[c][0]:.4f} (standard error "
              f"{losses[c][1]:.4f})", file=sys.stderr)
    args.c = chosen_c(losses)
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
    weights = {"intercept": round(model.intercept, 4),
               "coefficients": {f: round(w, 4) for f, w in zip(USED, model.coefficients)},
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
