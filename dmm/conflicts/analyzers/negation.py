"""Negation and replacement cues: one memory forbids what the other prescribes.

Cues match on word boundaries in English, German and Spanish, and as substrings in Chinese, so
"note" is not "not" and "do" is not "don't". A pair counts when it is about the same subject
(similar enough, sharing title terms) and exactly one of the two titles is negated.
"""

from __future__ import annotations

from dmm.conflicts.analyzers import ScanContext
from dmm.conflicts.model import Candidate

NAME = "negation"


def analyze(ctx: ScanContext) -> list[Candidate]:
    floor = ctx.config["negation_similarity"]
    out = []
    for a, b, sim in ctx.pairs:
        fa, fb = ctx.features[a], ctx.features[b]
        if sim < floor or fa.negated_title == fb.negated_title:
            continue
        shared = fa.title_terms & fb.title_terms
        if not shared:
            continue
        out.append(Candidate(a, b, NAME, "contradictory", min(0.85, 0.35 + sim),
                             f"one forbids what the other states about {', '.join(sorted(shared))}",
                             (fa.memory.title, fb.memory.title)))
    return out
