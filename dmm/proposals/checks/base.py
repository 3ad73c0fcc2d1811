"""What every reviewer check reads (ReviewContext) and returns (Issue). Kept apart from the
package's list of checks (dmm.proposals.checks.all_checks) so that the checks import this and
the list imports the checks, never both ways."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from dmm.memory import Memory
from dmm.proposals.model import Proposal


@dataclass
class Issue:
    category: str  # the check's NAME
    severity: str  # error | warning | info
    message: str
    suggestion: str | None = None
    auto_fixable: bool = False
    # a bound BOOT.md tells agents is required: the automated reviewer rejects on it, a person
    # approving sees it as a warning and may decide otherwise
    required: bool = False
    # a change only a person may approve (a memory the proposal retires): the reviewer defers
    # it, whatever its confidence
    defers: bool = False

    def to_dict(self) -> dict:
        return {"category": self.category, "severity": self.severity, "message": self.message,
                "suggestion": self.suggestion, "auto_fixable": self.auto_fixable,
                "required": self.required}

    def __str__(self) -> str:
        return f"{self.severity}: {self.category}: {self.message}"


@dataclass
class ReviewContext:
    proposal: Proposal
    old_text: str | None  # None for a create
    new_text: str
    memory: Memory | None  # new_text parsed (None when it does not parse)
    conn: sqlite3.Connection  # a fresh cache of the store
    config: dict
    similar: list = field(default_factory=list)  # filled by the duplicate check
    # every memory file the proposal changes (relative to .dmm/memory/): its new text, or None
    # when it goes away. One file for `dmm write`; several for a conflict resolution.
    touched: dict[str, str | None] = field(default_factory=dict)
    # files the proposal's branch changes beyond what it may change (proposals.declared), and
    # why what the branch claims does not hold (an unknown conflict, a file over the limit ...)
    undeclared: list[str] = field(default_factory=list)
    claim_problems: list[str] = field(default_factory=list)
    # another memory on the target branch that already has the proposal's id (declared.id_taken)
    id_used_by: str | None = None
    # what the checks found about the proposal and other memories (relations.Finding), read
    # by the relations check beside what the writer declared; any check may add to it
    findings: list = field(default_factory=list)
    # the Workspace reviewed in: whose clone's own settings apply (the judge runs only with
    # its person's consent, in git config); None where no clone reviews (CI)
    workspace: object | None = None

    @property
    def own_paths(self) -> set[str]:
        """Paths to leave out when comparing the proposal with the store."""
        return {self.proposal.path, self.proposal.new_path, *self.touched}
