"""Negation and replacement cues: one memory forbids what the other prescribes.

Every sentence is read for what it forbids: the words after a cue such as "never", "do not",
"decided against", "instead of" (or their German, Spanish and Chinese forms), or the words
before one such as "are not allowed" or "should be rejected". A pair counts when one memory
forbids what the other's title states as its point: the forbidden words meet the title (two of
them, or the first, the verb or object the cue applies to), and the other memory says all of
them somewhere. Cues match on word boundaries ("note" is not "not"; Chinese as substrings).

Code is named the same way in any wording: a memory that forbids a piece of code ("Do not emit
`application/problem+json`") contradicts one whose point prescribes that very code ("Every
error is serialized as `application/problem+json`"), however little else the two share.
"""

from __future__ import annotations

import re

from dmm.conflicts.analyzers.base import ScanContext
from dmm.conflicts.cues import DIRECTIVE, FORBIDS_ACTION, INLINE_CODE, PROHIBITED
from dmm.conflicts.pairs import guides
from dmm.conflicts.model import Candidate
from dmm.text.analyze import terms, word_count

NAME = "negation"


def _states(title: str) -> bool:
    """A title that tells or claims something; "Error Types" only names a topic."""
    return bool(DIRECTIVE.search(title)) or word_count(title) >= 4


def _forbidden(f, g, similar: bool) -> tuple[str, bool] | None:
    """The clause of ``f`` that forbids what ``g``'s (affirmative) title states, if any, and
    whether it is ``f``'s title. Unless the two are ``similar`` only a title that forbids
    what the other title states counts: two titles are each memory's point, and a paraphrase
    ("Don't cap processor time" against "declare a CPU limit") shares few words."""
    if g.title_prohibitions or not _states(g.memory.title):  # g's title forbids, not states
        return None
    if not (similar or f.title_prohibitions):
        return None
    # a body sentence that forbids the memory's own subject is not its point ("only
    # authorised apps may use the HSM" in a memory about the HSM): those words are left out
    body = [(action, tuple(t for t in scope if t not in f.title_terms), clause)
            for action, scope, clause in f.prohibitions]
    for point, (action, scope, clause) in [(True, p) for p in f.title_prohibitions] + \
            [(False, p) for p in body if similar]:
        # the other memory may name the thing in other words ("cap processor time" against
        # "declare a CPU limit"): its words are read with their synonyms
        if not scope or not (set(scope) <= g.all_terms or g.says(scope)):
            continue
        # a rule deep in a long guide must meet the title in words that say what it is about
        # in this store: "code" or "app" in a store of coding guides meets every title;
        # and between two guides of many rules (features.guides) one rule deep in one of
        # them says nothing against the other's topic
        in_title = [t for t in scope if t in g.wide_title_terms]
        if not point and (guides(f, g) or not f.corpus.specific(in_title)):
            continue
        if scope[0] in g.wide_title_terms or (not action and len(in_title) >= 2):
            return clause, point
    return None


# a cue right before a piece of code that ends the clause, at most one verb and an article
# between: "do not emit `x`", "never run the `x`", "no `x`", "instead of `x`"; "cannot be
# combined with the `x`" forbids the combining, "never edit `x` directly" a way of editing it,
# "use `y` against the `x`" nothing
_BEFORE_CODE = re.compile(
    rf"(?:{FORBIDS_ACTION.pattern}|\b(?:no|not|instead\s+of|rather\s+than)\b)"
    r"\s+(?:[\w-]+\s+)?(?:(?:a|an|the|any)\s+)?`$", re.I)
_MORE = re.compile(r"\w")
# a piece of code and at most one word, then a cue that forbids what precedes it: "`x` files
# are not allowed"
_AFTER_CODE = re.compile(rf"`\s+(?:[\w-]+\s+)?(?:{PROHIBITED.pattern})", re.I)


def _codes_forbidden(clause: str) -> list[str]:
    """The pieces of code ``clause`` forbids by name."""
    return [m.group(1) for m in INLINE_CODE.finditer(clause)
            if (_BEFORE_CODE.search(clause, 0, m.start() + 1)
                and not _MORE.search(clause, m.end()))
            or _AFTER_CODE.match(clause, m.end() - 1)]


def _forbidden_codes(f) -> list[tuple[str, str, bool]]:
    """(code, clause, in the title) for each piece of code ``f`` forbids by name; only code
    specific in the store counts (`make`, `main` or `true` in a store of build notes names
    nothing)."""
    return [(code.lower(), clause, point)
            for point, (_, _, clause) in [(True, p) for p in f.title_prohibitions]
            + [(False, p) for p in f.prohibitions]
            for code in _codes_forbidden(clause) if f.corpus.specific(terms(code))]


def analyze(ctx: ScanContext) -> list[Candidate]:
    floor = ctx.config["negation_similarity"]
    forbidden: dict[str, list] = {}  # per memory, computed once per scan
    out = []
    for a, b, sim in ctx.pairs:
        fa, fb = ctx.features[a], ctx.features[b]
        for f, g in ((fa, fb), (fb, fa)):
            # code forbidden in one and prescribed in the other binds the pair by itself
            # (quoted with the sentence that prescribes it); forbidden words need the two to
            # be about the same thing (quoted with the title they contradict)
            if f.id not in forbidden:
                forbidden[f.id] = _forbidden_codes(f)
            found = next(((clause, point, g.code[0][code])
                          for code, clause, point in forbidden[f.id]
                          if code in g.code[0]), None) if forbidden[f.id] else None
            if not found and (words := _forbidden(f, g, sim >= floor)):
                found = (*words, g.memory.title)
            if found:
                clause, in_title, stated = found
                out.append(Candidate(a, b, NAME, "contradictory", min(0.85, 0.35 + sim),
                                     f"{f.id} says {clause[:160]!r}, {g.id} says "
                                     f"{stated[:160]!r}", (clause, stated),
                                     on_point=0.5 + 0.5 * in_title))
                break
    return out
