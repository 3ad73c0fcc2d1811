"""The review queue is the set of proposal branches; decisions are read back from git."""

from __future__ import annotations

from dmm.gitrepo import Commit, Git, message_body, trailer_values
from dmm.proposals.model import RESOLUTION_TRAILERS, Proposal, check_proposal_id
from dmm.proposals.relations import TRAILER as RELATION
from dmm.proposals.relations import from_trailers
from dmm.shellcmd import command


def from_commits(proposal_id: str, tip: str, commits: list[Commit]) -> Proposal | None:
    """The proposal whose branch tip is ``tip``; ``commits`` walk back from the tip."""
    for commit in commits:
        t = commit.trailers
        if t.get("Dmm-Proposal") == proposal_id and "Dmm-Type" in t:
            relations, problems = from_trailers(trailer_values(commit.message, RELATION))
            return Proposal(proposal_id=proposal_id, type=t["Dmm-Type"], path=t.get("Dmm-Path", ""),
                            new_path=t.get("Dmm-New-Path", t.get("Dmm-Path", "")),
                            memory_id=t.get("Dmm-Memory", ""), reason=message_body(commit.message),
                            proposed_by=t.get("Dmm-Proposed-By", commit.author),
                            committed_by=commit.author,
                            proposed_at=commit.date, commit=tip,
                            base=commit.parents[0] if commit.parents else "",
                            # a resolution's claim, checked by proposals.declared before
                            # anything acts on it; other types carry none
                            resolution={k: t[k] for k in RESOLUTION_TRAILERS if k in t}
                            if t["Dmm-Type"] == "resolve" else {},
                            declared_ids=[v for key in ("Dmm-Memory", "Dmm-Target", "Dmm-Created")
                                          for v in trailer_values(commit.message, key)],
                            relations=relations, relation_problems=problems)
    return None


def deferred_ids(git: Git) -> set[str]:
    return _closes(git)[1]


def _closes(git: Git) -> tuple[set[str], set[str]]:
    """(closed, deferred) proposal ids from the decisions on the audit records of this clone
    and the canonical remote (dmm.team.records.is_decision)."""
    from dmm.team.records import records

    closed, deferred = set(), set()
    for commit in records(git):
        t = commit.trailers
        pid = t.get("Dmm-Proposal")
        if t.get("Dmm-Decision") in ("rejected", "withdrawn"):
            closed.add(pid)  # an approval is a landing on the canonical main, not a record
        elif t.get("Dmm-Decision") == "deferred":
            deferred.add(pid)
    return closed, deferred - closed


def open_proposals(git: Git, with_status: bool = True) -> list[Proposal]:
    """Every open proposal, oldest first: this clone's dmm/proposals/* branches and those of
    every remote (after a fetch), except the ones decided already: merged into the canonical
    main branch (dmm.team.authority), squashed or rebased onto it, or closed by an audit
    record of this clone or the canonical remote. ``with_status`` is kept for callers that
    do not need deferrals; the records are read either way."""
    from dmm.team import refs as team_refs
    from dmm.team.landed import content_landings

    props = unmerged(git)
    landed = content_landings(git, team_refs.main_revs(git), props) if props else {}
    return [p for p in props if p.proposal_id not in landed]


def unmerged(git: Git) -> list[Proposal]:
    """The proposals whose branches (here or on a remote) no main branch contains and no
    record closed, oldest first, with their status (a squash or rebase may still have landed
    one: see open_proposals)."""
    from dmm.team import refs as team_refs

    tips = team_refs.proposal_refs(git)
    if not tips:
        return []
    merged = team_refs.merged_refs(git, team_refs.main_revs(git))
    closed, deferred = _closes(git)
    todo = {pid: where for pid, where in tips.items()
            if where.ref not in merged and pid not in closed}
    # one git call for every tip: a proposal branch is usually its proposal commit alone
    at_tip = {c.sha: c for c in git.commits("--no-walk=unsorted",
                                            *{w.tip for w in todo.values()})} if todo else {}
    out = []
    for proposal_id, where in todo.items():
        tip = at_tip.get(where.tip)
        proposal = from_commits(proposal_id, where.tip, [tip]) if tip else None
        if proposal:
            proposal.ref, proposal.remote = where.ref, where.remote
        else:
            proposal = _read(git, where)  # reviewer fixes on top: walk back
        if proposal:
            proposal.status = "deferred" if proposal_id in deferred else "pending"
            out.append(proposal)
    return sorted(out, key=lambda p: (p.proposed_at, p.proposal_id))


def _read(git: Git, where) -> Proposal | None:
    proposal = from_commits(where.proposal_id, where.tip,
                             git.commits("-n", "5", "--first-parent", where.tip))
    if proposal:
        proposal.ref, proposal.remote = where.ref, where.remote
    return proposal


def candidate_branches(git: Git) -> tuple[list[Proposal], list[tuple[str, str]]]:
    """Every branch under dmm/proposals/ (here and on remotes): the open proposals read from
    them (oldest first, with their status) and, for each branch that holds none, (branch,
    why). A batch reports the latter instead of stopping at them."""
    from dmm.team import refs as team_refs

    props = open_proposals(git)
    good = {p.proposal_id for p in props}
    chosen = team_refs.proposal_refs(git)
    merged = team_refs.merged_refs(git, team_refs.main_revs(git))
    closed, _ = _closes(git)
    bad = []
    for entry in team_refs.all_proposal_refs(git):
        if isinstance(entry, tuple):
            ref = entry[0]
            branch, remote = _short(ref)
            name = branch.rsplit("/proposals/", 1)[-1]
            fix = (command("git", "push", remote, "--delete", branch) if remote
                   else command("git", "branch", "-D", branch))
            bad.append((f"{remote}/{branch}" if remote else branch,
                        f"the branch name {name!r} is not a proposal id "
                        f"(prop_YYYYMMDD_HHMMSS_xxxxxxxx): dmm did not make it; rename it, or "
                        f"delete it with: {fix}"))
        elif (entry.proposal_id not in good and entry.proposal_id not in closed
              and entry.ref not in merged and chosen.get(entry.proposal_id) == entry):
            branch, remote = _short(entry.ref)
            bad.append((f"{remote}/{branch}" if remote else branch,
                        "its commits carry no proposal dmm can read (no Dmm-Proposal and "
                        f"Dmm-Type trailers naming {entry.proposal_id}): delete it or make "
                        "the proposal again with dmm write"))
    return props, bad


def _short(ref: str) -> tuple[str, str | None]:
    """(branch name, remote or None) of a proposal ref."""
    if ref.startswith("refs/heads/"):
        return ref[len("refs/heads/"):], None
    remote, branch = ref[len("refs/remotes/"):].split("/", 1)
    return branch, remote


def load(git: Git, proposal_id: str) -> Proposal | None:
    """The open proposal ``proposal_id`` (from this clone's branch or a remote's), or None
    when no branch holds it or it is decided already."""
    from dmm.team import refs as team_refs

    check_proposal_id(proposal_id)
    where = team_refs.proposal_refs(git).get(proposal_id)
    if where is None:
        return None
    if where.ref in team_refs.merged_refs(git, team_refs.main_revs(git)):
        return None
    closed, deferred = _closes(git)
    if proposal_id in closed:
        return None
    proposal = _read(git, where)
    if proposal is None:
        return None
    from dmm.team.landed import content_landings

    if content_landings(git, team_refs.main_revs(git), [proposal]):
        return None  # squashed or rebased onto a main branch: approved there
    if proposal_id in deferred:
        proposal.status = "deferred"
    return proposal


def deferral(git: Git, proposal_id: str) -> dict | None:
    """Why and by whom an open proposal was last deferred (None if it never was)."""
    from dmm.team.records import records

    for commit in records(git):  # newest first, from every clone's audit line
        t = commit.trailers
        if t.get("Dmm-Proposal") == proposal_id and t.get("Dmm-Decision") == "deferred":
            return {"by": t.get("Dmm-Reviewer", commit.author), "at": commit.date,
                    "reason": message_body(commit.message), "commit": commit.sha,
                    "issues": trailer_values(commit.message, "Dmm-Issue")}
    return None
