"""Rule extraction (PRD phase 3, section 5.5): a language model the person configured reads a
candidate pair, extracts each memory's rules and says whether they contradict.

Not one of the analyzers every scan runs (registry()): it needs the judge (dmm/judge/), and
runs as a second pass of `dmm conflicts scan --include-rule-extraction` (or of every scan with
``[judge] use_rule_extraction``). Its candidates, one way, for each memory the scan is about:

- the K nearest active memories by dmm's own similarity (the TF-IDF cosine of the scan's
  vectors, scanner.nearest, as index/similar.py computes it from the cache). Measured on the
  shared labelled sets pooled into one store each (tools/judge_eval.py --candidates): of
  the labelled pairs of active memories (a scan judges no other), the partner is among the
  5 nearest for 45 of 46 in `dev` and 49 of 50 in `dev2` (K chosen on dev, where 5 is the
  smallest K that finds every pair it can; dev2 held out), 3.2 pairs per memory; the query
  ranking (BM25 of the full text) finds fewer;
- every pair another analyzer flagged (so that a verdict can raise or lower it).

The prompt is the seed's, with each memory fenced as data (judge/prompts.py) and each
contradiction asked with the clause of each memory it rests on, word for word. A verdict whose
quotes are not in the memories is dropped (a model that invents a clause has not read it).
What survives becomes evidence on the conflict (method ``rule_extraction``, the model, the
rules in conflict): a "conflict" raises the pair's confidence (or makes a conflict no rule
found), a "no conflict" lowers a contradiction's. The judge never decides: people resolve.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field

from dmm.conflicts import verdicts
from dmm.conflicts.model import Candidate
from dmm.memory.model import Memory

NAME = "rule_extraction"
PROMPT_VERSION = "rule-extraction-1"  # bump when the prompt or schema changes: re-judged
MAX_MEMORY_CHARS = 6000  # of each memory's text sent (about 1,500 tokens)
MAX_OUTPUT_TOKENS = 1200
CHARS_PER_TOKEN = 4  # the estimate said before sending
OUTPUT_TOKENS_ESTIMATE = 250  # a typical verdict
FAILURES_IN_A_ROW = 3  # then the rest of the scan's pairs are not sent
KEEP_EVERY = 25  # verdicts written to the cache together (and every KEEP_SECONDS)
KEEP_SECONDS = 5.0
MIN_QUOTE_CHARS = 8
MAX_TEXT = 300  # characters of any string of a verdict that dmm keeps

_TEXT = {"type": "string", "maxLength": 4000}
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["memory1_rules", "memory2_rules", "conflicts", "overall_conflict",
                 "confidence", "explanation"],
    "properties": {
        "memory1_rules": {"type": "array", "maxItems": 50, "items": _TEXT},
        "memory2_rules": {"type": "array", "maxItems": 50, "items": _TEXT},
        "conflicts": {"type": "array", "maxItems": 20, "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["rule1", "rule2", "quote1", "quote2", "contradiction", "severity"],
            "properties": {"rule1": _TEXT, "rule2": _TEXT, "quote1": _TEXT, "quote2": _TEXT,
                           "contradiction": _TEXT,
                           "severity": {"enum": ["high", "medium", "low"]}}}},
        "overall_conflict": {"type": "boolean"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "explanation": _TEXT,
    },
}

SYSTEM = ("You review a team's memory store: short markdown notes of rules, facts and "
          "decisions that coding agents follow. You compare two of them and say whether they "
          "contradict, answering only with the JSON object asked for. ")

PROMPT = """Analyze these two memory entries and determine if they conflict.

## Memory 1
{memory1}

## Memory 2
{memory2}

## Analysis Tasks

1. Extract the key rules or claims from each memory
2. Compare the rules for logical contradiction
3. Determine if they conflict
4. For each conflict, copy word for word the clause of Memory 1 (quote1) and the clause of
   Memory 2 (quote2) it rests on

## Response Format

```json
{{
  "memory1_rules": ["rule1", "rule2", ...],
  "memory2_rules": ["rule1", "rule2", ...],
  "conflicts": [
    {{
      "rule1": "...",
      "rule2": "...",
      "quote1": "the exact words of Memory 1",
      "quote2": "the exact words of Memory 2",
      "contradiction": "description of how they contradict",
      "severity": "high|medium|low"
    }}
  ],
  "overall_conflict": true|false,
  "confidence": 0.0-1.0,
  "explanation": "..."
}}
```

Be conservative: only report conflicts if the rules genuinely contradict. Different
recommendations for different contexts are not conflicts. A newer memory that records a change
to what an older one says is a conflict (the older one is stale)."""


def system_prompt() -> str:
    from dmm.judge.prompts import SYSTEM_DATA_RULE

    return SYSTEM + SYSTEM_DATA_RULE


def memory_text(m: Memory) -> str:
    """What the model reads of a memory (scope and markdown, the title heading included), at
    most MAX_MEMORY_CHARS; verdicts.text_hash hashes the same fields."""
    body = m.body if len(m.body) <= MAX_MEMORY_CHARS else (
        m.body[:MAX_MEMORY_CHARS] + "\n[... the rest of this memory is not shown]")
    return f"Scope: {m.scope}\n\n{body}"


def build_prompt(first: Memory, second: Memory) -> str:
    from dmm.judge.prompts import fence, new_tag

    tag = new_tag()
    return PROMPT.format(memory1=fence(memory_text(first), "memory 1", tag),
                         memory2=fence(memory_text(second), "memory 2", tag))


def estimate_tokens(first: Memory, second: Memory) -> int:
    """Tokens a pair costs, about: its prompt's characters / 4 and a typical verdict."""
    chars = (len(SYSTEM) + 500 + len(PROMPT) + len(memory_text(first))
             + len(memory_text(second)))
    return chars // CHARS_PER_TOKEN + OUTPUT_TOKENS_ESTIMATE


# ------------------------------------------------------------------ checking a verdict

_WORDS = re.compile(r"[^\W_]+")
_ELLIPSIS = re.compile(r"\.\.\.|…")


def _normal(text: str) -> str:
    """The words of ``text``, lower case, one space apart: markdown, punctuation and line
    breaks are not what a quote is checked on."""
    return " ".join(_WORDS.findall(text.casefold()))


def quoted(quote: str, memory: Memory) -> bool:
    """Whether ``quote`` is words of ``memory``, in its order (case, punctuation, spacing and
    markdown aside; "..." joins parts that must each be there, in order)."""
    haystack = f" {_normal(memory.body)} "
    parts = [f" {_normal(p)} " for p in _ELLIPSIS.split(quote)]
    parts = [p for p in parts if p.strip()]
    if not parts or sum(len(p.strip()) for p in parts) < MIN_QUOTE_CHARS:
        return False
    at = 0
    for part in parts:
        at = haystack.find(part, at)
        if at < 0:
            return False
        at += len(part) - 1  # the next part may start at this one's closing space
    return True


def clean(text: object, limit: int = MAX_TEXT) -> str:
    """A model's string as dmm keeps it: one line, no control or reordering characters, at
    most ``limit`` characters (dmm.judge.text, the one cleaner of model text)."""
    from dmm.judge.text import one_line

    return one_line(text, limit)


def check(data: dict, first: Memory, second: Memory, model: str) -> dict:
    """The verdict dmm keeps from a schema-valid answer: its conflicts whose quotes are in the
    memories (the others counted as ``unverified``), bounded and cleaned. A "conflict" with
    no verified clause left is kept as unverified: it changes nothing."""
    rules = []
    unverified = 0
    for c in data["conflicts"]:
        if quoted(c["quote2"], first) and quoted(c["quote1"], second) and not (
                quoted(c["quote1"], first) and quoted(c["quote2"], second)):
            # the two memories' clauses given the other way round: the same finding
            c = {**c, "rule1": c["rule2"], "rule2": c["rule1"], "quote1": c["quote2"],
                 "quote2": c["quote1"]}
        if quoted(c["quote1"], first) and quoted(c["quote2"], second):
            rules.append({"rule1": clean(c["rule1"]), "rule2": clean(c["rule2"]),
                          "quote1": clean(c["quote1"]), "quote2": clean(c["quote2"]),
                          "contradiction": clean(c["contradiction"]),
                          "severity": c["severity"]})
        else:
            unverified += 1
    conflict = bool(data["overall_conflict"])
    return {"model": clean(model, 200), "conflict": conflict and bool(rules),
            "unverified": conflict and not rules, "confidence": float(data["confidence"]),
            "rules": rules[:5], "dropped_quotes": unverified,
            "explanation": clean(data["explanation"], 500)}


def candidate(a: str, b: str, verdict: dict) -> Candidate | None:
    """A checked verdict on the pair (a, b), ``a`` the memory the prompt showed first, as an
    analyzer's candidate (None: it says nothing: an unverified "conflict")."""
    if verdict.get("unverified"):
        return None
    model = verdict.get("model", "?")
    p = max(0.0, min(1.0, float(verdict.get("confidence", 0.0))))
    if not verdict.get("conflict"):
        return Candidate(a, b, NAME, "", p,
                         f"{model}: no conflict ({verdict.get('explanation', '')})")
    rule = verdict["rules"][0]
    quotes = (rule["quote1"], rule["quote2"])
    said = "; ".join(f"{r['rule1']!r} <> {r['rule2']!r}" for r in verdict["rules"])
    return Candidate(a, b, NAME, "contradictory", p, f"{model}: rules in conflict: {said}",
                     statements=quotes, on_point=0.0)


# ------------------------------------------------------------------ the pass


@dataclass
class Report:
    """What the pass did, for the scan's result (and `dmm conflicts scan`'s lines)."""

    model: str
    where: str = ""
    candidates: int = 0  # pairs worth judging
    cached: int = 0  # of those, judged before (free)
    sent: int = 0  # asked now
    failed: int = 0
    skipped: int = 0  # left for a later scan: over max_pairs or max_tokens, or after failures
    estimated_tokens: int = 0  # of the pairs to send, before sending
    input_tokens: int = 0  # as the service counted them
    output_tokens: int = 0
    model_seconds: float = 0.0
    conflicts: int = 0  # verdicts saying "conflict" (verified), cached or new
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = dict(self.__dict__)
        out["model_seconds"] = round(self.model_seconds, 3)
        return out


class RuleExtraction:
    """The second pass of one scan. ``judge``: a dmm.judge.client.Judge to ask, or None to
    apply cached verdicts only (a scan not asked to judge, with the judge on: free)."""

    def __init__(self, settings, judge=None, *, announce=None, progress=None):
        self.settings = settings
        self.judge = judge
        self.model = settings.model  # the cache's key: the model as configured
        self.report = Report(self.model, judge.where if judge else "")
        self.announce = announce  # (pairs, tokens, model, where) before sending
        self.progress = progress  # (done, total) while sending

    def partners(self, conn: sqlite3.Connection, focus: set[str] | None) -> set[str]:
        """Memories a scan of ``focus`` must load besides its own: cached verdicts' other
        memories (a full scan loads them all)."""
        if focus is None:
            return set()
        return verdicts.partners(conn, self.model, PROMPT_VERSION, focus)

    def judge_now(self, conn: sqlite3.Connection, memories: dict[str, Memory],
                  focus: set[str], flagged: set[tuple[str, str]],
                  near: dict[str, list[str]]) -> None:
        """Ask the judge about the candidate pairs of ``focus`` not judged before, within the
        budget, and keep each verdict in the cache. ``memories``: the scan's memories by id;
        ``flagged``: pairs other analyzers found; ``near``: each focus memory's nearest."""
        active = {i for i, m in memories.items() if m.is_active}
        pairs = self.candidate_pairs(memories, focus, flagged, near, active)
        self.report.candidates = len(pairs)
        hashes = {i: verdicts.text_hash(memories[i]) for p in pairs for i in p}
        cached = verdicts.lookup(conn, self.model, PROMPT_VERSION, focus, hashes)
        todo = [p for p in pairs if _ordered(p, hashes) not in cached]
        self.report.cached = len(pairs) - len(todo)
        todo = self._within_budget(todo, memories)
        if not todo:
            return
        if self.announce:
            self.announce(len(todo), self.report.estimated_tokens, self.judge.model_id,
                          self.judge.where)
        self._send(conn, todo, memories, hashes)

    @staticmethod
    def candidate_pairs(memories: dict[str, Memory], focus: set[str],
                        flagged: set[tuple[str, str]], near: dict[str, list[str]],
                        active: set[str]) -> list[tuple[str, str]]:
        """Flagged pairs first (a verdict on them changes what is reported), then each focus
        memory's nearest, nearest first; each pair once."""
        out: dict[tuple[str, str], None] = {}
        for a, b in sorted(flagged):
            if a in active and b in active and (a in focus or b in focus):
                out[(min(a, b), max(a, b))] = None
        for i in sorted(focus & active):
            for j in near.get(i, ()):
                if j in active:
                    out.setdefault((min(i, j), max(i, j)), None)
        return list(out)

    def _within_budget(self, todo: list, memories: dict[str, Memory]) -> list:
        """The pairs max_pairs and max_tokens allow, in order; the rest are skipped (a later
        scan sends them: what was judged is cached)."""
        kept, tokens = [], 0
        for a, b in todo:
            cost = estimate_tokens(memories[a], memories[b])
            if len(kept) >= self.settings.max_pairs or tokens + cost > self.settings.max_tokens:
                break
            kept.append((a, b))
            tokens += cost
        self.report.skipped = len(todo) - len(kept)
        self.report.estimated_tokens = tokens
        if self.report.skipped:
            self.report.errors.append(
                f"the judge was sent {len(kept)} of {len(todo)} pairs ([judge] max_pairs "
                f"{self.settings.max_pairs}, max_tokens {self.settings.max_tokens}): the next "
                "scan sends the rest")
        return kept

    def _send(self, conn: sqlite3.Connection, todo: list, memories: dict[str, Memory],
              hashes: dict[str, str]) -> None:
        """Ask about each pair in turn, keeping the verdicts in the cache every KEEP_EVERY
        verdicts or KEEP_SECONDS, and whatever is left at the end, interrupted or not."""
        pending: list[tuple] = []
        try:
            self._ask_each(conn, todo, memories, hashes, pending)
        finally:  # what was paid for is kept, even when the scan is interrupted
            verdicts.keep(conn, pending)

    def _ask_each(self, conn: sqlite3.Connection, todo: list, memories: dict[str, Memory],
                  hashes: dict[str, str], pending: list[tuple]) -> None:
        import time

        from dmm.judge.client import JudgeFailed, JudgeUnavailable

        system = system_prompt()
        in_a_row = 0
        kept_at = time.monotonic()
        for done, pair in enumerate(todo):
            first, second = (memories[i] for i in _ordered(pair, hashes))
            try:
                answer = self.judge.ask(system=system, prompt=build_prompt(first, second),
                                        schema=SCHEMA, max_output_tokens=MAX_OUTPUT_TOKENS)
            except (JudgeFailed, JudgeUnavailable) as exc:
                self.report.failed += 1
                in_a_row += 1
                if len(self.report.errors) < 5:
                    self.report.errors.append(f"judge: {exc.message}")
                if in_a_row >= FAILURES_IN_A_ROW or isinstance(exc, JudgeUnavailable):
                    left = len(todo) - done - 1
                    self.report.skipped += left
                    if left:
                        self.report.errors.append(f"judge: stopped after {in_a_row} failures "
                                                  f"in a row; {left} pairs not sent")
                    break
                continue
            in_a_row = 0
            self.report.sent += 1
            self.report.input_tokens += answer.input_tokens or 0
            self.report.output_tokens += answer.output_tokens or 0
            self.report.model_seconds += answer.seconds
            verdict = check(answer.data, first, second, answer.model)
            pending.append(verdicts.row(first, second, self.model, PROMPT_VERSION, verdict))
            if len(pending) >= KEEP_EVERY or time.monotonic() - kept_at >= KEEP_SECONDS:
                verdicts.keep(conn, pending)
                pending.clear()
                kept_at = time.monotonic()
            if self.progress:
                self.progress(done + 1, len(todo))

    def candidates(self, conn: sqlite3.Connection, features: dict, focus: set[str],
                   ) -> list[Candidate]:
        """The cached verdicts about pairs of the scan's memories (``features``: those loaded)
        with a memory of ``focus``, as candidates for the merger."""
        hashes = {i: verdicts.text_hash(f.memory) for i, f in features.items()}
        whole = len(focus) == len(features)
        found = verdicts.lookup(conn, self.model, PROMPT_VERSION, None if whole else focus,
                                hashes)
        out = []
        for (a, b), verdict in sorted(found.items()):
            if not (features[a].memory.is_active and features[b].memory.is_active):
                continue
            c = candidate(a, b, verdict)
            if c is not None:
                self.report.conflicts += c.type == "contradictory"
                out.append(c)
        return out


def _ordered(pair: tuple[str, str], hashes: dict[str, str]) -> tuple[str, str]:
    """The pair in the order the cache and the prompt show it: by text hash (then id)."""
    a, b = pair
    return (a, b) if (hashes[a], a) <= (hashes[b], b) else (b, a)
