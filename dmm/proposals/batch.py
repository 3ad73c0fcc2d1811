"""`dmm review process --all` as a batch job: every proposal it can process is processed, every
one it cannot is reported with the reason, and nothing stops the queue.

The queue is every branch under dmm/proposals/ (see dmm.team.refs for the ones a remote holds).
A branch is skipped, never fatal, when:

- its name is not a proposal id (``dmm/proposals/evil``): dmm never names a ref after it;
- it holds no proposal dmm can read (no ``Dmm-Proposal``/``Dmm-Type`` trailers naming it);
- it is stale against the checked-out branch: the memory it changes was changed there since
  the proposal was made (or the file it creates now exists), so the checks would judge a text
  other than the one that would land;
- its trailers name a path that is not a memory path (``Dmm-Path: ../../etc/passwd.md``);
- processing it fails (a merge conflict, a memory id already used, a local edit in the way):
  the error's own sentence is the reason.

Only what needs a person makes the job fail: a proposal skipped, or deferred by this run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dmm.errors import DmmError, InvalidInputError
from dmm.gitrepo import Git
from dmm.memory.paths import clean_memory_path
from dmm.proposals.model import MEMORY_ROOT, PROPOSAL_ID, Proposal
from dmm.workspace import Workspace


@dataclass
class Skipped:
    """A proposal branch the batch could not process, and why (a person must look)."""

    branch: str  # the ref name below refs/heads/ (or the remote-tracking one)
    proposal_id: str  # "" when the branch name is not a proposal id
    problem: str  # malformed | unreadable | stale | conflict | refused
    reason: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Batch:
    results: list = field(default_factory=list)  # ReviewResult, in the order processed
    skipped: list[Skipped] = field(default_factory=list)
    waiting: int = 0  # proposals deferred before this run, still waiting for a person

    @property
    def needs_person(self) -> int:
        return len(self.skipped) + sum(r.decision == "deferred" for r in self.results)

    def to_dict(self) -> dict:
        return {"processed": len(self.results), "results": [r.to_dict() for r in self.results],
                "skipped": [s.to_dict() for s in self.skipped], "waiting": self.waiting,
                "needs_person": self.needs_person}


def stale_reason(git: Git, proposal: Proposal, head: str) -> str | None:
    """Why ``proposal`` is stale against ``head``, or None: the file it changes is not what it
    was when the proposal was made (or the file it creates exists now)."""
    paths = [MEMORY_ROOT + _declared(proposal.path)]
    if proposal.new_path != proposal.path:
        paths.append(MEMORY_ROOT + _declared(proposal.new_path))
    then = git.blob_ids(proposal.base, paths) if proposal.base else {}
    now = git.blob_ids(head, paths)
    if then == now:
        return None
    if proposal.type == "create" or (proposal.new_path != proposal.path
                                     and MEMORY_ROOT + proposal.new_path in now
                                     and MEMORY_ROOT + proposal.new_path not in then):
        what = proposal.new_path
        return (f"{what} was created on the branch since the proposal was made: "
                "withdraw it and propose again from the current state")
    return (f"{proposal.path} changed on the branch since the proposal was made, so its checks "
            "would judge an old text: withdraw it and propose again from the current state")


def _declared(path: str) -> str:
    """A path a proposal's trailers name, through the one path normaliser: a branch may
    declare ``Dmm-Path: ../../../../etc/passwd.md`` (InvalidInputError, that branch only)."""
    try:
        return clean_memory_path(path)
    except InvalidInputError as exc:
        raise InvalidInputError(f"the proposal names an unusable path: {exc.message}") from None


def process_all(ws: Workspace, limit: int | None = None, force: bool = False,
                dry_run: bool = False) -> Batch:
    """Process every pending proposal, oldest first (at most ``limit``), skipping each one
    that cannot be processed with the reason; deferred ones wait for a person. ``dry_run``:
    review each one and change nothing."""
    from dmm.proposals.decide import ConflictError
    from dmm.proposals.queue import candidate_branches
    from dmm.proposals.review import process, review

    git = Git(ws.root)
    batch = Batch()
    if not dry_run:
        _check_can_land(git)
    proposals, unreadable = candidate_branches(git)
    for branch, why in unreadable:
        tail = branch.rsplit("/", 1)[-1]
        pid = tail if PROPOSAL_ID.fullmatch(tail) else ""
        batch.skipped.append(Skipped(branch, pid, "malformed" if not pid else "unreadable", why))
    for proposal in proposals:
        if proposal.status == "deferred":
            batch.waiting += 1
            continue
        if limit is not None and len(batch.results) + _counted(batch) >= limit:
            break
        branch = "dmm/proposals/" + proposal.proposal_id
        head = git.rev_parse("HEAD") or proposal.base
        try:  # a branch's trailers are its claims: one that names no usable path is refused
            why = stale_reason(git, proposal, head)
            if why:
                batch.skipped.append(Skipped(branch, proposal.proposal_id, "stale", why))
                continue
            batch.results.append((review if dry_run else process)(ws, proposal.proposal_id,
                                                                   force))
        except ConflictError as exc:
            batch.skipped.append(Skipped(branch, proposal.proposal_id, "conflict", exc.message))
        except DmmError as exc:
            batch.skipped.append(Skipped(branch, proposal.proposal_id, "refused", exc.message))
    return batch


def _counted(batch: Batch) -> int:
    """Skipped proposals that had a proposal id count towards --limit like processed ones."""
    return sum(1 for s in batch.skipped if s.problem in ("stale", "conflict", "refused"))


def _check_can_land(git: Git) -> None:
    """What would refuse every approval is said once, before the queue is touched."""
    busy = git.operation_in_progress()
    if busy:
        raise InvalidInputError(f"{busy} is in progress: finish or abort it, then try again")
    if git.current_branch() is None:
        raise InvalidInputError("HEAD is detached: check out the branch approvals should land "
                                "on, then try again")
