"""Duplicate check: TF-IDF cosine against the store and fuzzy title matching (PRD 5.6)."""

from __future__ import annotations

from rapidfuzz import fuzz, process

from dmm.index.similar import similar_memories
from dmm.proposals.checks.base import Issue, ReviewContext
from dmm.proposals.relations import Finding

NAME = "duplicate"
TITLE_MATCH = 90  # rapidfuzz token_sort_ratio, 0-100


def run(ctx: ReviewContext) -> list[Issue]:
    if ctx.proposal.type == "deprecate" or ctx.memory is None:
        return []
    cfg = ctx.config["review"]
    own = ctx.own_paths
    similar = similar_memories(ctx.conn, ctx.memory, exclude=own, limit=5)
    ctx.similar = similar
    issues = []
    for s in similar:
        if s.similarity >= cfg["similar_threshold"]:
            ctx.findings.append(Finding(s.memory_id, s.path, "duplicates", NAME,
                                        f"similarity {s.similarity:.2f}"))
        if s.similarity >= cfg["duplicate_threshold"]:
            issues.append(Issue(NAME, "error", f"duplicates {s.path} ({s.memory_id}, similarity "
                                f"{s.similarity:.2f})", suggestion=f"update {s.path} instead"))
        elif s.similarity >= cfg["similar_threshold"]:
            issues.append(Issue(NAME, "warning", f"very similar to {s.path} ({s.memory_id}, "
                                f"similarity {s.similarity:.2f})"))
    titles = {path: title for path, title in ctx.conn.execute(
        "SELECT path, title FROM memories WHERE status = 'active'") if path not in own}
    for _title, score, path in process.extract(ctx.memory.title, titles, scorer=fuzz.token_sort_ratio,
                                               score_cutoff=TITLE_MATCH, limit=3):
        issues.append(Issue(NAME, "warning", f"title is nearly the same as {path}'s "
                            f"({score:.0f}/100)", suggestion="make the title say what differs"))
    return issues
