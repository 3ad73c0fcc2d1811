"""Score a language model as dmm's judge (rule extraction, docs/conflicts.md#the-judge) on the
labelled sets and real stores, or the ceiling its candidates allow.

    python tools/judge_eval.py EVAL_DIR --model gpt-4o-mini    # any model `llm models` lists
    python tools/judge_eval.py EVAL_DIR --oracle               # answers from the labels
    python tools/judge_eval.py EVAL_DIR --off                  # the rules alone, as today
    python tools/judge_eval.py EVAL_DIR --candidates           # recall of the k nearest

EVAL_DIR holds labelled splits (folders of cases with `memory/` and `expected.json`) and
`real/` (whole stores with `memory/` and an optional `truth.json`), as the shared scorers read
them. Every case and store becomes a real repository with `dmm init`, its memories copied in
and the cache built, then `run_scan(full=True, rule_extraction=True)` runs exactly as
`dmm conflicts scan --full --include-rule-extraction` does, with the model named in the store's
`[judge]`; the conflicts listed after it are scored as score.py and score_real.py score them:

- labelled splits: precision, recall, type accuracy over pairs, per case (each case its own
  store, as score.py builds it) and pooled (every case of a split in one store, so that the
  k nearest must find the partner among some 200 memories: the candidates' real test);
- real stores: flags, and unexplained flags (neither in truth.json nor a duplicate whose
  bodies are near copies) per 100 memories;
- and for the judge: pairs sent, tokens (as the service counted them; the oracle counts
  characters / 4) and seconds per pair.

``--oracle`` registers a stand-in model that answers from the labels (a conflict exactly when
the pair is labelled, quoting a line of each memory): the figures are the ceiling the
candidates and the merging allow a perfect judge. ``--candidates`` prints, per k, the share of
labelled pairs whose partner is among a memory's k nearest (one way, pooled stores) and the
pairs per memory a scan sends on each real store: how k was chosen.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from eval_conflicts import explained_pairs, labelled_cases  # noqa: E402

ORACLE = "dmm-oracle"


# ------------------------------------------------------------------ stores


def make_store(tmp: Path, parts: list[tuple[str, Path]], judge: dict | None):
    """A repository with dmm initialised, the memory folders of ``parts`` copied in (each
    under its name inside its scope folder when named) and ``[judge]`` set; (workspace,
    connection to its fresh cache)."""
    from dmm.index.refresh import open_fresh
    from dmm.scaffold import init
    from dmm.workspace import Workspace

    root = Path(tempfile.mkdtemp(dir=tmp))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    ws = Workspace(root)
    init(ws)
    for name, memory in parts:
        for path in memory.rglob("*.md"):
            rel = path.relative_to(memory)
            dest = (ws.memory_dir / rel.parts[0] / name / Path(*rel.parts[1:]) if name
                    else ws.memory_dir / rel)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    if judge is not None:
        text = ws.config_path.read_text(encoding="utf-8")
        table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in judge.items())
        ws.config_path.write_text(text[:text.index("\n[judge]")] + f"\n[judge]\n{table}\n",
                                  encoding="utf-8")
        subprocess.run(["git", "config", "dmm.judge", judge["model"]], cwd=root, check=True)
    conn, _ = open_fresh(ws)
    return ws, conn


def scan_store(ws, conn, judged: bool) -> tuple[dict, dict | None]:
    """The pairs a full scan reports ({(a, b): conflict}) and the judge's report."""
    from dmm.conflicts import service

    result = service.run_scan(ws, conn, full=True, rule_extraction=judged or None)
    found, _ = service.conflicts(ws, conn, status="unresolved", scan=False)
    pairs = {tuple(sorted(m.memory_id for m in c.memories)): c for c in found}
    return pairs, result.judge


# ------------------------------------------------------------------ the oracle


class Oracle:
    """The stand-in that answers from the labels of the store being scanned."""

    labels: set[frozenset] = set()
    texts: dict[str, object] = {}  # fenced text of a memory -> the memory

    @classmethod
    def prepare(cls, conn, labels: set) -> None:
        from dmm.conflicts.analyzers.rule_extraction import memory_text
        from dmm.index import read

        cls.labels = {frozenset(p) for p in labels}
        cls.texts = {_fenced(memory_text(m)): m for m in read.memories(conn)}

    @classmethod
    def answer(cls, prompt: str) -> dict:
        bodies = re.findall(r"<<<memory (\d) ([0-9a-f]+)>>>\n(.*?)\n<<<end memory \1 \2>>>",
                            prompt, re.S)
        found = [cls.texts.get(body) for _, _, body in bodies]
        if len(found) != 2 or None in found:
            raise RuntimeError("the oracle could not tell which memories it was shown")
        first, second = found
        conflict = frozenset((first.id, second.id)) in cls.labels
        quotes = [_line(first), _line(second)]
        return {"memory1_rules": [quotes[0]], "memory2_rules": [quotes[1]],
                "conflicts": [{"rule1": quotes[0], "rule2": quotes[1], "quote1": quotes[0],
                               "quote2": quotes[1], "contradiction": "labelled",
                               "severity": "high"}] if conflict else [],
                "overall_conflict": conflict, "confidence": 0.95,
                "explanation": "labelled" if conflict else "not labelled"}


def _fenced(text: str) -> str:
    """A text as judge/prompts.fence shows it inside its markers."""
    return re.sub(r"<<<|>>>", lambda m: "‹‹‹" if m.group() == "<<<" else "›››", text)


def _line(memory) -> str:
    """Words of the memory to quote: the first 20 of its first line of at least 8
    characters (a quote is checked on whole words)."""
    for line in memory.body.splitlines():
        line = line.strip(" #*-`>")
        if len(line) >= 8:
            return " ".join(line.split()[:20])
    return " ".join(memory.body.split()[:20])


def register_oracle() -> None:
    import llm
    from llm.plugins import load_plugins, pm

    class OracleModel(llm.Model):
        model_id = ORACLE
        can_stream = False
        supports_schema = True

        def execute(self, prompt, stream, response, conversation):
            text = json.dumps(Oracle.answer(prompt.prompt))
            response.set_usage(input=(len(prompt.prompt) + len(prompt.system or "")) // 4,
                               output=len(text) // 4)
            yield text

    class Plugin:
        @staticmethod
        @llm.hookimpl
        def register_models(register):
            register(OracleModel())

    load_plugins()
    pm.register(Plugin, name="dmm-judge-oracle")


# ------------------------------------------------------------------ scoring


def score_labelled(tmp: Path, split: Path, judge: dict | None, pooled: bool) -> dict:
    cases = list(labelled_cases(split))
    groups = ([(f"{split.name} (pooled)", [(c.name, c / "memory") for c, _ in cases],
                {p: k for _, want in cases for p, k in want.items()})] if pooled else
              [(case.name, [("", case / "memory")], want) for case, want in cases])
    tp = fp = fn = typed = 0
    totals: dict = {}
    for _name, parts, want in groups:
        ws, conn = make_store(tmp, parts, judge)
        try:
            if judge and judge["model"] == ORACLE:
                Oracle.prepare(conn, set(want))
            got, report = scan_store(ws, conn, judge is not None)
        finally:
            conn.close()
        _add(totals, report)
        tp += sum(1 for p in want if p in got)
        typed += sum(1 for p, k in want.items() if p in got and got[p].type == k)
        fn += sum(1 for p in want if p not in got)
        fp += sum(1 for p in got if p not in want)
    return {"set": f"{split.name}{' pooled' if pooled else ''}", "pairs": tp + fn,
            "reported": tp + fp, "precision": _ratio(tp, tp + fp),
            "recall": _ratio(tp, tp + fn), "type_accuracy": _ratio(typed, tp), **totals}


def score_real(tmp: Path, store: Path, judge: dict | None) -> dict:
    from eval_conflicts import load, near_copies

    explained = explained_pairs(store)
    ws, conn = make_store(tmp, [("", store / "memory")], judge)
    try:
        if judge and judge["model"] == ORACLE:
            Oracle.prepare(conn, explained)
        got, report = scan_store(ws, conn, judge is not None)
    finally:
        conn.close()
    by_id = {m.id: m for m in load(store / "memory")}
    unexplained = [p for p, c in got.items() if p not in explained and not (
        c.type == "duplicate" and p[0] in by_id and p[1] in by_id
        and near_copies(by_id[p[0]], by_id[p[1]]))]
    n = sum(1 for _ in (store / "memory").rglob("*.md")) or 1
    totals: dict = {}
    _add(totals, report)
    return {"set": store.name, "memories": n, "flagged": len(got),
            "flags_per100": round(100 * len(got) / n, 1),
            "unexplained_per100": round(100 * len(unexplained) / n, 1), **totals}


def _add(totals: dict, report: dict | None) -> None:
    if not report:
        return
    for key in ("candidates", "sent", "failed", "input_tokens", "output_tokens",
                "model_seconds", "conflicts"):
        totals[key] = totals.get(key, 0) + report[key]
    sent = max(totals["sent"], 1)
    totals["tokens_per_pair"] = round((totals["input_tokens"] + totals["output_tokens"]) / sent)
    totals["seconds_per_pair"] = round(totals["model_seconds"] / sent, 3)


def _ratio(a: int, b: int) -> float:
    return round(a / b, 3) if b else 0.0


def candidates(tmp: Path, eval_dir: Path, ks: list[int]) -> list[dict]:
    """Recall of the k nearest (pooled labelled splits) and pairs per memory (real stores)."""
    from dmm.conflicts.scanner import load_features, nearest

    rows = []
    splits = [p for p in sorted(eval_dir.iterdir()) if p.is_dir() and p.name != "real"
              and any((c / "expected.json").exists() for c in p.iterdir() if c.is_dir())]
    stores = [s for s in sorted((eval_dir / "real").iterdir()) if (s / "memory").is_dir()]
    for name, parts, want in (
            [(s.name, [(c.name, c / "memory") for c, _ in labelled_cases(s)],
              {p for _, w in labelled_cases(s) for p in w}) for s in splits]
            + [(s.name, [("", s / "memory")], set()) for s in stores]):
        ws, conn = make_store(tmp, parts, None)
        try:
            features, focus = load_features(conn, None)
            near = nearest(features, focus, max(ks))
        finally:
            conn.close()
        for k in ks:
            pairs = {tuple(sorted((a, b))) for a, bs in near.items() for b in bs[:k]}
            row = {"set": name, "k": k, "pairs_per_memory": round(len(pairs) / len(near), 2)}
            if want:
                # a scan judges pairs of active memories: a labelled pair with a deprecated
                # memory is out of any scan's reach, whatever k
                active = {p for p in want if all(i in features and features[i].memory.is_active
                                                 for i in p)}
                row["recall"] = _ratio(sum(1 for p in want if p in pairs), len(want))
                row["recall_of_active_pairs"] = _ratio(sum(1 for p in active if p in pairs),
                                                       len(active))
                row["active_pairs"] = len(active)
            rows.append(row)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("eval_dir", type=Path)
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--model", help="an llm model id or alias: the judge to score")
    how.add_argument("--oracle", action="store_true", help="answers from the labels: the "
                     "ceiling the candidates allow")
    how.add_argument("--off", action="store_true", help="no judge: the rules alone")
    how.add_argument("--candidates", action="store_true", help="recall of the k nearest")
    ap.add_argument("--k", type=int, default=None, help="neighbours judged per memory "
                    "(default: [judge] k's default)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--json", type=Path, help="write the rows to this file too")
    args = ap.parse_args()
    os.environ.setdefault("DMM_SEMANTIC", "off")  # as the CLI's scans: by words
    from dmm.config import DEFAULTS

    k = args.k or DEFAULTS["judge"]["k"]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dmm_judge_eval_") as tmp:
        if args.candidates:
            rows = candidates(Path(tmp), args.eval_dir, [1, 2, 3, 4, 5, 6, 8])
        else:
            judge = None
            if not args.off:
                if args.oracle:
                    os.environ["LLM_USER_PATH"] = str(Path(tmp) / "llm")  # nobody's keys
                    register_oracle()
                judge = {"enabled": True, "model": ORACLE if args.oracle else args.model,
                         "k": k, "timeout": args.timeout, "max_pairs": 1_000_000,
                         "max_tokens": 1_000_000_000}
            rows = []
            splits = [p for p in sorted(args.eval_dir.iterdir()) if p.is_dir()
                      and p.name != "real" and any((c / "expected.json").exists()
                                                   for c in p.iterdir() if c.is_dir())]
            for split in splits:
                rows.append(score_labelled(Path(tmp), split, judge, pooled=False))
                rows.append(score_labelled(Path(tmp), split, judge, pooled=True))
            real = args.eval_dir / "real"
            if real.is_dir():
                rows += [score_real(Path(tmp), s, judge) for s in sorted(real.iterdir())
                         if (s / "memory").is_dir()]
    for row in rows:
        print(json.dumps(row))
    print(f"# {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
