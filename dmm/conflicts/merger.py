"""Merge analyzer candidates into one conflict per memory pair: ``decide`` weighs each pair
(a ``Finding``), and ``conflict`` writes the conflict of one that is reported.

The type comes from the strongest kind of evidence: structural supersession problems first,
then a recorded change (stale), then disagreement (contradictory; across two scopes that is a
diverging scope overlap), then sameness (duplicate, scope overlap). Confidence weighs every
candidate for the pair with the fitted coefficients of calibration.py; a near copy (cosine >=
NEAR_COPY) is as sure as the two texts are close. Pairs below the minimum confidence are
dropped.

A judge's verdict (analyzers/rule_extraction.py) is not one of the calibrated features: it
moves the confidence the others give. "Conflict" at confidence p: 1 - (1 - c)(1 - p), or p for
a pair no rule found (then a contradiction, or a scope overlap across scopes); "no conflict"
at p: a contradiction or scope overlap keeps c(1 - p/2), at least half of it and never less
than the minimum confidence when c was above it (a contradiction the rules report stays
listed, the judge's "no" beside it for a person to weigh), while a
duplicate, a supersession problem or a stale fact keeps c (the judge is asked whether rules
contradict, not those).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from dmm.conflicts.calibration import confidence as calibrated, pair_features
from dmm.conflicts.cues import DIRECTIVE
from dmm.conflicts.features import Features
from dmm.conflicts.pairs import NEAR_COPY, cosine
from dmm.conflicts.model import Candidate, Conflict, ConflictMemory, conflict_id, pair_key

ORDER = ("supersession", "stale", "contradictory", "scope_overlap", "duplicate")


def _memory(f: Features, role: str) -> ConflictMemory:
    return ConflictMemory.of(f.memory, role)


def by_pair(candidates: list[Candidate]) -> dict[tuple[str, str], list[Candidate]]:
    """The candidates of each pair that some analyzer says is a conflict of some type."""
    groups: dict[tuple[str, str], list[Candidate]] = defaultdict(list)
    for c in candidates:
        groups[pair_key(c.a, c.b)].append(c)
    return {pair: group for pair, group in sorted(groups.items())
            if any(c.type for c in group)}


def kind_of(group: list[Candidate], fa: Features, fb: Features) -> str:
    """The type of the conflict a pair's typed candidates make (see the module's docstring)."""
    kinds = {c.type for c in group if c.type}
    kind = next(k for k in ORDER if k in kinds)
    if kind == "contradictory" and fa.memory.scope != fb.memory.scope:
        kind = "scope_overlap"  # the same rule in two scopes, diverging
    if kind == "stale":
        older = min((fa, fb), key=lambda f: str(f.memory.created or ""))
        if DIRECTIVE.search(older.memory.title):
            kind = "contradictory"  # a change recorded next to a rule still in force
    return kind


JUDGE = "rule_extraction"
DISAGREEMENT = ("contradictory", "scope_overlap")  # what a judge's "no conflict" lowers


def judged(confidence: float, kind: str, verdict: Candidate | None, found_by_rules: bool,
           ) -> float:
    """The confidence after the judge's verdict (the module's docstring says how)."""
    if verdict is None:
        return confidence
    if verdict.type:
        if not found_by_rules:
            return min(0.99, verdict.score)
        return min(0.99, 1 - (1 - confidence) * (1 - verdict.score))
    return confidence * (1 - verdict.score / 2) if kind in DISAGREEMENT else confidence


@dataclass(slots=True)
class Finding:
    """A pair's merged verdict before its text is written: what the store's checks read
    (relations.py, sanity.py) for every pair the analyzers report, most of which those checks
    leave out on a large store (143,803 at 50,000 generated memories, 2,229 kept); only the
    kept ones become Conflicts (``conflict``), their descriptions and evidence written then.
    Hundreds of thousands at 100,000 memories: no field a check does not read is kept."""
    type: str
    confidence: float
    memory_ids: tuple[str, str]
    titles: tuple[str, str]
    group: list[Candidate]
    lead: Candidate
    evidence: str = ""  # what the checks add to the analyzers' evidence (relations.py)

    @property
    def conflict_id(self) -> str:
        return conflict_id(*self.memory_ids)

    @property
    def detection_method(self) -> str:
        return self.lead.method

    @property
    def methods(self) -> list[str]:
        return sorted({c.method for c in self.group})

    def title_of(self, memory_id: str) -> str:
        return self.titles[self.memory_ids.index(memory_id)]


def decide(candidates: list[Candidate], features: dict[str, Features], min_confidence: float,
           fitted: dict | None = None) -> list[Finding]:
    """One finding per pair some analyzer says is a conflict, at ``min_confidence`` or more:
    its type, confidence and leading candidate (the module's docstring says how)."""
    out = []
    for (a, b), group in by_pair(candidates).items():
        verdict = next((c for c in group if c.method == JUDGE), None)
        rules = [c for c in group if c.method != JUDGE]
        found_by_rules = any(c.type for c in rules)
        typed = [c for c in group if c.type]
        fa, fb = features[a], features[b]
        kind = kind_of(rules if found_by_rules else group, fa, fb)
        confidence = (min(0.99, calibrated(pair_features(fa, fb, rules), fitted))
                      if found_by_rules else 0.0)
        if kind in ("duplicate", "scope_overlap") and (sim := cosine(fa, fb)) >= NEAR_COPY:
            # two texts this close are copies: a fact about them, like a supersession link,
            # whatever the shapes the calibration weighs (two guides, long texts)
            confidence = max(confidence, min(0.99, sim))
        if found_by_rules and confidence >= min_confidence:
            # the judge never decides: its "no" lowers what the rules report, never out of
            # the list a person reads (there it stands beside the finding)
            confidence = max(min_confidence, judged(confidence, kind, verdict, True))
        else:
            confidence = judged(confidence, kind, verdict, found_by_rules)
        if confidence < min_confidence:
            continue
        lead = max((c for c in typed if c.type == kind or kind == "scope_overlap"),
                   key=lambda c: (c.method != JUDGE, c.score), default=typed[0])
        out.append(Finding(kind, confidence, (a, b), (fa.memory.title, fb.memory.title),
                           group, lead))
    return out


def conflict(finding: Finding, features: dict[str, Features], detected_at: str) -> Conflict:
    """The conflict ``finding`` reports, with its description and evidence."""
    (a, b), kind, group = finding.memory_ids, finding.type, finding.group
    fa, fb = features[a], features[b]
    # the newer (or superseding) memory is primary
    newer_first = sorted((fa, fb), key=lambda f: (str(f.memory.created or ""), f.id),
                         reverse=True)
    memories = [_memory(newer_first[0], "primary"), _memory(newer_first[1], "secondary")]
    typed = [c for c in group if c.type]
    statements = next((c.statements for c in typed if any(c.statements)), ("", ""))
    description = (f"{kind.replace('_', ' ')}: {fa.memory.title!r} ({a}) vs "
                   f"{fb.memory.title!r} ({b}): {finding.lead.evidence}")
    evidence = "; ".join(f"[{c.method}] {c.evidence}" for c in group)
    if any(statements):
        evidence += f" | statements: {statements[0]!r} <> {statements[1]!r}"
    return Conflict(finding.conflict_id, kind, finding.detection_method, finding.confidence,
                    description, evidence + finding.evidence, memories,
                    detected_at=detected_at, methods=finding.methods)
