"""Alternatives: two memories choose different answers to one question.

"All route handlers are async functions" and "Route handlers are plain synchronous functions",
or "User passwords are hashed with Argon2id" and "Login secrets are stored as bcrypt digests":
no number differs and neither need say "not", but an agent cannot follow both. The families of
answers are in alternatives.py; a title chooses the one member of a family it names.

A pair counts when the two titles choose different members of one family, the two memories are
about the same thing (the family names its subject, or they share a tag or a title word besides
the names of the members that is not common in the store), and neither memory also endorses the
other's choice: a mention of it in a sentence that forbids it or records a change away from it
is no endorsement, any other mention is ("we use both, async for I/O and sync for CPU work" is
not a contradiction).
"""

from __future__ import annotations

from dmm.conflicts.alternatives import FAMILIES, NAME_TERMS, mention
from dmm.conflicts.analyzers.base import ScanContext
from dmm.conflicts.cues import CHANGE, NEGATION
from dmm.conflicts.features import Features
from dmm.conflicts.model import Candidate
from dmm.text.analyze import terms

NAME = "alternatives"


def _endorses(f: Features, family: str, member: str) -> bool:
    """Whether ``f`` names ``member`` other than to forbid it or to record a change away."""
    pattern = mention(family, member)
    if any(pattern.search(tag.lower()) for tag in f.memory.tags):
        return True
    for sentence in [f.memory.title, *f.sentences]:
        if pattern.search(sentence.lower()) and not (NEGATION.search(sentence)
                                                      or CHANGE.search(sentence)):
            return True
    return False


def _same_subject(f: Features, g: Features, family: str) -> bool:
    """Both titles name the family's question ("Money is a Long of minor units", "Prices are
    BigDecimal"), or the two share a tag or a title word, other than the names of the family's
    members and the words common in the store (a collection tag, "handling" in every
    title)."""
    if family in f.asks & g.asks:
        return True
    tags = set(terms(" ".join(f.memory.tags))) & set(terms(" ".join(g.memory.tags)))
    shared = (tags | (f.title_terms & g.title_terms)) - NAME_TERMS[family]
    return bool(f.corpus.specific(shared))


def analyze(ctx: ScanContext) -> list[Candidate]:
    out = []
    for a, b, sim in ctx.pairs:
        fa, fb = ctx.features[a], ctx.features[b]
        for family in sorted(fa.choices.keys() & fb.choices.keys()):
            x, y = fa.choices[family], fb.choices[family]
            if x == y:
                if family in fa.asks & fb.asks:  # one answer to one question, twice
                    kind = "duplicate" if fa.memory.scope == fb.memory.scope else "scope_overlap"
                    out.append(Candidate(a, b, NAME, kind, min(0.85, 0.55 + sim),
                                         f"the same answer to {family}: {x!r}",
                                         (fa.memory.title, fb.memory.title), on_point=1.0))
                    break
                continue
            if not (FAMILIES[family].names_subject or _same_subject(fa, fb, family)):
                continue
            if _endorses(fa, family, y) or _endorses(fb, family, x):
                continue
            out.append(Candidate(a, b, NAME, "contradictory", min(0.85, 0.55 + sim),
                                 f"different choices of {family}: {x!r} vs {y!r}",
                                 (fa.memory.title, fb.memory.title), on_point=1.0))
            break
    return out
