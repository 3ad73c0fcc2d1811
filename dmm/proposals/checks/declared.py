"""Declared-paths check: the branch changes only the files its proposal declares."""

from __future__ import annotations

from dmm.proposals.checks import Issue, ReviewContext

NAME = "declared_paths"


def run(ctx: ReviewContext) -> list[Issue]:
    if not ctx.undeclared:
        return []
    shown = ", ".join(ctx.undeclared[:10]) + (" ..." if len(ctx.undeclared) > 10 else "")
    return [Issue(NAME, "error", f"the branch also changes files the proposal does not "
                                 f"declare: {shown}",
                  suggestion="propose each memory change on its own; BOOT.md, config.toml "
                             "and other files are changed by a person, in a normal commit")]
