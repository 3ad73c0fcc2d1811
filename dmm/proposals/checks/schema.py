"""Schema check: every file the proposal writes parses and every field is valid (PRD phase 2,
5.4), and its memory id is not already used on the branch it would land on."""

from __future__ import annotations

from dmm.memory.parse import parse_memory
from dmm.proposals.checks.base import Issue, ReviewContext

NAME = "schema"


def run(ctx: ReviewContext) -> list[Issue]:
    files = {path: text for path, text in ctx.touched.items() if text is not None}
    files.setdefault(ctx.proposal.new_path, ctx.new_text)
    issues = []
    for path, text in sorted(files.items()):
        _, problems = parse_memory(text, path)
        where = "" if path == ctx.proposal.new_path else f"{path}: "
        issues += [Issue(NAME, p.severity, where + (f"{p.field}: {p.message}" if p.field
                                                    else p.message),
                         suggestion="fix the frontmatter and propose an update")
                   for p in problems]
    if ctx.id_used_by:  # the precheck saw an older store
        issues.append(Issue(NAME, "error", f"id {ctx.proposal.memory_id} is already used by "
                                           f"{ctx.id_used_by}",
                            suggestion="propose it again: it gets a free id"))
    return issues
