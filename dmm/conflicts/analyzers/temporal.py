"""Temporal reasoning: a newer memory that records a change makes an older fact stale.

Memories are ordered by their `created` date. When the newer one has a change cue (moved,
migrated, replaced, upgraded ... complete, took over, no longer; German and Spanish too) in a
sentence that names something the older memory states (a product, a version, a team), the
older memory is stale. A story that goes X -> Y -> X shows up as stale pairs along the arc.
"""

from __future__ import annotations

import re

from dmm.conflicts.analyzers import ScanContext
from dmm.conflicts.model import Candidate
from dmm.text.analyze import terms

NAME = "temporal"
_NAME = re.compile(r"\b[A-Z][A-Za-z0-9.+#-]{2,}\b")


def _names(text: str) -> set[str]:
    return {n.lower().rstrip(".") for n in _NAME.findall(text)}


def analyze(ctx: ScanContext) -> list[Candidate]:
    floor = ctx.config["temporal_similarity"]
    out = []
    for a, b, sim in ctx.pairs:
        fa, fb = ctx.features[a], ctx.features[b]
        if sim < floor or fa.memory.scope != fb.memory.scope:
            continue
        if not (fa.memory.created and fb.memory.created) or fa.memory.created == fb.memory.created:
            continue
        old, new = (fa, fb) if fa.memory.created < fb.memory.created else (fb, fa)
        old_text = old.memory.title + " " + old.memory.body
        old_names = _names(old_text) | {v.name for v in old.versions}
        old_terms = set(terms(old.memory.title))
        for sentence in new.change_sentences:
            named = (_names(sentence) | {v.name for v in new.versions}) & old_names
            about = set(terms(sentence)) & old_terms
            if named and about:
                out.append(Candidate(old.id, new.id, NAME, "stale", min(0.9, 0.5 + sim),
                                     f"{new.id} ({new.memory.created}) records a change: "
                                     f"{sentence[:160]!r}", (old.memory.title, sentence)))
                break
    return out
