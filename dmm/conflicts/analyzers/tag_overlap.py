"""Tag overlap: memories filed under the same tags are about the same subject.

On its own this is no conflict (related memories share tags on purpose); it is evidence that
raises the confidence of a contradiction another analyzer found for the same pair.
"""

from __future__ import annotations

from dmm.conflicts.analyzers.base import ScanContext
from dmm.conflicts.pairs import tag_jaccard
from dmm.conflicts.model import Candidate

NAME = "tag_overlap"


def analyze(ctx: ScanContext) -> list[Candidate]:
    out = []
    for a, b, _sim in ctx.pairs:
        overlap = tag_jaccard(ctx.features[a], ctx.features[b])
        if overlap >= ctx.config["tag_overlap"]:
            shared = sorted(set(ctx.features[a].memory.tags) & set(ctx.features[b].memory.tags))
            out.append(Candidate(a, b, NAME, "", overlap * 0.5,
                                 f"shared tags: {', '.join(shared)}"))
    return out
