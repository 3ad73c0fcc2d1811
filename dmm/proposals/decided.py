"""Decided proposals, as git tells them: how one was decided, where one stands, the queue's
counts and the list of closed ones (approvals on the canonical main branch, closes on audit
records, landings outside dmm that the audit log finds).

Read from git alone (IO: git, through dmm.gitrepo). Kept apart from dmm.proposals.queue, the
open branches, because it reads the audit log (dmm.audit), which itself reads the queue to
find proposals that landed outside dmm.
"""

from __future__ import annotations

from dmm.gitrepo import Git
from dmm.proposals.queue import load, open_proposals

def decision_of(git: Git, proposal_id: str) -> str | None:
    """How a closed proposal was decided (approved, modified, rejected, withdrawn), or None:
    an approval in the history of the canonical main branch, a close on an audit record, else
    a landing outside dmm (a squash, a rebase) that the log finds."""
    from dmm.team import refs as team_refs
    from dmm.team.records import records

    for rev in team_refs.main_revs(git):
        for commit in git.commits_with_trailer(rev, "Dmm-Proposal", proposal_id, first_parent=False):
            decision = commit.trailers.get("Dmm-Decision")
            if decision and decision != "deferred":
                return decision
    for commit in records(git):
        t = commit.trailers
        if t.get("Dmm-Proposal") == proposal_id and t.get("Dmm-Decision") not in (None, "deferred"):
            return t["Dmm-Decision"]
    from dmm.audit import entries, latest_decisions

    found = latest_decisions(entries(git)).get(proposal_id)
    return found if found in CLOSED else None


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
                    "decided_by": e.who, "decided_at": e.date, "reason": e.reason,
                    "signature": e.signature, "decided_by_claimed": e.claimed,
                    "committed_by": e.committed_by})
    return out
