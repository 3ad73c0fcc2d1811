"""Decisions as git history: approve = a merge commit, close = a record on dmm/audit.

Approval is a merge commit made with ``git merge-tree --write-tree`` (never a tree with conflict
markers) and landed by dmm.landing (which refuses on a detached HEAD, an operation in progress or
a local edit in the way, and moves the branch with a compare-and-swap transaction that also
deletes the proposal branch). An flock on <git-common-dir>/dmm.lock serialises dmm's decisions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dmm.errors import (AlreadyDecidedError, DmmError, GitError, InvalidInputError,
                        NotFoundError)
from dmm.landing import land
from dmm.fsutil import file_lock
from dmm.gitrepo import Git, commit_message
from dmm.proposals.declared import id_taken, judge
from dmm.proposals.model import AUDIT_REF, MEMORY_ROOT, PROPOSAL_PREFIX
from dmm.proposals.decided import decision_of
from dmm.proposals.queue import load
from dmm.shellcmd import command
from dmm.workspace import Workspace

MAX_ATTEMPTS = 5  # close(): retries when dmm/audit moved meanwhile


class ConflictError(DmmError):
    """The proposal no longer merges cleanly with the checked-out branch."""


@dataclass
class Decision:
    proposal_id: str
    decision: str  # approved | modified | rejected | deferred | withdrawn
    commit: str
    branch: str | None = None
    changed_paths: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"proposal_id": self.proposal_id, "decision": self.decision,
                "commit": self.commit, "branch": self.branch,
                "changed_paths": self.changed_paths}


def _merged(git: Git, commit: str, into: str) -> bool:
    """Whether ``into`` contains ``commit`` already (approved meanwhile, here or elsewhere)."""
    return git.run("merge-base", "--is-ancestor", commit, into, check=False).returncode == 0


def audit_base(git: Git, local: str | None) -> str | None:
    """The record a new one follows: this clone's last record, or a remote's line where it
    contains this clone's (a fresh clone continues the team's line instead of starting a
    second one that `dmm sync` would have to join)."""
    from dmm.team.records import dropped
    from dmm.team.refs import audit_refs, is_ancestor

    best = local
    for ref, tip in sorted(audit_refs(git).items()):
        if ref == AUDIT_REF or tip == best:
            continue
        # a remote line that hides records of this clone's is never continued (append-only)
        if best is None or is_ancestor(git, best, tip) and not dropped(git, best, tip):
            best = tip
    return best


def not_open(git: Git, proposal_id: str) -> DmmError:
    """Why ``proposal_id`` is not open: decided already, or never made."""
    decided = decision_of(git, proposal_id)
    if decided:
        return AlreadyDecidedError(f"proposal {proposal_id} is already {decided}",
                                   hint="`dmm log` shows its record")
    return NotFoundError(f"no open proposal {proposal_id}", hint="`dmm review list` shows them")


def check_expected(proposal, expect: str | None) -> None:
    """Refuse unless the proposal's tip is ``expect``, the commit the person read (`review
    show` prints it): a commit pushed onto the proposal after that, picked up by a fetch, must
    not land under their approval. Only a full commit name: an abbreviation could be matched
    by a commit made to match it."""
    if expect is None:
        return
    if not re.fullmatch(r"[0-9a-f]{40}([0-9a-f]{24})?", expect.lower()):
        raise InvalidInputError(
            f"expect {expect!r}: give the full commit `dmm review show` prints (40 hex digits), "
            "not an abbreviation, which a commit made to match it could match")
    if proposal.commit != expect.lower():
        raise InvalidInputError(
            f"proposal {proposal.proposal_id} is now at commit {proposal.commit[:12]}, not "
            f"{expect[:12]}, the commit you expected: it changed after you read it, and "
            "nothing was approved",
            hint=f"read it again (dmm review show {proposal.proposal_id}) and approve the "
                 "commit you read (--expect COMMIT)")


def approve(ws: Workspace, proposal_id: str, *, decision: str = "approved",
            reviewer: str, confidence: float | None = None, issues: list[str] | None = None,
            reason: str = "", expect: str | None = None) -> Decision:
    """Merge the open proposal into the checked-out branch; ``expect``: only if its tip is
    that commit (what the person reviewed), checked again where the ref moves."""
    git = Git(ws.root)
    proposal = load(git, proposal_id)
    if proposal is None:
        raise not_open(git, proposal_id)
    check_expected(proposal, expect)
    pairs = [("Dmm-Proposal", proposal_id), ("Dmm-Decision", decision),
             ("Dmm-Type", proposal.type), ("Dmm-Path", proposal.path)]
    if proposal.new_path != proposal.path:
        pairs.append(("Dmm-New-Path", proposal.new_path))
    pairs += [("Dmm-Memory", proposal.memory_id), ("Dmm-Reviewer", reviewer)]
    if confidence is not None:
        pairs.append(("Dmm-Confidence", f"{confidence:.2f}"))
    pairs += [("Dmm-Issue", issue) for issue in issues or []]

    def build(old: str):
        if git.rev_parse(proposal.ref) != proposal.commit or _merged(git, proposal.commit, old):
            raise not_open(git, proposal_id)
        verdict = judge(ws, conn, git, proposal, old)
        if verdict.undeclared:
            raise InvalidInputError(
                f"proposal {proposal_id} also changes files it does not declare: "
                f"{', '.join(verdict.undeclared[:10])}",
                hint=f"reject it: {command('dmm', 'review', 'reject', proposal_id)}")
        if verdict.problems:
            raise InvalidInputError(f"proposal {proposal_id} cannot be approved: "
                                    f"{'; '.join(verdict.problems)}",
                                    hint="reject it: "
                                         + command("dmm", "review", "reject", proposal_id))
        # a resolution's trailers as dmm derived them, so that it reads as one in
        # `git log --first-parent` (and `conflicts undo` finds it); never the branch's own
        message = commit_message(
            f"dmm: {decision} {proposal.type} {proposal.path} ({proposal_id})",
            reason or proposal.reason, pairs + verdict.resolution)
        tree, conflicts = git.merge_tree(old, proposal.commit)
        if tree is None:
            branch = (git.current_branch() or "HEAD").removeprefix("refs/heads/")
            raise ConflictError(
                f"proposal {proposal_id} conflicts with {branch} in {', '.join(conflicts)}",
                hint="reject or withdraw it and propose again from the current state")
        taken = id_taken(git, tree, proposal, conn)
        if taken:
            raise InvalidInputError(
                f"memory id {proposal.memory_id} of proposal {proposal_id} is already used by "
                f"{taken}", hint=f"reject it ({command('dmm', 'review', 'reject', proposal_id)}) "
                                 "and propose the memory again: it gets a free id")
        # this clone's branch goes with the landing; a remote's is removed by `dmm sync`
        # once the approval is published there
        return tree, [old, proposal.commit], message, [
            (proposal.ref, None, proposal.commit)] if proposal.remote is None else []

    def still_open() -> None:
        if git.rev_parse(proposal.ref) is None or _merged(git, proposal.commit, "HEAD"):
            raise not_open(git, proposal_id)

    from dmm.index.refresh import open_fresh

    conn, _ = open_fresh(ws)  # names the memories that may already have the proposal's id
    try:
        landed = land(git, build, still_open)
    finally:
        conn.close()
    return Decision(proposal_id, decision, landed.commit, landed.branch, landed.changed_paths)


def own(git: Git, proposal_id: str, who: str):
    """The open proposal ``proposal_id`` when ``who`` proposed it (an agent may revise or
    withdraw only its own); InvalidInputError otherwise."""
    from dmm.proposals.decided import status_of

    proposal = load(git, proposal_id)
    if proposal is None:
        status = status_of(git, proposal_id)
        raise InvalidInputError(f"{proposal_id} is not open ({status['status']}): there is "
                                "nothing to change")
    if proposal.proposed_by != who:
        raise InvalidInputError(f"{proposal_id} was proposed by {proposal.proposed_by}, not by "
                                f"you ({who}): only its author may revise or withdraw it",
                                hint="flag your doubt with conflict_flag, or propose after it "
                                     "is decided")
    return proposal


def withdraw(ws: Workspace, proposal_id: str, reason: str, *, who: str,
             own_only: bool) -> Decision:
    """Withdraw a proposal: closed like a rejection, recorded on dmm/audit as ``who``'s.
    ``own_only`` (an agent): only a proposal ``who`` made; a person may withdraw any."""
    if not reason.strip():
        raise InvalidInputError("a reason is required: say why")
    if own_only:
        own(Git(ws.root), proposal_id, who)
    return close(ws, proposal_id, decision="withdrawn", reviewer=who, reason=reason)


def close(ws: Workspace, proposal_id: str, *, decision: str, reviewer: str, reason: str,
          issues: list[str] | None = None) -> Decision:
    """Record a rejection, deferral or withdrawal on dmm/audit (the branch stays if deferred)."""
    if decision not in ("rejected", "deferred", "withdrawn"):
        raise ValueError(decision)
    git = Git(ws.root)
    with file_lock(git.common_dir() / "dmm.lock"):
        for _ in range(MAX_ATTEMPTS):
            proposal = load(git, proposal_id)
            if proposal is None:
                raise not_open(git, proposal_id)
            audit = git.rev_parse(AUDIT_REF)
            base = audit_base(git, audit)
            pairs = [("Dmm-Proposal", proposal_id), ("Dmm-Decision", decision),
                     ("Dmm-Type", proposal.type), ("Dmm-Path", proposal.path),
                     ("Dmm-Memory", proposal.memory_id), ("Dmm-Reviewer", reviewer)]
            pairs += [("Dmm-Issue", issue) for issue in issues or []]
            message = commit_message(f"dmm: {decision} {proposal.type} {proposal.path} "
                               f"({proposal_id})", reason, pairs)
            parents = ([base] if base else []) + [proposal.commit]
            record = git.commit_tree(git.empty_tree(), parents, message)
            updates = [(AUDIT_REF, record, audit)]
            if decision != "deferred" and proposal.remote is None:
                updates.append((proposal.ref, None, proposal.commit))
            if git.update_refs(updates):
                return Decision(proposal_id, decision, record, "dmm/audit")
        raise GitError(f"dmm/audit kept moving while recording {proposal_id}: try again")


def amend(ws: Workspace, proposal_id: str, new_text: str, summary: str, reviewer: str) -> str:
    """Add the reviewer's fixes as a commit on the proposal branch, in the reviewer's name (a
    trailer: the commit's author is the git user running dmm); returns the new tip."""
    git = Git(ws.root)
    proposal = load(git, proposal_id)
    if proposal is None:
        raise not_open(git, proposal_id)
    tree = git.tree_with(proposal.commit,
                         {MEMORY_ROOT + proposal.new_path: git.hash_blob(new_text.encode())})
    message = commit_message(f"dmm: reviewer fixes for {proposal.path}", summary,
                       [("Dmm-Proposal", proposal_id), ("Dmm-Fix", "auto"),
                        ("Dmm-Reviewer", reviewer)])
    tip = git.commit_tree(tree, [proposal.commit], message)
    # a teammate's proposal (read from a remote) gets a branch here for the fixes
    expected = proposal.commit if proposal.remote is None else None
    if not git.update_refs([(PROPOSAL_PREFIX + proposal_id, tip, expected)]):
        raise GitError(f"proposal {proposal_id} changed while fixing it: try again")
    return tip
