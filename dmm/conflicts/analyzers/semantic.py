"""Semantic similarity: the same content twice (duplicate) or the same rule in two scopes.

TF-IDF cosine over stemmed terms, and the overlap of the two memories' anchors (code,
identifiers, acronyms, numbers and normalised quantities), which read the same in every
language and in a paraphrase: "RFC 9457", "application/problem+json", "E501", "3600 s" = "one
hour". A pair in two different scopes that says the same thing is a scope overlap whether the
copies agree or not; in one scope it is a duplicate, unless another analyzer finds the two
disagree.

Between two guides of several sections each (features.guides) only a near copy is reported.

Code is named the same in any wording: two memories in two scopes whose points (title and
first sentence) name the same piece of code the same way (both prescribe it, or both name it
where they forbid something), specific in the store, state one rule in both ("Before telling
the user a change is complete, run `make check`" in the agent's scope, "A green `make check` is
part of the definition of done" in the project's).
"""

from __future__ import annotations

from dmm.conflicts.analyzers.base import ScanContext
from dmm.conflicts.pairs import NEAR_COPY, anchor_overlap, guides
from dmm.conflicts.model import Candidate
from dmm.text.analyze import terms

MIN_SHARED_ANCHORS = 4  # fewer shared anchors than this are a shared subject, not a copy

NAME = "semantic_similarity"


def _readable(f, shared: set[str]) -> list[str]:
    """The shared anchors as ``f`` writes them: a normalised quantity ("duration=3600")
    becomes its text ("one hour")."""
    said = {f"{q.dimension}={q.value:g}": q.text for q in f.quantities}
    return sorted({said.get(a, a) for a in shared if "=" not in a or a in said})


SHOWN_ANCHORS = 6


def shared_text(names: list[str]) -> str:
    """The evidence of a copy: how many anchors the two share, and the first of them (the
    count is of those listed, and says how many more there are)."""
    more = (f" and {len(names) - SHOWN_ANCHORS} more" if len(names) > SHOWN_ANCHORS else "")
    return (f"the same code, names and values ({len(names)} shared: "
            f"{', '.join(names[:SHOWN_ANCHORS])}{more})")


def _same_code(f, g) -> set[str]:
    """The code both points name the same way, specific in the store: prescribed by both or
    named by both where they forbid something. "Never push to `main` directly" and "`main`
    deploys to staging on merge" name one branch in two rules."""
    (f_uses, f_bans), (g_uses, g_bans) = f.code, g.code
    # a folder two rules name is where each applies, not one rule ("memories live in
    # `.dmm/memory/`", "proposals write under `.dmm/memory/`"); forbidding it in both is one
    used = {c for c in f_uses.keys() & g_uses.keys() if not c.endswith("/")}
    return {c for c in used | (f_bans & g_bans) if f.corpus.specific(terms(c))}


def analyze(ctx: ScanContext) -> list[Candidate]:
    dup = ctx.config["duplicate_similarity"]
    overlap = ctx.config["scope_overlap_similarity"]
    anchored = ctx.config["anchor_similarity"]
    out = []
    for a, b, sim in ctx.pairs:
        fa, fb = ctx.features[a].memory, ctx.features[b].memory
        if guides(ctx.features[a], ctx.features[b]) and sim < NEAR_COPY:
            continue
        jaccard, shared = anchor_overlap(ctx.features[a], ctx.features[b])
        if jaccard >= anchored and len(shared) >= MIN_SHARED_ANCHORS:
            kind = "duplicate" if fa.scope == fb.scope else "scope_overlap"
            out.append(Candidate(a, b, NAME, kind, min(0.9, 0.3 + jaccard),
                                 shared_text(_readable(ctx.features[a], shared)),
                                 (fa.title, fb.title)))
            continue
        if fa.scope != fb.scope and (code := _same_code(ctx.features[a], ctx.features[b])):
            out.append(Candidate(a, b, NAME, "scope_overlap", min(0.9, 0.5 + sim),
                                 f"both points name {', '.join(f'`{c}`' for c in sorted(code))} "
                                 f"in {fa.scope} and {fb.scope}", (fa.title, fb.title)))
        elif fa.scope != fb.scope and sim >= overlap:
            out.append(Candidate(a, b, NAME, "scope_overlap", min(0.95, 0.4 + sim),
                                 f"the same rule in {fa.scope} and {fb.scope} "
                                 f"(similarity {sim:.2f})", (fa.title, fb.title)))
        elif fa.scope == fb.scope and sim >= dup:
            out.append(Candidate(a, b, NAME, "duplicate", min(0.95, 0.3 + sim),
                                 f"nearly the same content (similarity {sim:.2f})",
                                 (fa.title, fb.title)))
    return out
