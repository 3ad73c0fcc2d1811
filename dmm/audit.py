"""The audit log, read back from git alone: proposals, decisions and conflict resolutions.

Every event is a commit whose message carries ``Dmm-*`` trailers: proposal commits on
dmm/proposals/* (and, once approved, reachable from the branch as merge parents), approval
merge commits and conflict resolutions on the canonical main branch (dmm.team.authority), and
close records on dmm/audit; proposals of teammates are read from the remote-tracking refs too,
records from the canonical remote's (dmm.team.records says which commits count as records).
A proposal that landed outside dmm (a forge's merge, squash or rebase: dmm.team.landed) is an
approval entry of its own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from dmm.gitrepo import Commit, Git, all_trailers, message_body, trailers
from dmm.proposals.model import MEMORY_ROOT


# the events `dmm log --decision` takes
DECISIONS = ("proposed", "approved", "modified", "rejected", "deferred", "withdrawn", "fixed")
RESOLUTIONS = tuple(f"resolved:{a}" for a in ("deprecate", "merge", "clarify", "dismiss",
                                              "defer", "undo"))
EVENTS = DECISIONS + RESOLUTIONS + ("flagged",)  # a flag records a conflict, resolves nothing
AUTO_FIXER = "dmm-reviewer"  # who made a "Dmm-Fix: auto" commit written before it said so


@dataclass
class LogEntry:
    commit: str
    date: str
    who: str  # who made the event: the reviewer, the resolver or the proposer
    event: str  # proposed | approved | ... | fixed | resolved:<action>
    proposal_id: str = ""
    type: str = ""
    path: str = ""
    new_path: str = ""
    memory_id: str = ""  # the first memory the event names (see memory_ids)
    reason: str = ""
    reviewer: str = ""
    confidence: str = ""
    issues: list[str] = field(default_factory=list)
    conflict_id: str = ""
    memory_ids: list[str] = field(default_factory=list)  # every memory the event names
    trailers: dict[str, list[str]] = field(default_factory=dict)  # every value of each key
    # how an approval landed when dmm did not land it: merge, fast-forward, rebase, squash
    via: str = ""
    # with signing set up (docs/team.md): verified | unverified | unsigned; else ""
    signature: str = ""
    committed_by: str = ""  # the commit's author as git shows it
    claimed: bool = False  # ``who`` is a trailer's claim naming someone else than that author

    def who_shown(self) -> str:
        """``who`` as a person should read it: a claim said to be one, an agent with the
        person it worked for (whose git name made the commit), the signature's check."""
        if self.claimed:
            out = f"{self.who} (claimed; committed by {self.committed_by})"
        elif acting_for(self.who, self.committed_by):
            out = f"{self.who} for {self.committed_by}"
        else:
            out = self.who
        return f"{out} ({self.signature})" if self.signature else out

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def acting_for(who: str, author: str) -> bool:
    """Whether ``who`` names an agent (dmm.agents.identity: "agent", "agent:claude-code")
    whose commit a person made: the agent worked in that person's clone, which is no claim
    to be them, and two teammates' agents are told apart by it."""
    return bool(author) and author != who and (who == "agent" or who.startswith("agent:"))


def _entry(commit: Commit) -> LogEntry | None:
    t = commit.trailers
    if not t:
        return None
    every = all_trailers(commit.message)
    if "Dmm-Decision" in t:
        event = t["Dmm-Decision"]
    elif "Dmm-Fix" in t:
        event = "fixed"
    elif "Dmm-Type" in t:
        event = "proposed"  # also a proposed resolution, which carries Dmm-Resolution too
    elif "Dmm-Resolution" in t:
        event = ("flagged" if t["Dmm-Resolution"] == "flag" else
                 f"resolved:{t['Dmm-Resolution']}")
    else:
        event = "recorded"
    reason = message_body(commit.message)
    ids = list(dict.fromkeys(v for key in ("Dmm-Memory", "Dmm-Target", "Dmm-Created")
                             for v in every.get(key, ())))
    # a memory the proposal declares it supersedes is one it retires (proposals.relations)
    ids += [v.split()[0] for v in every.get("Dmm-Relation", ())
            if v.split()[1:2] == ["supersedes"] and v.split()[0] not in ids]
    named = (t.get("Dmm-Reviewer") or t.get("Dmm-Resolved-By") if event != "proposed" else
             t.get("Dmm-Proposed-By"))
    who = named or (AUTO_FIXER if t.get("Dmm-Fix") == "auto" else commit.author)
    return LogEntry(commit=commit.sha, date=commit.date, who=who, event=event,
                    proposal_id=t.get("Dmm-Proposal", ""), type=t.get("Dmm-Type", ""),
                    path=t.get("Dmm-Path", ""), new_path=t.get("Dmm-New-Path", ""),
                    memory_id=ids[0] if ids else "", reason=reason,
                    reviewer=t.get("Dmm-Reviewer", ""), confidence=t.get("Dmm-Confidence", ""),
                    issues=every.get("Dmm-Issue", []), conflict_id=t.get("Dmm-Conflict", ""),
                    memory_ids=ids, trailers=every, committed_by=commit.author,
                    claimed=bool(named) and named != commit.author
                    and not acting_for(named, commit.author))


def entries(git: Git, *, path: str | None = None, memory: str | None = None,
            decision: str | None = None, limit: int | None = None) -> list[LogEntry]:
    """Every dmm event, newest first, optionally filtered (``memory``: events naming it)."""
    from dmm.team.records import read

    every = _with_landings(git, read(git))
    _check_signatures(git, every)
    by_commit = {e.commit: e for e in every}
    for e in every:  # an undo names the memories of the resolution it reverts
        reverted = by_commit.get(next(iter(e.trailers.get("Dmm-Reverts", [])), ""))
        if reverted is not None and not e.memory_ids:
            e.memory_ids = list(reverted.memory_ids)
            e.memory_id = e.memory_ids[0] if e.memory_ids else ""
    out = []
    for entry in every:
        if path and path not in (entry.path, entry.new_path):
            continue
        if memory and memory not in entry.memory_ids:
            continue
        if decision and decision != entry.event:
            continue
        out.append(entry)
        if limit and len(out) >= limit:
            break
    return out


def _check_signatures(git: Git, events: list[LogEntry]) -> None:
    """Mark each decision verified or not, in one git call, when this clone checks
    signatures (dmm.team.authority.signing_mode); a name in a trailer is only a claim."""
    from dmm.team.authority import signatures, signing_mode

    decisions = [e for e in events if e.event not in ("proposed", "fixed")]
    if not decisions or not signing_mode(git):
        return
    found = signatures(git, [e.commit for e in decisions])
    for e in decisions:
        e.signature = found.get(e.commit, "unsigned")


def touching(events: list[LogEntry], ids: set[str], paths: set[str]) -> list[LogEntry]:
    """The events that touched a memory known by ``ids`` and ``paths``: those naming it, and
    every event of the same proposal or conflict (a decision, an undo)."""
    named = {e.commit for e in events
             if ids & set(e.memory_ids) or paths & ({e.path, e.new_path} - {""})}
    proposals = {e.proposal_id for e in events if e.commit in named} - {""}
    conflicts = {e.conflict_id for e in events if e.commit in named and not e.proposal_id}
    return [e for e in events if e.commit in named or e.proposal_id in proposals
            or (e.conflict_id and e.conflict_id in conflicts and not e.proposal_id)]


def ids_ever_named(git: Git) -> set[str]:
    """Every memory id any dmm event ever named: proposals open, approved, rejected or
    withdrawn, resolutions. A new memory never gets one of them, so one id's log never mixes
    two memories (git keeps rejected proposals reachable from dmm/audit)."""
    from dmm.team.records import read

    # the commits alone: a forge's approval names no memory its proposal did not name
    return {i for node in read(git).events() for e in [_entry(node.commit)] if e
            for i in e.memory_ids}


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


def latest_decisions(events: list[LogEntry]) -> dict[str, str]:
    """The decision that stands on each proposal: the newest one, and never a deferral over a
    later approval, rejection or withdrawal (a deferred proposal stays open until a person
    decides; commits made in the same second may come in either order)."""
    out: dict[str, str] = {}
    for e in events:  # newest first
        if not e.proposal_id or e.event in ("proposed", "fixed"):
            continue
        if out.get(e.proposal_id) in (None, "deferred"):
            out[e.proposal_id] = e.event
    return out


def history(git: Git, path: str) -> list[HistoryEntry]:
    """Every commit that changed one memory file (relative to .dmm/memory/), following moves
    such as promotions and deprecations, newest first, with the decision on each proposal."""
    decisions = latest_decisions(entries(git))
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
        out.append(HistoryEntry(sha, date, entry.who if entry else author,
                                message.split("\n", 1)[0],
                                file_path.strip().removeprefix(MEMORY_ROOT),
                                entry.event if entry else "commit",
                                entry.reason if entry else "",
                                decisions.get(proposal, "")))
    return out


def _with_landings(git: Git, history) -> list[LogEntry]:
    """The log entries of ``history`` (dmm.team.records.read), newest first, with an
    approval added for every proposal that landed on a main branch without dmm, and without
    the second "proposed" entry of a proposal rebased onto it."""
    import datetime as dt

    from dmm.proposals.queue import unmerged
    from dmm.team import refs as team_refs
    from dmm.team.landed import content_landings, merge_landings

    timed = []
    for node in history.events():
        entry = _entry(node.commit)
        if entry is not None:
            timed.append((node.time, entry))
    approved = {e.proposal_id for _, e in timed if e.event in ("approved", "modified")}
    on_main = {n.commit.sha for n in history.main}
    made: dict[str, object] = {}
    commits: dict[str, list[str]] = {}
    for _, e in timed:
        if e.proposal_id and e.event in ("proposed", "fixed"):
            if e.event == "proposed":
                made[e.proposal_id] = e  # the oldest one stays
            if e.commit in on_main and e.proposal_id not in approved:
                commits.setdefault(e.proposal_id, []).append(e.commit)
    revs = team_refs.main_revs(git)
    landings = merge_landings(git, revs, commits) if commits else {}
    waiting = [p for p in unmerged(git) if p.proposal_id not in approved
               and p.proposal_id not in landings]
    waiting += _closed_ones(history, approved | set(landings) | {p.proposal_id for p in waiting})
    landings.update(content_landings(git, revs, waiting))
    proposals = {p.proposal_id: p for p in waiting}
    for pid, landing in landings.items():
        p = proposals.get(pid) or made.get(pid)
        if p is None:
            continue
        memory_id = getattr(p, "memory_id", "")
        when = dt.datetime.fromisoformat(landing.date).timestamp() if landing.date else 0
        timed.append((when, _approval(landing, p, memory_id)))
    # a proposal is made once: a rebased copy on a main branch (a new commit with the same
    # trailers) is its landing, not a second proposal; the oldest commit is the proposal
    first: dict[str, tuple[float, str]] = {}
    for when, e in timed:
        if e.event == "proposed" and e.proposal_id:
            key = (when, e.commit in on_main, e.commit)
            if e.proposal_id not in first or key < first[e.proposal_id]:
                first[e.proposal_id] = key
    # git's clock has seconds: of two commits in one second on a main branch, the one a
    # date-ordered walk lists first (a child before its parent) is the later
    on_main_at = {n.commit.sha: len(history.main) - i for i, n in enumerate(history.main)}
    out = []
    for _, entry in sorted(timed, key=lambda t: _newest_first(t, on_main_at), reverse=True):
        if entry.event == "proposed" and entry.proposal_id \
                and entry.commit != first[entry.proposal_id][2]:
            continue
        out.append(entry)
    return out


# within one second (git's clock), what comes later in a proposal's life is listed first
_LATER = {"proposed": 0, "fixed": 1, "resolved:undo": 3}


def _newest_first(timed: tuple, on_main_at: dict[str, int]) -> tuple:
    """The order of the log, reversed: a total key (time, then where the event comes in a
    proposal's life, then the place of its commit on the main branch, then the commit id),
    so that every clone lists the same entries in the same order, whatever order its refs
    were walked in."""
    when, entry = timed
    return when, _LATER.get(entry.event, 2), on_main_at.get(entry.commit, 0), entry.commit


def _closed_ones(history, skip: set[str]) -> list:
    """Proposals a record closed whose commits the record keeps: a forge may still have
    merged one (two decisions made before they met), and its log must say so."""
    from dmm.proposals.queue import from_commits

    out, seen = [], set(skip)
    for node in history.proposals:
        pid = trailers(node.commit.message).get("Dmm-Proposal", "")
        if pid and pid not in seen:
            proposal = from_commits(pid, node.commit.sha, [node.commit])
            if proposal:
                seen.add(pid)
                out.append(proposal)
    return out


def _approval(landing, proposal, memory_id: str) -> LogEntry:
    """The approval entry of a proposal that landed outside dmm (a dmm.team.landed.Landing)."""
    who = landing.who or "(git does not record who)"
    ids = [memory_id] if memory_id else []
    return LogEntry(commit=landing.commit, date=landing.date, who=who, event="approved",
                    proposal_id=landing.proposal_id, type=proposal.type, path=proposal.path,
                    new_path=getattr(proposal, "new_path", "") or proposal.path,
                    memory_id=memory_id, reason=f"landed outside dmm ({landing.via})",
                    reviewer=who, memory_ids=ids, via=landing.via)
