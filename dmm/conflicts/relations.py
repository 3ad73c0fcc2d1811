"""Declared relationships: the `related` field read by conflict detection (seeds/000 1.3:
"Memory related field: use for explicit relationship checking").

A memory that lists another in `related` says that its author knew the other one and keeps
both, each where it stands. Two consequences for a scan's findings:

- the same subject in two scopes is then a layering the author chose (a project rule that
  applies the global one it names), not an overlap a person must be told about: a scope
  overlap found by sameness alone (similar words, shared code or tags, queries returning
  both) between two memories one of which lists the other is not reported. A near copy
  (cosine >= pairs.NEAR_COPY) still is: the same text twice is redundant whatever its link.
- every other finding stands, and says that the two are declared related: a relation is no
  agreement (two related memories may still disagree), and a duplicate in one scope is still
  a duplicate (a paraphrase of a note it links to is the same content twice).

Pure: reads the memories' fields and the conflicts a merge made.
"""

from __future__ import annotations

from typing import TypeVar

from dmm.conflicts.features import Features
from dmm.conflicts.merger import Finding
from dmm.conflicts.model import Conflict
from dmm.conflicts.pairs import NEAR_COPY, cosine

# methods that only say two memories are about the same thing: what a declared relation
# already says (co_retrieval: queries returning both, analyzers/co_retrieval.py)
SAMENESS = frozenset({"semantic_similarity", "tag_overlap", "co_retrieval"})


def declared(a, b) -> str | None:
    """How memories ``a`` and ``b`` are declared related, in words; None when neither lists
    the other in `related`."""
    said = [f"{x.id} lists {y.id} as related" for x, y in ((a, b), (b, a))
            if y.id in x.related]
    return " and ".join(said) or None


def linked(a, b) -> bool:
    """Whether one of the two names the other in `related` or `supersedes`: a link its author
    wrote."""
    return bool(declared(a, b)) or a.id in b.supersedes or b.id in a.supersedes


F = TypeVar("F", Conflict, Finding)


def waived(conflict: F, fa: Features, fb: Features) -> bool:
    """Whether ``conflict`` is a scope overlap the relation declares (the module's
    docstring)."""
    return (conflict.type == "scope_overlap" and set(conflict.methods) <= SAMENESS
            and cosine(fa, fb) < NEAR_COPY)


def apply(conflicts: list[F], features: dict[str, Features]) -> list[F]:
    """``conflicts`` (or the merger's findings) less the scope overlaps a relation declares;
    the others between declared related memories say so in their evidence."""
    out = []
    for c in conflicts:
        fa, fb = (features.get(mid) for mid in c.memory_ids[:2])
        note = declared(fa.memory, fb.memory) if fa and fb else None
        if note is None:
            out.append(c)
        elif not waived(c, fa, fb):
            c.evidence += f" | declared: {note}"
            out.append(c)
    return out
