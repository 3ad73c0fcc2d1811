"""Semantic similarity: the same content twice (duplicate) or the same rule in two scopes.

TF-IDF cosine over stemmed terms, and the overlap of the two memories' anchors (code,
identifiers, acronyms, numbers and normalised quantities), which read the same in every
language and in a paraphrase: "RFC 9457", "application/problem+json", "E501", "3600 s" = "one
hour". A pair in two different scopes that says the same thing is a scope overlap whether the
copies agree or not; in one scope it is a duplicate, unless another analyzer finds the two
disagree.

Between two guides of several sections each (features.guides) only a near copy is reported.
"""

from __future__ import annotations

from dmm.conflicts.analyzers import ScanContext
from dmm.conflicts.features import anchor_overlap, guides
from dmm.conflicts.model import Candidate

MIN_SHARED_ANCHORS = 4  # fewer shared anchors than this are a shared subject, not a copy
GUIDE_COPY_SIMILARITY = 0.9  # two guides this similar are copies

NAME = "semantic_similarity"


def _readable(f, shared: set[str]) -> list[str]:
    """The shared anchors as ``f`` writes them: a normalised quantity ("duration=3600")
    becomes its text ("one hour")."""
    said = {f"{q.dimension}={q.value:g}": q.text for q in f.quantities}
    return sorted({said.get(a, a) for a in shared if "=" not in a or a in said})


def analyze(ctx: ScanContext) -> list[Candidate]:
    dup = ctx.config["duplicate_similarity"]
    overlap = ctx.config["scope_overlap_similarity"]
    anchored = ctx.config["anchor_similarity"]
    out = []
    for a, b, sim in ctx.pairs:
        fa, fb = ctx.features[a].memory, ctx.features[b].memory
        if guides(ctx.features[a], ctx.features[b]) and sim < GUIDE_COPY_SIMILARITY:
            continue
        jaccard, shared = anchor_overlap(ctx.features[a], ctx.features[b])
        if jaccard >= anchored and len(shared) >= MIN_SHARED_ANCHORS:
            kind = "duplicate" if fa.scope == fb.scope else "scope_overlap"
            out.append(Candidate(a, b, NAME, kind, min(0.9, 0.3 + jaccard),
                                 f"the same code, names and values ({len(shared)} shared: "
                                 f"{', '.join(_readable(ctx.features[a], shared)[:6])})",
                                 (fa.title, fb.title)))
            continue
        if fa.scope != fb.scope and sim >= overlap:
            out.append(Candidate(a, b, NAME, "scope_overlap", min(0.95, 0.4 + sim),
                                 f"the same rule in {fa.scope} and {fb.scope} "
                                 f"(similarity {sim:.2f})", (fa.title, fb.title)))
        elif fa.scope == fb.scope and sim >= dup:
            out.append(Candidate(a, b, NAME, "duplicate", min(0.95, 0.3 + sim),
                                 f"nearly the same content (similarity {sim:.2f})",
                                 (fa.title, fb.title)))
    return out
