"""The audit record of every clone, and how the records of clones that diverged meet.

A close (reject, defer, withdraw) is an empty-tree commit on ``dmm/audit`` whose parents are
the previous record and the proposal commit. Two clones that close proposals before they meet
have two audit lines; ``dmm sync`` joins them with an empty-tree merge commit (whatever the
order, never a conflict: every record is its own commit and no file is shared), and a plain
``git merge`` of the two lines does the same. No record is ever rewritten or dropped.

Records are read by walking the audit line itself, from this clone's ``dmm/audit`` and the
canonical remote's (never a fork's or another remote's: dmm.team.authority): a record's
predecessor is its first parent (its second parent is the proposal it closed), a merge's
parents are all audit lines. A commit with ``Dmm-Decision`` trailers found
anywhere else (inside a proposal branch's own history, say) is never taken as a record: a
branch cannot close another proposal by carrying a made-up record. A record is a claim:
an "approved" one is never an approval (dmm.team.landed finds landings on the canonical main
branch), and a close's ``Dmm-Reviewer`` is shown as a claim when it is not its author.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from dmm.gitrepo import Commit, Git, trailers
from dmm.team import refs as team_refs



@dataclass(frozen=True)
class Node:
    commit: Commit

    @property
    def tree(self) -> str:
        return self.commit.tree

    @property
    def time(self) -> int:  # committer time, for merging histories newest first
        return self.commit.time


def walk(git: Git, *args: str) -> list[Node]:
    """``git log`` of ``args`` as Nodes, in git's order."""
    return [Node(c) for c in git.commits(*args, detailed=True)]


def empty_tree(git: Git) -> str:
    """The empty tree's id in this repository's hash (computed, nothing written)."""
    return git.out("hash-object", "-t", "tree", "--stdin", input="")


def is_record(commit: Commit) -> bool:
    return "Dmm-Decision" in trailers(commit.message)


# an approval is a fact of the canonical main branch's history (dmm.team.landed), never of a
# record: an "approved" record only keeps its proposal reachable after the branch is gone
APPROVALS = ("approved", "modified")


def is_decision(commit: Commit) -> bool:
    """Whether a record on the audit line is taken as a decision: a close (reject, defer,
    withdraw). Its ``Dmm-Reviewer`` is a claim: where it names someone other than the
    commit's author, dmm.audit shows it as claimed (signing is how a team knows a name)."""
    return commit.trailers.get("Dmm-Decision") not in APPROVALS


def chain(nodes: dict[str, Node], tips: list[str], empty: str) -> list[Node]:
    """The records on the audit lines ending at ``tips`` (see the module's docstring)."""
    seen: set[str] = set()
    out = []
    stack = list(tips)
    while stack:
        sha = stack.pop()
        node = nodes.get(sha)
        if node is None or sha in seen:
            continue
        seen.add(sha)
        if node.tree != empty:
            continue  # not an audit commit: the line ends here
        parents = node.commit.parents
        if is_record(node.commit):
            out.append(node)
            if len(parents) >= 2:
                stack.append(parents[0])  # the previous record; the last parent is the proposal
        elif len(parents) >= 2:
            stack.extend(parents)  # a merge of audit lines
    return out


@dataclass
class History:
    """What dmm's record holds, read across clones: ``main`` (commits with dmm trailers in the
    history of HEAD and its upstream: approvals, resolutions, merged proposals), ``records``
    (closes on the audit lines) and ``proposals`` (proposal commits elsewhere: open ones, and
    the closed ones the records keep reachable)."""

    main: list[Node]
    records: list[Node]
    proposals: list[Node]

    def events(self) -> list[Node]:
        """Every trusted commit of the record, newest first."""
        side = sorted(self.records + self.proposals, key=lambda n: -n.time)
        return list(heapq.merge(self.main, side, key=lambda n: -n.time))


def read(git: Git) -> History:
    main_revs = team_refs.main_revs(git)
    main = walk(git, *main_revs, "--grep=^Dmm-", "--date-order") if main_revs else []
    audits = list(team_refs.audit_refs(git).values())
    tips = audits + [r.tip if hasattr(r, "tip") else r[1]
                     for r in team_refs.all_proposal_refs(git)]
    if not tips:
        return History(main, [], [])
    exclude = ["--not", *main_revs] if main_revs else []
    side = walk(git, *dict.fromkeys(tips), *exclude, "--date-order")
    nodes = {n.commit.sha: n for n in side}
    records = [n for n in chain(nodes, audits, empty_tree(git)) if is_decision(n.commit)] \
        if audits else []
    proposals = []
    for node in side:
        t = trailers(node.commit.message)
        if "Dmm-Proposal" in t and "Dmm-Decision" not in t and (
                "Dmm-Type" in t or "Dmm-Fix" in t):
            proposals.append(node)
    return History(main, records, proposals)


def records(git: Git) -> list[Commit]:
    """The decisions on the audit records of this clone and the canonical remote, newest
    first (see is_decision)."""
    audits = list(team_refs.audit_refs(git).values())
    if not audits:
        return []
    main_revs = team_refs.main_revs(git)
    exclude = ["--not", *main_revs] if main_revs else []
    nodes = {n.commit.sha: n for n in walk(git, *dict.fromkeys(audits), *exclude)}
    found = [n for n in chain(nodes, audits, empty_tree(git)) if is_decision(n.commit)]
    return [n.commit for n in sorted(found, key=lambda n: -n.time)]


def record_shas(git: Git, tip: str) -> set[str]:
    """Every record (decision or claim) on the audit line ending at ``tip``."""
    mains = team_refs.main_revs(git)
    nodes = {n.commit.sha: n for n in walk(git, tip, *(["--not", *mains] if mains else []))}
    return {n.commit.sha for n in chain(nodes, [tip], empty_tree(git))}


def dropped(git: Git, old: str | None, new: str | None) -> set[str]:
    """The records the audit line ending at ``old`` shows and the one ending at ``new`` does
    not: what taking ``new`` in place of ``old`` would hide (the line is append-only)."""
    if not old or old == new:
        return set()
    return record_shas(git, old) - (record_shas(git, new) if new else set())
