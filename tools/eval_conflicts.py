"""Score conflict detection on every evaluation set at once and print one table.

    python tools/eval_conflicts.py EVAL_DIR            # the table, then the held-out one
    python tools/eval_conflicts.py EVAL_DIR --details  # every miss and false alarm, with evidence
    python tools/eval_conflicts.py EVAL_DIR --json out.json

EVAL_DIR holds labelled splits (folders of cases, each with `memory/` laid out like
`.dmm/memory/` and `expected.json` listing every conflicting pair and its type) and `real/`
(whole stores, each with `memory/` and an optional `truth.json` of the pairs that are real
relations). Labelled splits are scored for precision, recall and type accuracy over pairs; a
real store for the flags nothing explains, per 100 memories: a flagged pair is explained when
truth.json records it or when it is a duplicate whose bodies are near copies (difflib ratio
>= 0.6 on their first 3,000 characters), the same rule as the shared scorers.

It runs the scan's own detection (`dmm.conflicts.scanner.detect`) on the parsed memory files
(with the starter memory `dmm init` adds, as the shared scorers' stores have it), in-process: no git repository, no cache, so every set takes seconds. `dmm conflicts scan --full`
reads the same memories and runs the same function, so the figures are those of a full scan
(tests/conflicts/test_eval_tool.py checks that the two agree on a store).
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dmm.config import DEFAULTS  # noqa: E402
from dmm.conflicts.features import build  # noqa: E402
from dmm.conflicts.scanner import detect  # noqa: E402
from dmm.memory.parse import parse_memory  # noqa: E402


def load(memory_dir: Path) -> list:
    """The valid memories under ``memory_dir`` (as a scan would see them)."""
    out, seen = [], set()
    for path in sorted(memory_dir.rglob("*.md")):
        rel = path.relative_to(memory_dir).as_posix()
        memory, _ = parse_memory(path.read_text(encoding="utf-8", errors="replace"), rel)
        if memory is not None and memory.id not in seen:
            seen.add(memory.id)
            out.append(memory)
    return out


def load_store(memory_dir: Path) -> list:
    """The memories a store has after `dmm init` and a copy of ``memory_dir`` into it, as the
    shared scorers build it: the starter baseline memory `dmm init` writes is part of the
    store, and of the document frequencies every analyzer weighs words with."""
    import tempfile

    from dmm.scaffold import init
    from dmm.workspace import Workspace

    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp))
        init(ws)
        given = load(memory_dir)
        paths = {m.path for m in given}
        return [m for m in load(ws.memory_dir) if m.path not in paths] + given


def run(memories: list, config: dict | None = None) -> list:
    features = build(memories)
    return detect(features, set(features), config or dict(DEFAULTS["conflicts"]))[0]


def reported(conflicts: list) -> dict[tuple[str, str], object]:
    out = {}
    for c in conflicts:
        ids = sorted({m.memory_id for m in c.memories})
        for a, b in itertools.combinations(ids, 2):
            out[(a, b)] = c
    return out


def labelled_cases(split: Path):
    """(case folder, {pair: expected type}) of every case of a labelled split."""
    for case in sorted(p for p in split.iterdir() if (p / "expected.json").exists()):
        want = json.loads((case / "expected.json").read_text())["conflicts"]
        yield case, {tuple(sorted(c["memories"])): c["type"] for c in want}


def explained_pairs(store: Path) -> set[tuple[str, str]]:
    """The pairs a real store's truth.json records as real relations."""
    truth_file = store / "truth.json"
    if not truth_file.exists():
        return set()
    truth = json.loads(truth_file.read_text())
    out: set[tuple[str, str]] = set()
    for key, a, b in (("supersession_pairs", "new", "old"), ("unmarked_candidates", "new", "old"),
                      ("other_relations", "this", "other")):
        out |= {tuple(sorted((p[a], p[b]))) for p in truth.get(key, [])}
    return out


def near_copies(a, b) -> bool:
    """Two bodies that are near copies (difflib ratio >= 0.6 on the first 3,000 characters)."""
    return difflib.SequenceMatcher(None, a.content[:3000], b.content[:3000],
                                   autojunk=False).ratio() >= 0.6


def score_split(split: Path, config: dict | None = None) -> dict:
    tp = fp = fn = typed = 0
    details = []
    for case, want in labelled_cases(split):
        got = reported(run(load_store(case / "memory"), config))
        for pair, kind in want.items():
            if pair in got:
                tp += 1
                typed += got[pair].type == kind
                if got[pair].type != kind:
                    details.append(("wrong type", case.name, pair, f"{got[pair].type} "
                                    f"(expected {kind}): {got[pair].evidence}"))
            else:
                fn += 1
                details.append(("missed", case.name, pair, kind))
        for pair, c in got.items():
            if pair not in want:
                fp += 1
                details.append(("false alarm", case.name, pair, f"{c.type}: {c.evidence}"))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {"set": split.name, "kind": "labelled", "pairs": tp + fn, "reported": tp + fp,
            "precision": round(precision, 3), "recall": round(recall, 3),
            "type_accuracy": round(typed / tp, 3) if tp else 0.0, "details": details}


def score_store(store: Path, config: dict | None = None) -> dict:
    memories = load_store(store / "memory")
    by_id = {m.id: m for m in memories}
    explained = explained_pairs(store)
    got = reported(run(memories, config))
    unexplained = {pair: c for pair, c in got.items() if pair not in explained
                   and not (c.type == "duplicate" and near_copies(by_id[pair[0]],
                                                                   by_id[pair[1]]))}
    n = sum(1 for _ in (store / "memory").rglob("*.md")) or 1  # as the shared scorer counts
    details = [("false alarm", store.name, pair, f"{c.type} [{','.join(c.methods)}]: "
                f"{by_id[pair[0]].title!r} vs {by_id[pair[1]].title!r}: {c.evidence}")
               for pair, c in sorted(unexplained.items())]
    return {"set": store.name, "kind": "real", "memories": n, "flagged": len(got),
            "unexplained": len(unexplained),
            "unexplained_per100": round(100 * len(unexplained) / n, 1), "details": details}


def evaluate(eval_dir: Path, config: dict | None = None) -> list[dict]:
    rows = []
    for split in sorted(p for p in eval_dir.iterdir() if p.is_dir() and p.name != "real"):
        if any((case / "expected.json").exists() for case in split.iterdir() if case.is_dir()):
            rows.append(score_split(split, config))
    real = eval_dir / "real"
    if real.is_dir():
        rows += [score_store(s, config) for s in sorted(real.iterdir())
                 if (s / "memory").is_dir()]
    return rows


def table(rows: list[dict]) -> str:
    from tabulate import tabulate

    body = []
    for r in rows:
        if r["kind"] == "labelled":
            body.append([r["set"], r["pairs"], r["precision"], r["recall"], r["type_accuracy"],
                         ""])
        else:
            body.append([r["set"], r["memories"], "", "", "", r["unexplained_per100"]])
    return tabulate(body, headers=["set", "pairs / memories", "precision", "recall",
                                   "type accuracy", "unexplained per 100"],
                    tablefmt="github", floatfmt=".3f")


def held_out_table() -> str:
    """The cross-validated figures of the shipped weights, recorded by tools/fit_conflicts.py:
    each set scored by weights fitted without its case or its store."""
    from tabulate import tabulate

    from dmm.conflicts.calibration import weights

    fitted = weights()
    body = [[name, f.get("precision", ""), f.get("recall", ""), f.get("type_accuracy", ""),
             f.get("unexplained_per100", "")] for name, f in fitted.get("held_out", {}).items()]
    return (f"Held out (weights of {fitted.get('fitted', '?')} refitted without each case and "
            "each store):\n" + tabulate(body, headers=["set", "precision", "recall",
                                                       "type accuracy", "unexplained per 100"],
                                        tablefmt="github", floatfmt=".3f"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("eval_dir", type=Path, help="folder of labelled splits and real/ stores")
    ap.add_argument("--details", action="store_true", help="print every miss and false alarm")
    ap.add_argument("--json", type=Path, help="write every figure and detail to this file")
    args = ap.parse_args()
    rows = evaluate(args.eval_dir)
    if args.details:
        for r in rows:
            for what, where, pair, note in r["details"]:
                print(f"{r['set']}/{where}: {what} {pair[0]} {pair[1]}: {note}")
        print()
    print(table(rows))
    print()
    print(held_out_table())
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
