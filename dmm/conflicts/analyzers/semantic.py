"""Semantic similarity: the same content twice (duplicate) or the same rule in two scopes.

TF-IDF cosine over stemmed terms. A pair in two different scopes that says the same thing is a
scope overlap whether the copies agree or not; in one scope it is a duplicate, unless another
analyzer finds the two disagree.
"""

from __future__ import annotations

from dmm.conflicts.analyzers import ScanContext
from dmm.conflicts.model import Candidate

NAME = "semantic_similarity"


def analyze(ctx: ScanContext) -> list[Candidate]:
    dup = ctx.config["duplicate_similarity"]
    overlap = ctx.config["scope_overlap_similarity"]
    out = []
    for a, b, sim in ctx.pairs:
        fa, fb = ctx.features[a].memory, ctx.features[b].memory
        if fa.scope != fb.scope and sim >= overlap:
            out.append(Candidate(a, b, NAME, "scope_overlap", min(0.95, 0.4 + sim),
                                 f"the same rule in {fa.scope} and {fb.scope} "
                                 f"(similarity {sim:.2f})", (fa.title, fb.title)))
        elif fa.scope == fb.scope and sim >= dup:
            out.append(Candidate(a, b, NAME, "duplicate", min(0.95, 0.3 + sim),
                                 f"nearly the same content (similarity {sim:.2f})",
                                 (fa.title, fb.title)))
    return out
