"""Temporal reasoning: a newer memory that records a change makes an older fact stale.

Memories are ordered by their `created` date. When the newer one has a change cue (moved,
migrated, replaced, upgraded, took over, no longer; German and Spanish too) in a sentence that
names something the older memory states (a product, a version, a team) and is about the older
memory's subject, the older memory is stale. A new version of a product the older memory names
without any version leaves it true: "tests run on PostgreSQL" is not made
stale by "upgraded to PostgreSQL 16". A story that goes X -> Y -> X (a memory records the
move from X to Y, and a later one still uses X) is a reversal: every pair along the arc is
reported, because an agent reading it cannot tell which state is current.

A memory built on the specifics of a fact a recorded change made stale is stale by the same
change, whenever it was written: a runbook that replays `orders.events.dlq` on the `/orders`
vhost relies on the broker "Order events migrated to SNS and SQS" left behind, though it never
names the broker. It must share two identifiers specific in the store with the stale fact that
the change does not name, two specific title words with the change, and nothing of what the
change moved to.
"""

from __future__ import annotations

from dmm.conflicts.analyzers.base import ScanContext
from dmm.conflicts.alternatives import choices
from dmm.conflicts.cues import first_move
from dmm.conflicts.features import Features
from dmm.conflicts.pairs import cosine
from dmm.conflicts.model import Candidate
from dmm.text.analyze import terms

NAME = "temporal"


def _stale(fa: Features, fb: Features, sim: float) -> Candidate | None:
    """The older of two memories of one scope made stale by a change the newer records."""
    if fa.memory.scope != fb.memory.scope:
        return None
    if not (fa.memory.created and fb.memory.created) or fa.memory.created == fb.memory.created:
        return None
    old, new = (fa, fb) if fa.memory.created < fb.memory.created else (fb, fa)
    old_names = old.names | {v.name for v in old.versions}
    old_versioned = {v.name for v in old.versions}
    new_versioned = {v.name for v in new.versions}
    # what the older title is about, said again in the newer memory's point: a change
    # recorded there is about it when the two share no name ("Aware datetimes
    # everywhere after the timestamptz migration" after "Timestamps are naive UTC values")
    subject = new.corpus.specific(set(terms(new.point)) & old.title_terms)
    for sentence, sentence_names, sentence_terms in new.changes:
        shared_names = (sentence_names | new_versioned) & old_names
        # a new version of X leaves a statement naming X without a version true
        named = {n for n in shared_names if n in old_versioned or n not in new_versioned}
        about = sentence_terms & old.title_terms
        old_titled = old.title_names | {v.name for v in old.point_versions}
        # or the change lands on another answer to the question the old memory's title
        # answers: "Argon2id migration is complete" after "Passwords are hashed with bcrypt"
        moved_to = choices(sentence)
        other = {f"{old.choices[k]} -> {v}" for k, v in moved_to.items()
                 if k in old.choices and old.choices[k] != v}
        if other:
            named, about, old_titled = other, other, other
        elif not shared_names and len(subject) >= 2:  # names, when shared, decide
            named = about = subject
        if named and about:
            return Candidate(old.id, new.id, NAME, "stale", min(0.9, 0.5 + sim),
                             f"{new.id} ({new.memory.created}) records a change: "
                             f"{sentence[:160]!r}", (old.memory.title, sentence),
                             on_point=0.5 + 0.5 * bool(old_titled & named))
    return None


def analyze(ctx: ScanContext) -> list[Candidate]:
    floor = ctx.config["temporal_similarity"]
    out = [c for a, b, sim in ctx.pairs if sim >= floor
           and (c := _stale(ctx.features[a], ctx.features[b], sim))]
    return out + _relying(ctx, floor) + _reversals(ctx)


def _code(f: Features, known: dict[str, set[str]]) -> set[str]:
    """``f``'s identifiers specific in the store (anchors that are not quantities), read once
    per scan (kept in ``known``)."""
    if f.id not in known:
        known[f.id] = f.corpus.specific({a for a in f.anchors if "=" not in a})
    return known[f.id]


def _relying(ctx: ScanContext, floor: float) -> list[Candidate]:
    """Memories that rely on what a stale fact names and its change left behind (see the
    module's docstring), each with the memory recording the change. The stale fact may be
    outside the scan's focus (an incremental scan of the runbook alone): it is looked for
    among the memories loaded."""
    out = []
    known: dict[str, set[str]] = {}  # each memory's identifiers (_code)
    by_code: dict[str, list[Features]] = {}  # who names each identifier, built when needed
    for a, b, _ in ctx.pairs:
        for new, f in ((ctx.features[a], ctx.features[b]), (ctx.features[b], ctx.features[a])):
            if not new.changes or f.changes or f.memory.scope != new.memory.scope:
                continue
            if len(new.corpus.specific(f.title_terms & new.title_terms)) < 2:
                continue
            relies, moved = _code(f, known), _code(new, known)
            if not relies or relies & (moved - f.anchors):
                continue  # f names nothing, or something the change moved to
            if not by_code:
                for g in ctx.features.values():
                    if g.memory.is_active:
                        for code in _code(g, known):
                            by_code.setdefault(code, []).append(g)
            named_too = {g.id: g for code in relies for g in by_code.get(code, ())}
            for _, old in sorted(named_too.items()):
                if old.id in (new.id, f.id):
                    continue
                relied = relies & _code(old, known) - new.anchors
                if len(relied) < 2 or relies & (moved - old.anchors):
                    continue
                sim = cosine(old, new)
                found = _stale(old, new, sim) if sim >= floor else None
                if found and found.b == new.id:
                    out.append(Candidate(new.id, f.id, NAME, "stale", found.score,
                                         f"{f.id} relies on {', '.join(sorted(relied))} of "
                                         f"{old.id}, left behind by the change {new.id} "
                                         f"records: {found.statements[1][:160]!r}",
                                         (f.memory.title, found.statements[1]), on_point=0.5))
                    break
    return out


def _reversals(ctx: ScanContext) -> list[Candidate]:
    """X -> Y -> X arcs: a memory recording "from X to Y", and a later one that names X but
    not Y, with any earlier memory that stated X. The product name binds the subject, so no
    similarity floor applies (a how-to shares few words with a migration note)."""
    feats = ctx.features
    active = [f for f in feats.values() if f.memory.is_active and f.memory.created]
    out = []
    for f in active:
        mid = f.id
        found = first_move(f.changes)
        if found:
            sentence, m = found
            left, moved_to = m.group(1).lower(), m.group(2).lower()
            later, earlier = [], []
            for g in active:
                if g.id == mid or g.memory.scope != f.memory.scope:
                    continue
                names = g.names
                if left in names and g.memory.created > f.memory.created and moved_to not in names:
                    later.append(g)
                elif left in names and g.memory.created < f.memory.created:
                    earlier.append(g)
            # an arc is reported where the scan's focus takes part in it: the move itself or
            # a memory stating X before it bears on every later use of X; a later use, on its
            # own pairs only (a draft using REST is not answered with another memory's arc)
            before = mid in ctx.focus or any(e.id in ctx.focus for e in earlier)
            for g in later:
                if not (before or g.id in ctx.focus):
                    continue
                note = (f"reversal: {mid} records the move from {m.group(1)} to {m.group(2)}, "
                        f"but the later {g.id} still uses {m.group(1)}")
                out.append(Candidate(mid, g.id, NAME, "stale", 0.75, note,
                                     (sentence, g.memory.title), on_point=0.5))
                out += [Candidate(e.id, g.id, NAME, "stale", 0.7, note) for e in earlier]
    return out
