"""Where the store's refs are: in this clone and in the remote-tracking refs of every remote
(proposals), of the canonical remote (audit records), and the canonical main branch.

A proposal or an audit record that a teammate pushed is read from ``refs/remotes/<remote>/``
after any ``git fetch`` (the default refspec already copies ``dmm/*`` branches there), so a
fresh clone sees the team's queue and record without any setting. What arrives from a remote
is untrusted: a remote-tracking ref names a proposal only when its name is a proposal id, and
it never decides anything by itself (see dmm.team.authority, dmm.team.records and
dmm.team.landed).
"""

from __future__ import annotations

from dataclasses import dataclass

from dmm.gitrepo import Git
from dmm.proposals.model import AUDIT_REF, PROPOSAL_ID, PROPOSAL_PREFIX

REMOTES = "refs/remotes/"
PROPOSALS_TAIL = "/dmm/proposals/"
AUDIT_TAIL = "/dmm/audit"


@dataclass(frozen=True)
class ProposalRef:
    proposal_id: str
    ref: str  # refs/heads/dmm/proposals/ID or refs/remotes/<remote>/dmm/proposals/ID
    tip: str
    remote: str | None  # None for this clone's own branch

    @property
    def local(self) -> bool:
        return self.remote is None


def _remote_of(ref: str) -> str:
    return ref[len(REMOTES):].split("/", 1)[0]


def all_proposal_refs(git: Git) -> list[ProposalRef | tuple[str, str]]:
    """Every ref under dmm/proposals/, here and on every remote: a ProposalRef for each name
    that is a proposal id, (ref, tip) for each that is not."""
    out: list = []
    for ref, tip in git.refs(PROPOSAL_PREFIX).items():
        name = ref[len(PROPOSAL_PREFIX):]
        out.append(ProposalRef(name, ref, tip, None) if PROPOSAL_ID.fullmatch(name)
                   else (ref, tip))
    for ref, tip in git.refs(REMOTES).items():
        head, sep, name = ref.partition(PROPOSALS_TAIL)
        if not sep or "/" in head[len(REMOTES):]:
            continue  # refs/remotes/<remote>/dmm/proposals/<name> only
        out.append(ProposalRef(name, ref, tip, _remote_of(ref)) if PROPOSAL_ID.fullmatch(name)
                   else (ref, tip))
    return out


def proposal_refs(git: Git) -> dict[str, ProposalRef]:
    """{proposal id: the ref to read it from}: this clone's own branch where there is one
    (it may hold the reviewer's fixes not pushed yet), else a remote's; where remotes differ,
    the one that contains the others (else the first, by remote name)."""
    found: dict[str, list[ProposalRef]] = {}
    for entry in all_proposal_refs(git):
        if isinstance(entry, ProposalRef):
            found.setdefault(entry.proposal_id, []).append(entry)
    out = {}
    for pid, refs in found.items():
        local = [r for r in refs if r.local]
        if local:
            out[pid] = local[0]
            continue
        refs.sort(key=lambda r: r.ref)
        best = refs[0]
        for other in refs[1:]:
            if other.tip != best.tip and is_ancestor(git, best.tip, other.tip):
                best = other
        out[pid] = best
    return out


def is_ancestor(git: Git, old: str, new: str) -> bool:
    return git.run("merge-base", "--is-ancestor", old, new, check=False).returncode == 0


def audit_refs(git: Git) -> dict[str, str]:
    """{ref: tip} of dmm/audit here and on the canonical remote: a fork's or another remote's
    records are never read (anyone can push there)."""
    from dmm.team.authority import canonical

    out = {}
    local = git.rev_parse(AUDIT_REF)
    if local:
        out[AUDIT_REF] = local
    remote = canonical(git).remote
    theirs = git.rev_parse(f"{REMOTES}{remote}{AUDIT_TAIL}") if remote else None
    if theirs:
        out[f"{REMOTES}{remote}{AUDIT_TAIL}"] = theirs
    return out


def upstream(git: Git) -> str | None:
    """The remote-tracking ref the checked-out branch follows (refs/remotes/origin/main), or
    None. Approvals a teammate pushed there belong to the team's record before you pull."""
    proc = git.run("rev-parse", "--symbolic-full-name", "@{upstream}", check=False)
    ref = proc.stdout.strip()
    return ref if proc.returncode == 0 and ref.startswith(REMOTES) else None


def default_branches(git: Git) -> dict[str, str]:
    """{remote: its default branch's tracking ref} from refs/remotes/<remote>/HEAD."""
    out = {}
    lines = git.out("for-each-ref", "--format=%(refname) %(symref)", REMOTES).splitlines()
    for line in lines:
        ref, _, target = line.partition(" ")
        if ref.endswith("/HEAD") and ref.count("/") == 3 and target.startswith(REMOTES):
            out[ref.split("/")[2]] = target
    return out


def main_revs(git: Git) -> list[str]:
    """The refs whose history holds the approvals dmm reads: the canonical main branch only
    (dmm.team.authority), the canonical remote's and this clone's own copy of it. HEAD, work
    branches, forks and other remotes never are."""
    from dmm.team.authority import authority_revs

    return authority_revs(git)


def merged_refs(git: Git, revs: list[str]) -> set[str]:
    """Refs under dmm/proposals/ (here and on remotes) whose tips ``revs`` contain."""
    if not revs:
        return set()
    args = ["for-each-ref", "--format=%(refname)"] + [f"--merged={r}" for r in revs]
    lines = git.out(*args, PROPOSAL_PREFIX, REMOTES).splitlines()
    return {line for line in lines if line.startswith(PROPOSAL_PREFIX) or PROPOSALS_TAIL in line}


def behind_on(git: Git, commit: str, head: str) -> str | None:
    """The main branch (short name) that holds ``commit`` when ``head`` does not: the commit
    a teammate's proposal was made from, on a main branch this clone has not pulled."""
    if not commit or is_ancestor(git, commit, head):
        return None
    for rev in main_revs(git):
        if is_ancestor(git, commit, rev):
            return rev.removeprefix("refs/remotes/").removeprefix("refs/heads/")
    return None
