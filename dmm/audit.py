"""The audit log, read back from git alone: proposals, decisions and conflict resolutions.

Every event is a commit whose message carries ``Dmm-*`` trailers: proposal commits on
dmm/proposals/* (and, once approved, reachable from the branch as merge parents), approval
merge commits and conflict resolutions on the checked-out branch, and close records on
dmm/audit.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from dmm.gitrepo import Commit, Git
from dmm.proposals.model import AUDIT_REF, MEMORY_ROOT, PROPOSAL_PREFIX


@dataclass
class LogEntry:
    commit: str
    date: str
    who: str
    event: str  # proposed | approved | modified | rejected | deferred | withdrawn | fixed | ...
    proposal_id: str = ""
    type: str = ""
    path: str = ""
    new_path: str = ""
    memory_id: str = ""
    reason: str = ""
    reviewer: str = ""
    confidence: str = ""
    issues: list[str] = field(default_factory=list)
    trailers: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "trailers"}
        out["trailers"] = self.trailers
        return out


def _entry(commit: Commit) -> LogEntry | None:
    t = commit.trailers
    if not t:
        return None
    if "Dmm-Decision" in t:
        event = t["Dmm-Decision"]
    elif "Dmm-Fix" in t:
        event = "fixed"
    elif "Dmm-Type" in t:
        event = "proposed"  # also a proposed resolution, which carries Dmm-Resolution too
    elif "Dmm-Resolution" in t:
        event = f"resolved:{t['Dmm-Resolution']}"
    else:
        event = "recorded"
    body = commit.message.split("\n", 1)[1] if "\n" in commit.message else ""
    reason = "\n".join(l for l in body.splitlines() if not l.startswith("Dmm-")).strip()
    issues = [line.split(":", 1)[1].strip() for line in commit.message.splitlines()
              if line.startswith("Dmm-Issue:")]
    return LogEntry(commit=commit.sha, date=commit.date, who=commit.author, event=event,
                    proposal_id=t.get("Dmm-Proposal", ""), type=t.get("Dmm-Type", ""),
                    path=t.get("Dmm-Path", ""), new_path=t.get("Dmm-New-Path", ""),
                    memory_id=t.get("Dmm-Memory", ""), reason=reason,
                    reviewer=t.get("Dmm-Reviewer", ""), confidence=t.get("Dmm-Confidence", ""),
                    issues=issues, trailers=t)


def entries(git: Git, *, path: str | None = None, memory: str | None = None,
            decision: str | None = None, limit: int | None = None) -> list[LogEntry]:
    """Every dmm event, newest first, optionally filtered."""
    revs = [rev for rev in ("HEAD", AUDIT_REF) if git.rev_parse(rev)]
    if not revs and not git.refs(PROPOSAL_PREFIX):
        return []
    commits = git.commits(*revs, f"--glob={PROPOSAL_PREFIX}*", "--grep=^Dmm-", "--date-order")
    out = []
    for commit in commits:
        entry = _entry(commit)
        if entry is None:
            continue
        if path and path not in (entry.path, entry.new_path):
            continue
        if memory and memory != entry.memory_id:
            continue
        if decision and decision != entry.event:
            continue
        out.append(entry)
        if limit and len(out) >= limit:
            break
    return out


def decision_counts(git: Git) -> dict[str, int]:
    return dict(Counter(e.event for e in entries(git) if e.event not in ("proposed", "fixed")))


@dataclass
class HistoryEntry:
    commit: str
    date: str
    who: str
    subject: str
    path: str
    event: str
    reason: str = ""
    decision: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def history(git: Git, path: str) -> list[HistoryEntry]:
    """Every commit that changed one memory file (relative to .dmm/memory/), following moves
    such as promotions and deprecations, newest first, with the decision on each proposal."""
    decisions = {e.proposal_id: e.event for e in entries(git)
                 if e.proposal_id and e.event not in ("proposed", "fixed")}
    proc = git.run("log", "--follow", "--name-only", "--format=%x1e%H%x1f%an%x1f%aI%x1f%B%x1f",
                   "HEAD", "--", MEMORY_ROOT + path, check=False)
    out = []
    for record in proc.stdout.split("\x1e"):
        if not record.strip():
            continue
        sha, author, date, message, names = record.split("\x1f", 4)
        message = message.strip()
        entry = _entry(Commit(sha, (), author, "", date, message))
        file_path = next((n for n in names.split("\n") if n.strip()), MEMORY_ROOT + path)
        proposal = entry.proposal_id if entry else ""
        out.append(HistoryEntry(sha, date, author, message.split("\n", 1)[0],
                                file_path.strip().removeprefix(MEMORY_ROOT),
                                entry.event if entry else "commit",
                                entry.reason if entry else "",
                                decisions.get(proposal, "")))
    return out
