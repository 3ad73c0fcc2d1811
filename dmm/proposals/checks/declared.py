"""Declared-change check: the branch changes only what dmm derives from the proposal (its type
and path, or the conflict it resolves), each file a plain file within the size limit."""

from __future__ import annotations

from dmm.proposals.checks.base import Issue, ReviewContext

NAME = "declared_paths"


def run(ctx: ReviewContext) -> list[Issue]:
    issues = [Issue(NAME, "error", problem) for problem in ctx.claim_problems]
    if ctx.undeclared:
        shown = ", ".join(ctx.undeclared[:10]) + (" ..." if len(ctx.undeclared) > 10 else "")
        issues.append(Issue(NAME, "error", f"the branch also changes files the proposal does "
                                           f"not declare: {shown}",
                            suggestion="propose each memory change on its own; BOOT.md, "
                                       "config.toml and other files are changed by a person, "
                                       "in a normal commit"))
    return issues
