"""Relations check: what the writer declared about other memories, shown beside what the other
checks found (dmm.proposals.relations).

Declarations are claims: each is shown (info), one naming no active memory is a warning, and a
finding the writer did not acknowledge is shown as "undeclared" (info: it never changes the
decision, which the finding itself already weighs). A declared supersession retires a memory,
so the proposal goes to a person (deferred), whether or not the index knows that memory (the
branch's diff retires it; dmm.proposals.declared has checked it is the memory named). No declaration removes a finding or adds
confidence: a declaration can send a proposal to a person, never approve one.
"""

from __future__ import annotations

from dmm.index.read import active_paths
from dmm.proposals.checks.base import Issue, ReviewContext
from dmm.proposals.relations import undeclared

NAME = "relations"


def run(ctx: ReviewContext) -> list[Issue]:
    proposal = ctx.proposal
    declared = proposal.relations
    issues = [Issue(NAME, "warning", f"the writer's relations cannot be read: {problem}")
              for problem in proposal.relation_problems]
    known = active_paths(ctx.conn, sorted({r.memory_id for r in declared})) if declared else {}
    for r in declared:
        path = known.get(r.memory_id)
        note = f' ("{r.note}")' if r.note else ""
        if r.relation == "supersedes":  # whatever this clone's index knows of it: judge
            # has checked the branch retires exactly that memory, and a retirement is a
            # person's to approve
            where = path or "no active memory of this store's index"
            issues.append(Issue(NAME, "warning", f"retires {r.memory_id} ({where}): the writer "
                                                 f"declares the new memory supersedes it"
                                                 f"{note}; a person approves a retirement",
                                defers=True))
        elif path is None:
            issues.append(Issue(NAME, "warning", f"the writer declares it {r.relation} "
                                                 f"{r.memory_id}, which is no active memory "
                                                 "of this store"))
        else:
            issues.append(Issue(NAME, "info", f"the writer declares it {r.relation} "
                                              f"{r.memory_id} ({path}){note}"))
    for finding, said in undeclared(ctx.findings, declared):
        what = f"declared it {said}" if said else "declared nothing about it"
        issues.append(Issue(NAME, "info", f"undeclared: the {finding.source} check finds it "
                                          f"{finding.kind} {finding.memory_id} "
                                          f"({finding.path}); the writer {what}",
                            suggestion="ask the writer, or read both memories"))
    return issues
