"""Conflict check: would the proposed memory conflict with the store? (warns; the reviewer
then defers to a person). Runs the scanner's analyzers on the proposal against the memories
it would be compared with (conflicts.scanner.against_store)."""

from __future__ import annotations

from dmm.conflicts.scanner import against_store
from dmm.proposals.checks import Issue, ReviewContext

NAME = "conflicts"


def run(ctx: ReviewContext) -> list[Issue]:
    if ctx.proposal.type == "deprecate" or ctx.memory is None:
        return []
    found = against_store(ctx.conn, ctx.memory, ctx.config["conflicts"],
                          tuple(ctx.own_paths))
    issues = []
    for c in found:
        other = c.memories[1] if c.memories[0].memory_id == ctx.memory.id else c.memories[0]
        issues.append(Issue(NAME, "warning", f"would conflict with {other.path}: "
                                             f"{c.description}",
                            suggestion="clarify both memories, or deprecate the one that is "
                                       "wrong"))
    return issues
