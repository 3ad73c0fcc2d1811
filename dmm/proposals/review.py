"""The reviewer: run every check on a proposal and decide (PRD phase 2, 5.3).

approved  no errors, confident enough
modified  approved after auto-fixes, committed on the proposal branch first
rejected  an error that is not auto-fixable (invalid schema, a duplicate ...)
deferred  baseline touched, a conflict with the store (found by the analyzers, or by the
          judge when it is on: checks/coherence.py), or confidence below
          review.defer_below_confidence
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from dmm.gitrepo import Git
from dmm.index.refresh import open_fresh
from dmm.memory.parse import parse_memory
from dmm.proposals import decide
from dmm.proposals.checks import Issue, ReviewContext, all_checks
from dmm.proposals.checks import declared as declared_check
from dmm.proposals.declared import id_taken, judge
from dmm.proposals.model import MEMORY_ROOT
from dmm.proposals.queue import load
from dmm.workspace import Workspace

REVIEWER = "dmm-reviewer"
WARNING_COST = 0.1  # confidence lost per warning


@dataclass
class ReviewResult:
    proposal_id: str
    decision: str
    confidence: float
    issues: list[Issue] = field(default_factory=list)
    similar_memories: list = field(default_factory=list)
    checks_performed: list[str] = field(default_factory=list)
    modified_content: str | None = None
    reason: str = ""
    review_duration_ms: int = 0
    committed: dict | None = None  # the Decision, once acted on
    # why the reviewer would leave it to a person without --force (deferral), whatever it
    # decided: what a person approving it is shown and asked about
    held_back: str | None = None
    notices: list[str] = field(default_factory=list)  # e.g. new conflicts after the merge

    def to_dict(self) -> dict:
        return {"proposal_id": self.proposal_id, "decision": self.decision,
                "confidence": round(self.confidence, 2),
                "issues": [i.to_dict() for i in self.issues],
                "similar_memories": [{"path": s.path, "memory_id": s.memory_id,
                                      "similarity": round(s.similarity, 3)}
                                     for s in self.similar_memories],
                "checks_performed": self.checks_performed, "reason": self.reason,
                "review_duration_ms": self.review_duration_ms, "committed": self.committed,
                "notices": self.notices}


def review(ws: Workspace, proposal_id: str, force: bool = False) -> ReviewResult:
    """Run the checks and decide, without changing anything. ``force``: approve a proposal
    whose warnings put it below review.defer_below_confidence instead of deferring it (errors
    still reject it; baseline changes and conflicts still wait for a person)."""
    started = time.perf_counter()
    git = Git(ws.root)
    proposal = load(git, proposal_id)
    if proposal is None:
        raise decide.not_open(git, proposal_id)
    head = git.rev_parse("HEAD") or proposal.base
    conn, _ = open_fresh(ws)
    try:
        verdict = judge(ws, conn, git, proposal, head)
        if verdict.undeclared:
            _check_not_behind(git, proposal, head)
        if not verdict.ok:  # judged on what it changes: its content is not read further (a
            # 10 MB file once took 79 s to review)
            ctx = ReviewContext(proposal, None, "", None, conn, ws.config,
                                undeclared=verdict.undeclared, claim_problems=verdict.problems)
            issues, performed, fixed = declared_check.run(ctx), [declared_check.NAME], ""
            new_text = fixed
        else:
            new_text, ctx = _context(git, proposal, conn, ws.config, head)
            ctx.workspace = ws
            issues, performed, fixed = [], [], new_text
            for check in all_checks(ws):
                performed.append(check.NAME)
                issues += check.run(ctx)
                if hasattr(check, "fix"):
                    fixed = check.fix(fixed)
    finally:
        conn.close()
    result = ReviewResult(proposal_id, "approved", 1.0, issues, ctx.similar, performed)
    errors = [i for i in issues if i.severity == "error"]
    warnings = [i for i in issues if i.severity == "warning"]
    result.confidence = max(0.0, 1.0 - WARNING_COST * len(warnings)) if not errors else 0.95
    required = [i for i in issues if i.required]
    floor = ws.config["review"]["defer_below_confidence"]
    result.held_back = deferral(issues, result.confidence, floor)
    deferred = deferral(issues, result.confidence, 0.0 if force else floor)
    if errors or required:
        result.decision = "rejected"
        result.reason = "; ".join(i.message for i in errors + required)
    elif deferred:
        result.decision, result.reason = "deferred", deferred
    elif fixed != new_text:
        result.decision, result.modified_content = "modified", fixed
        result.reason = "approved after automatic fixes"
    result.review_duration_ms = int((time.perf_counter() - started) * 1000)
    return result


def deferral(issues: list[Issue], confidence: float, floor: float) -> str | None:
    """Why the reviewer leaves a proposal with these issues to a person, or None: a baseline
    change, a conflict with the store, the judge's finding, a change only a person may make,
    or a confidence below ``floor`` (review.defer_below_confidence)."""
    if any(i.category == "baseline" for i in issues):
        return "baseline change: a person decides"
    if any(i.category == "conflicts" for i in issues):
        return "it would conflict with memories in the store: a person decides"
    if any(i.category == "coherence" and i.severity == "warning" for i in issues):
        # the judge's finding is shown; a person decides on it
        return ("the judge finds it contradicts, repeats or replaces a memory in the store: "
                "a person decides")
    if any(i.defers for i in issues):
        return next(i.message for i in issues if i.defers)
    if confidence < floor:
        warnings = sum(i.severity == "warning" for i in issues)
        return f"{warnings} warnings: a person should look at it"
    return None


def _context(git: Git, proposal, conn, config: dict, head: str) -> tuple[str, ReviewContext]:
    """The proposal's new text and what the checks read about it."""
    new_text = (git.show_blob(proposal.commit, MEMORY_ROOT + proposal.new_path) or b"").decode(
        "utf-8", "replace")
    old = git.show_blob(proposal.base, MEMORY_ROOT + proposal.path)
    memory, _ = parse_memory(new_text, proposal.new_path)
    touched = {}
    for path in git.changed_paths(proposal.base, proposal.commit):
        if path.startswith(MEMORY_ROOT):
            blob = git.show_blob(proposal.commit, path)
            touched[path[len(MEMORY_ROOT):]] = blob.decode("utf-8", "replace") if blob else None
    return new_text, ReviewContext(proposal, old.decode("utf-8", "replace") if old else None,
                                   new_text, memory, conn, config, touched=touched,
                                   id_used_by=id_taken(git, head, proposal, conn))


def _check_not_behind(git: Git, proposal, head: str) -> None:
    """A proposal made in a clone whose branch was ahead of this one brings those commits
    along: that is this branch being behind, not the proposal changing undeclared files."""
    from dmm.errors import InvalidInputError
    from dmm.team.refs import behind_on

    where = behind_on(git, proposal.base, head)
    if where:
        raise InvalidInputError(
            f"proposal {proposal.proposal_id} was made from commits this branch does not have "
            f"yet (they are on {where})",
            hint="bring this branch up to date (git pull), then review it again")


def process(ws: Workspace, proposal_id: str, force: bool = False) -> ReviewResult:
    """Review a proposal and carry out the decision in git."""
    result = review(ws, proposal_id, force)
    notes = [str(i) for i in result.issues if i.severity != "info"]
    if result.decision in ("approved", "modified"):
        if result.modified_content is not None:
            decide.amend(ws, proposal_id, result.modified_content,
                         "Whitespace and tags normalised by the reviewer.", REVIEWER)
        done = decide.approve(ws, proposal_id, decision=result.decision, reviewer=REVIEWER,
                              confidence=result.confidence, issues=notes)
        notice = after_approval(ws)
        if notice:
            result.notices.append(notice)
    else:
        done = decide.close(ws, proposal_id, decision=result.decision, reviewer=REVIEWER,
                            reason=result.reason, issues=notes)
    result.committed = done.to_dict()
    return result


def person_review(ws: Workspace, proposal_id: str, expect: str | None = None) -> ReviewResult:
    """The checks a person's approval runs first: their errors refuse it (InvalidInputError);
    its warnings and ``held_back`` are what the person is shown and asked about. ``expect``:
    the commit the person reviewed, checked before the checks run."""
    from dmm.errors import InvalidInputError

    _check_expected(ws, proposal_id, expect)
    result = review(ws, proposal_id)
    errors = [i for i in result.issues if i.severity == "error"]
    if errors:
        raise InvalidInputError(
            f"the checks found errors: {'; '.join(i.message for i in errors)}",
            hint="reject it, or approve bypassing the reviewer if you are sure")
    return result


def approve_as_person(ws: Workspace, proposal_id: str, *, reviewer: str, reason: str = "",
                      bypass_reviewer: bool = False, expect: str | None = None,
                      checked: ReviewResult | None = None,
                      ) -> tuple[decide.Decision, list[str]]:
    """A person's approval: the checks run first (person_review; ``checked``: they already
    ran) and their errors refuse it unless ``bypass_reviewer``; their warnings are kept in
    the merge commit. ``expect``: the commit the person reviewed; any other tip is refused
    (decide.check_expected). Returns the decision and the notices of the scan after it."""
    notes: list[str] = []
    _check_expected(ws, proposal_id, expect)
    if not bypass_reviewer:
        result = checked or person_review(ws, proposal_id)
        notes = [str(i) for i in result.issues if i.severity != "info"]
    done = decide.approve(ws, proposal_id, decision="approved", reviewer=reviewer,
                          issues=notes, reason=reason, expect=expect)
    notices = [after_approval(ws), off_main(ws, done.branch)]
    return done, [n for n in notices if n]


def _check_expected(ws: Workspace, proposal_id: str, expect: str | None) -> None:
    """Refused before the checks run, as it is again where it lands (decide.approve)."""
    if expect is not None:
        proposal = load(Git(ws.root), proposal_id)
        if proposal is not None:
            decide.check_expected(proposal, expect)


def off_main(ws: Workspace, branch: str) -> str | None:
    """A note when the approval went into a branch that is not the canonical main branch: it
    counts as approved (and leaves the queue) once that branch reaches main."""
    from dmm.gitrepo import Git
    from dmm.team.authority import canonical

    main = canonical(Git(ws.root)).branch
    name = (branch or "").removeprefix("refs/heads/")
    if not name or name == main:
        return None
    return (f"note: approved into {name}, not the canonical main branch {main} "
            f"(docs/team.md): the proposal counts as approved once {name} reaches {main}")


def after_approval(ws: Workspace) -> str | None:
    """Runs after every approval, as the git hooks would after a commit (plumbing commits run
    no hooks): refresh the cache and scan the changed memories for conflicts. Returns the
    hook's notice about new conflicts, if any. Never raises: the approval has landed by
    then, and a failing scan (a full disk, a damaged cache) must not make it look failed."""
    from dmm.hooks.run import run

    try:
        return run(ws)
    except Exception as exc:  # noqa: BLE001 - reported, and the landing stands
        return (f"the approval is committed, but the conflict scan after it failed "
                f"({type(exc).__name__}: {exc}): run `dmm conflicts scan` later")
