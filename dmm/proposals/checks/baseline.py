"""Baseline protection: a change touching baseline/ always goes to a person (deferred)."""

from __future__ import annotations

from dmm.proposals.checks import Issue, ReviewContext

NAME = "baseline"


def run(ctx: ReviewContext) -> list[Issue]:
    p = ctx.proposal
    if "baseline" in (p.path.split("/", 1)[0], p.new_path.split("/", 1)[0]):
        return [Issue(NAME, "warning", "changes a baseline memory, which every Memory Pack "
                      "includes: a person must approve it", suggestion="dmm review approve")]
    return []
