"""The review queue is the set of proposal branches; decisions are read back from git."""

from __future__ import annotations

from dmm.gitrepo import Commit, Git, message_body, trailer_values
from dmm.proposals.model import (AUDIT_REF, PROPOSAL_PREFIX, RESOLUTION_TRAILERS, Proposal,
                                 check_proposal_id)


def _from_commits(proposal_id: str, tip: str, commits: list[Commit]) -> Proposal | None:
    """The proposal whose branch tip is ``tip``; ``commits`` walk back from the tip."""
    for commit in commits:
        t = commit.trailers
        if t.get("Dmm-Proposal") == proposal_id and "Dmm-Type" in t:
            return Proposal(proposal_id=proposal_id, type=t["Dmm-Type"], path=t.get("Dmm-Path", ""),
                            new_path=t.get("Dmm-New-Path", t.get("Dmm-Path", "")),
                            memory_id=t.get("Dmm-Memory", ""), reason=message_body(commit.message),
                            proposed_by=t.get("Dmm-Proposed-By", commit.author),
                            proposed_at=commit.date, commit=tip,
                            base=commit.parents[0] if commit.parents else "",
                            # a resolution's claim, checked by proposals.declared before
                            # anything acts on it; other types carry none
                            resolution={k: t[k] for k in RESOLUTION_TRAILERS if k in t}
                            if t["Dmm-Type"] == "resolve" else {},
                            declared_ids=[v for key in ("Dmm-Memory", "Dmm-Target", "Dmm-Created")
                                          for v in trailer_values(commit.message, key)])
    return None


def deferred_ids(git: Git) -> set[str]:
    if not git.rev_parse(AUDIT_REF):
        return set()
    return {c.trailers.get("Dmm-Proposal") for c in git.commits(AUDIT_REF, "--first-parent")
            if c.trailers.get("Dmm-Decision") == "deferred"}


def open_proposals(git: Git, with_status: bool = True) -> list[Proposal]:
    """Every open proposal, oldest first (``with_status`` also reads dmm/audit for deferrals)."""
    refs = git.refs(PROPOSAL_PREFIX)
    deferred = deferred_ids(git) if with_status and refs else set()
    out = []
    for ref, tip in refs.items():
        proposal_id = ref.removeprefix(PROPOSAL_PREFIX)
        proposal = _from_commits(proposal_id, tip, git.commits("-n", "5", "--first-parent", tip))
        if proposal:
            proposal.status = "deferred" if proposal_id in deferred else "pending"
            out.append(proposal)
    return sorted(out, key=lambda p: (p.proposed_at, p.proposal_id))


def load(git: Git, proposal_id: str) -> Proposal | None:
    check_proposal_id(proposal_id)
    tip = git.rev_parse(PROPOSAL_PREFIX + proposal_id)
    if tip is None:
        return None
    proposal = _from_commits(proposal_id, tip, git.commits("-n", "5", "--first-parent", tip))
    if proposal and proposal_id in deferred_ids(git):
        proposal.status = "deferred"
    return proposal


def deferral(git: Git, proposal_id: str) -> dict | None:
    """Why and by whom an open proposal was last deferred (None if it never was)."""
    if not git.rev_parse(AUDIT_REF):
        return None
    for commit in git.commits_with_trailer(AUDIT_REF, "Dmm-Proposal", proposal_id):
        t = commit.trailers
        if t.get("Dmm-Decision") == "deferred":
            return {"by": t.get("Dmm-Reviewer", commit.author), "at": commit.date,
                    "reason": message_body(commit.message), "commit": commit.sha,
                    "issues": trailer_values(commit.message, "Dmm-Issue")}
    return None


def decision_of(git: Git, proposal_id: str) -> str | None:
    """How a closed proposal was decided (approved, rejected, withdrawn), or None."""
    for rev in ("HEAD", AUDIT_REF):
        if not git.rev_parse(rev):
            continue
        for commit in git.commits_with_trailer(rev, "Dmm-Proposal", proposal_id):
            decision = commit.trailers.get("Dmm-Decision")
            if decision and decision != "deferred":
                return decision
    return None


def status_of(git: Git, proposal_id: str) -> dict:
    """Where a proposal stands: open (pending or deferred, with its record) or decided
    (approved, modified, rejected, withdrawn); NotFoundError when git knows nothing of it."""
    from dmm.errors import NotFoundError

    proposal = load(git, proposal_id)
    if proposal is not None:
        return {"proposal_id": proposal_id, "status": proposal.status, "open": True,
                "proposal": proposal.to_dict()}
    decided = decision_of(git, proposal_id)
    if decided is None:
        raise NotFoundError(f"no proposal {proposal_id}", hint="`dmm review list` shows them")
    return {"proposal_id": proposal_id, "status": decided, "open": False}


def stats(git: Git) -> dict:
    """The queue's counts (PRD phase 2 QueueStats): open proposals and past decisions."""
    from dmm.audit import decision_counts

    props = open_proposals(git)
    return {"pending": sum(p.status == "pending" for p in props),
            "deferred": sum(p.status == "deferred" for p in props),
            "decisions": decision_counts(git)}


CLOSED = ("approved", "modified", "rejected", "withdrawn")


def closed_with(git: Git, status: str) -> list[dict]:
    """Decided proposals with this decision ("closed": any), newest first."""
    return [p for p in closed_proposals(git) if status in ("closed", p["status"])]


def closed_proposals(git: Git) -> list[dict]:
    """Every decided proposal, newest decision first, from the trailers of the commits that
    made and decided it (approvals on the branch, the rest on dmm/audit): who proposed what
    and why, and who decided how and why. ``commit`` is the proposal's own commit, whose diff
    is the change it proposed."""
    from dmm.audit import entries, latest_decisions

    events = entries(git)
    decided = {pid: status for pid, status in latest_decisions(events).items()
               if status in CLOSED}
    made = {e.proposal_id: e for e in reversed(events) if e.event == "proposed"}
    out, seen = [], set()
    for e in events:  # newest first
        pid = e.proposal_id
        if pid not in decided or pid in seen or e.event != decided[pid]:
            continue
        seen.add(pid)
        p = made.get(pid)
        out.append({"proposal_id": pid, "status": decided[pid],
                    "type": p.type if p else e.type, "path": p.path if p else e.path,
                    "new_path": (p.new_path or p.path) if p else e.path,
                    "proposed_by": p.who if p else "", "proposed_at": p.date if p else "",
                    "proposal_reason": p.reason if p else "", "commit": p.commit if p else "",
                    "decided_by": e.who, "decided_at": e.date, "reason": e.reason})
    return out
