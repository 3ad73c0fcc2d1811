"""Conflict check: would the proposed memory conflict with the store? (warns; the reviewer
then defers to a person). Runs the scanner's analyzers on the proposal against the memories
it would be compared with (conflicts.scanner.against_store)."""

from __future__ import annotations

from dmm.conflicts.scanner import against_store
from dmm.proposals.checks.base import Issue, ReviewContext
from dmm.proposals.relations import Finding

NAME = "conflicts"
# what each kind of conflict says about the two memories, in the writer's vocabulary
# (relations.ACKNOWLEDGES); a broken supersession chain is about links, not meaning
KINDS = {"contradictory": "contradicts", "stale": "contradicts", "duplicate": "duplicates",
         "scope_overlap": "duplicates"}


def run(ctx: ReviewContext) -> list[Issue]:
    if ctx.proposal.type == "deprecate" or ctx.memory is None:
        return []
    found = against_store(ctx.conn, ctx.memory, ctx.config["conflicts"],
                          tuple(ctx.own_paths))
    issues = []
    for c in found:
        other = c.memories[1] if c.memories[0].memory_id == ctx.memory.id else c.memories[0]
        if c.type in KINDS:
            ctx.findings.append(Finding(other.memory_id, other.path, KINDS[c.type], NAME,
                                        c.description))
        issues.append(Issue(NAME, "warning", f"would conflict with {other.path}: "
                                             f"{c.description}",
                            suggestion="clarify both memories, or deprecate the one that is "
                                       "wrong"))
    return issues
