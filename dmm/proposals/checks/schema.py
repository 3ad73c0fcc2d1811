"""Schema check: the proposed file parses and every field is valid (PRD phase 2, 5.4)."""

from __future__ import annotations

from dmm.memory.parse import parse_memory
from dmm.proposals.checks import Issue, ReviewContext

NAME = "schema"


def run(ctx: ReviewContext) -> list[Issue]:
    _, problems = parse_memory(ctx.new_text, ctx.proposal.new_path)
    return [Issue(NAME, p.severity, f"{p.field}: {p.message}" if p.field else p.message,
                  suggestion="fix the frontmatter and propose an update")
            for p in problems]
