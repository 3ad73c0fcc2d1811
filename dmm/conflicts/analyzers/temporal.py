"""Temporal reasoning: a newer memory that records a change makes an older fact stale.

Memories are ordered by their `created` date. When the newer one has a change cue (moved,
migrated, replaced, upgraded, took over, no longer; German and Spanish too) in a sentence that
names something the older memory states (a product, a version, a team) and is about the older
memory's subject, the older memory is stale. A story that goes X -> Y -> X (a memory records the
move from X to Y, and a later one still uses X) is a reversal: every pair along the arc is
reported, because an agent reading it cannot tell which state is current.
"""

from __future__ import annotations

import re

from dmm.conflicts.analyzers import ScanContext
from dmm.conflicts.features import TRANSITION
from dmm.conflicts.model import Candidate
from dmm.text.analyze import STOPWORDS, terms

NAME = "temporal"
_NAME = re.compile(r"(?<![\w.-])([A-Z][A-Za-z0-9.+#-]{2,})\b")
_SENTENCE_START = re.compile(r"(^|[.!?:]\s+|\n\s*[-*]?\s*)$")


def _names(text: str) -> set[str]:
    """Proper names (products, teams, people): capitalised words that are not just the first
    word of a sentence, unless they look like a name anyway (RabbitMQ, ADR-12, PostgreSQL)."""
    out = set()
    for m in _NAME.finditer(text):
        word = m.group(1).rstrip(".")
        shaped = any(c.isupper() or c.isdigit() for c in word[1:])
        if shaped or not _SENTENCE_START.search(text[max(0, m.start() - 3):m.start()]):
            if word.lower() not in STOPWORDS:
                out.add(word.lower())
    return out


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
    return out + _reversals(ctx)


def _reversals(ctx: ScanContext) -> list[Candidate]:
    """X -> Y -> X arcs: a memory recording "from X to Y", and a later one that names X but
    not Y, with any earlier memory that stated X. The product name binds the subject, so no
    similarity floor applies (a how-to shares few words with a migration note)."""
    feats = ctx.features
    active = [f for f in feats.values() if f.memory.is_active and f.memory.created]
    out = []
    for f in active:
        mid = f.id
        if not (f.change_sentences and (mid in ctx.focus or any(g.id in ctx.focus
                                                                 for g in active))):
            continue
        for sentence in f.change_sentences:
            m = TRANSITION.search(sentence)
            if not m:
                continue
            left, moved_to = m.group(1).lower(), m.group(2).lower()
            later, earlier = [], []
            for g in active:
                if g.id == mid or g.memory.scope != f.memory.scope:
                    continue
                names = _names(g.memory.title + " " + g.memory.body)
                if left in names and g.memory.created > f.memory.created and moved_to not in names:
                    later.append(g)
                elif left in names and g.memory.created < f.memory.created:
                    earlier.append(g)
            for g in later:
                note = (f"reversal: {mid} records the move from {m.group(1)} to {m.group(2)}, "
                        f"but the later {g.id} still uses {m.group(1)}")
                out.append(Candidate(mid, g.id, NAME, "stale", 0.75, note,
                                     (sentence, g.memory.title)))
                out += [Candidate(e.id, g.id, NAME, "stale", 0.7, note) for e in earlier]
            break
    return out
