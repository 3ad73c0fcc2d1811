"""Co-retrieval (seeds/000 3.1, DetectionMethod.CO_RETRIEVAL: "detected via usage
patterns"): memories the queries often return together are about one subject for the people
and agents who ask, whatever their words.

Finding a candidate is the usage log's part (dmm/usage/together.py says when two memories are
"often" together); the scan adds those pairs, when no link its authors wrote joins them
(`supersedes`, `related`), to the pairs every analyzer compares, whatever their similarity, and
the analyzers judge them as they judge any pair (scanner.candidates). This analyzer adds the
evidence: a candidate with no type, which names how often the two came back together. Alone
it reports nothing (two memories that answer one task together usually agree); beside another
analyzer's finding it tells a person that agents read both for one task.
"""

from __future__ import annotations

from dmm.conflicts.analyzers.base import ScanContext
from dmm.conflicts.model import Candidate

NAME = "co_retrieval"


def analyze(ctx: ScanContext) -> list[Candidate]:
    together = getattr(ctx, "together", None) or {}
    out = []
    for a, b, _sim in ctx.pairs:
        found = together.get((a, b) if a < b else (b, a))
        if found is not None:
            out.append(Candidate(a, b, NAME, "", 0.0, found.describe()))
    return out
