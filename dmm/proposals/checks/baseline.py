"""Baseline protection: a change touching baseline/ always goes to a person (deferred)."""

from __future__ import annotations

from dmm.proposals.checks.base import Issue, ReviewContext

NAME = "baseline"


def run(ctx: ReviewContext) -> list[Issue]:
    if any(path.split("/", 1)[0] == "baseline" for path in ctx.own_paths):
        return [Issue(NAME, "warning", "changes a baseline memory, which every Memory Pack "
                      "includes: a person must approve it", suggestion="dmm review approve")]
    return []
