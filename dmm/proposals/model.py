"""Proposal records and the git names they live under."""

from __future__ import annotations

import datetime as dt
import re
import secrets
from dataclasses import dataclass, field

from dmm.errors import InvalidInputError
from dmm.memory.paths import MEMORY_ROOT  # noqa: F401 - re-exported for the proposals package

PROPOSAL_PREFIX = "refs/heads/dmm/proposals/"
AUDIT_REF = "refs/heads/dmm/audit"
TYPES = ("create", "update", "deprecate", "promote")  # `dmm write`; "resolve" comes from
# `dmm conflicts resolve --propose`
ALL_TYPES = (*TYPES, "resolve")


def known_type(kind: str) -> str:
    """A proposal's Dmm-Type as a table shows it: one dmm knows, else "unknown" (a branch made
    by hand may claim any text there; --json keeps it as written)."""
    return kind if kind in ALL_TYPES else "unknown"


RESOLUTION_TRAILERS = ("Dmm-Conflict", "Dmm-Resolution", "Dmm-Target", "Dmm-Created",
                       "Dmm-Reason", "Dmm-Resolved-By")


# the time it was made and random hex: 4 digits from older dmm versions, 8 now (two clones
# making 1,000 proposals in the same second share one with odds of about 1 in 10,000)
PROPOSAL_ID = re.compile(r"prop_[0-9]{8}_[0-9]{6}_(?:[0-9a-f]{4}|[0-9a-f]{8})", re.ASCII)


def check_proposal_id(proposal_id: str) -> str:
    """``proposal_id`` when it has the shape of a proposal id (it becomes part of a ref name)."""
    if not isinstance(proposal_id, str) or not PROPOSAL_ID.fullmatch(proposal_id):
        raise InvalidInputError(f"{proposal_id!r} is not a proposal id "
                                "(prop_YYYYMMDD_HHMMSS_xxxxxxxx)", hint="`dmm review list` shows them")
    return proposal_id


def new_proposal_id(now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"prop_{now:%Y%m%d_%H%M%S}_{secrets.token_hex(4)}"


@dataclass
class Proposal:
    """An open proposal, read back from its branch."""

    proposal_id: str
    type: str
    path: str  # relative to .dmm/memory/: the file the proposal is about
    new_path: str  # where the file is afterwards (differs for deprecate and promote)
    memory_id: str
    reason: str
    proposed_by: str
    proposed_at: str
    commit: str
    base: str  # the commit the proposal was made from
    status: str = "pending"  # pending | deferred
    # a conflict resolution's own trailers (Dmm-Conflict, Dmm-Resolution ...), carried into
    # the approval so that the resolution reads the same in `git log --first-parent`
    resolution: dict[str, str] = field(default_factory=dict)
    # every memory id the proposal commit names (Dmm-Memory, Dmm-Target, Dmm-Created)
    declared_ids: list[str] = field(default_factory=list)
    # the ref it was read from: this clone's branch, or a remote's (refs/remotes/R/dmm/...)
    ref: str = ""
    remote: str | None = None  # the remote whose branch it was read from, None when local
    # the proposal commit's author as git shows it: Dmm-Proposed-By is the branch's own claim
    committed_by: str = ""
    # what the writer declares about other memories (Dmm-Relation trailers: claims, checked
    # again wherever they are read; see dmm.proposals.relations), and why any cannot be read
    relations: list = field(default_factory=list)
    relation_problems: list[str] = field(default_factory=list)

    @property
    def claimed(self) -> bool:
        """Whether ``proposed_by`` is only the branch's claim (it names someone other than
        the commit's author): shown as such, never as that person's proposal."""
        return bool(self.committed_by) and self.proposed_by != self.committed_by

    def to_dict(self) -> dict:
        return {"remote": self.remote, "proposal_id": self.proposal_id, "type": self.type, "path": self.path,
                "new_path": self.new_path, "memory_id": self.memory_id, "reason": self.reason,
                "proposed_by": self.proposed_by, "committed_by": self.committed_by,
                "proposed_by_claimed": self.claimed, "proposed_at": self.proposed_at,
                "status": self.status, "branch": PROPOSAL_PREFIX.removeprefix("refs/heads/")
                + self.proposal_id, "commit": self.commit, "base": self.base,
                "relations": [r.to_dict() for r in self.relations]}


@dataclass
class ProposalResult:
    """The answer to `dmm write ...` (PRD phase 2, ProposalResult)."""

    success: bool
    proposal_id: str | None
    precheck_passed: bool
    precheck_warnings: list[str] = field(default_factory=list)
    precheck_errors: list[str] = field(default_factory=list)
    message: str = ""
    proposal: Proposal | None = None
    not_found: bool = False  # refused because the memory it is about does not exist
    # the proposed memory, parsed (None for a deprecation or a promotion, or when it does not
    # parse): what its nearest memories are found for; never part of the answer itself
    memory: object = field(default=None, repr=False)
    # its nearest memories for the writer to judge (dmm.proposals.neighbours), each with what
    # the writer declared about it, and the request to declare the ones not declared yet
    neighbours: list[dict] = field(default_factory=list)
    declare: str | None = None

    def to_dict(self) -> dict:
        out = {"success": self.success, "proposal_id": self.proposal_id,
               "precheck_passed": self.precheck_passed,
               "precheck_warnings": self.precheck_warnings,
               "precheck_errors": self.precheck_errors, "message": self.message,
               "not_found": self.not_found, "neighbours": self.neighbours,
               "declare": self.declare, "relations": []}
        if self.proposal:
            out.update({k: v for k, v in self.proposal.to_dict().items()
                        if k not in ("proposal_id",)})
        return out
