"""Negation and replacement cues: one memory forbids what the other prescribes.

Every sentence is read for what it forbids: the words after a cue such as "never", "do not",
"decided against", "instead of" (or their German, Spanish and Chinese forms), or the words
before one such as "are not allowed" or "should be rejected". A pair counts when one memory
forbids what the other's title states as its point: the forbidden words meet the title (two of
them, or the first, the verb or object the cue applies to), and the other memory says all of
them somewhere. Cues match on word boundaries ("note" is not "not"; Chinese as substrings).
"""

from __future__ import annotations

from dmm.conflicts.analyzers import ScanContext
from dmm.conflicts.features import DIRECTIVE, guides
from dmm.conflicts.model import Candidate

NAME = "negation"


def _states(title: str) -> bool:
    """A title that tells or claims something; "Error Types" only names a topic."""
    return bool(DIRECTIVE.search(title)) or len(title.split()) >= 4


def _forbidden(f, g) -> tuple[str, bool] | None:
    """The clause of ``f`` that forbids what ``g``'s (affirmative) title states, if any, and
    whether it is ``f``'s title."""
    if g.title_prohibitions or not _states(g.memory.title):  # g's title forbids, not states
        return None
    # a body sentence that forbids the memory's own subject is not its point ("only
    # authorised apps may use the HSM" in a memory about the HSM): those words are left out
    body = [(action, tuple(t for t in scope if t not in f.title_terms), clause)
            for action, scope, clause in f.prohibitions]
    for point, (action, scope, clause) in [(True, p) for p in f.title_prohibitions] + \
            [(False, p) for p in body]:
        if not scope or not set(scope) <= g.all_terms:
            continue
        # a rule deep in a long guide must meet the title in words that say what it is about
        # in this store: "code" or "app" in a store of coding guides meets every title;
        # and between two guides of many rules (features.guides) one rule deep in one of
        # them says nothing against the other's topic
        in_title = [t for t in scope if t in g.title_terms]
        if not point and (guides(f, g) or not f.corpus.specific(in_title)):
            continue
        if scope[0] in g.title_terms or (not action and len(in_title) >= 2):
            return clause, point
    return None


def analyze(ctx: ScanContext) -> list[Candidate]:
    floor = ctx.config["negation_similarity"]
    out = []
    for a, b, sim in ctx.pairs:
        if sim < floor:
            continue
        fa, fb = ctx.features[a], ctx.features[b]
        for f, g in ((fa, fb), (fb, fa)):
            found = _forbidden(f, g)
            if found:
                clause, in_title = found
                out.append(Candidate(a, b, NAME, "contradictory", min(0.85, 0.35 + sim),
                                     f"{f.id} says {clause[:160]!r}, {g.id} says "
                                     f"{g.memory.title!r}", (clause, g.memory.title),
                                     on_point=0.5 + 0.5 * in_title))
                break
    return out
