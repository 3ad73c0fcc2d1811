"""Proposals that landed on the canonical main branch without dmm: merged on a forge (a merge
commit, a squash or a rebase) or by a person with git (``git merge``, a fast-forward, a
cherry-pick).

A forge merge is an approval only where git shows it on the canonical main branch
(dmm.team.authority: the canonical remote's branch and this clone's own copy of it; never
HEAD, a work branch, a fork or another remote): only someone allowed to change that branch
put it there. An "approved" record on dmm/audit is no approval either: the landing is looked
for here, from the proposal commit the record keeps reachable. A branch's
own claims decide nothing, so every landing is checked against the proposal itself:

- merge: the proposal's commit is in the main branch's history (its tip was merged); the
  approval is the first-parent commit that brought it in, by that commit's author (the person
  who pressed merge, on a forge);
- squash, rebase, cherry-pick: a commit in the main branch's history wrote exactly the
  proposal's content at the proposal's path (the same blob); trailers in its message only say
  which of those it was (a rebase keeps them, a squash with an edited message has none).

A commit that merely mentions ``Dmm-Proposal: X`` without writing X's content approves
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from dmm.gitrepo import Git, trailers
from dmm.proposals.model import MEMORY_ROOT


@dataclass(frozen=True)
class Landing:
    proposal_id: str
    commit: str  # the commit that landed it on the main branch
    via: str  # merge | fast-forward | rebase | squash
    who: str  # the merge commit's author, or the landed commit's committer
    date: str


def _describe(git: Git, shas: list[str]) -> dict[str, tuple[str, str, str, str, str]]:
    """{sha: (author, author date, committer, committer date, message)} in one git call."""
    if not shas:
        return {}
    proc = git.run("log", "--no-walk=unsorted", "--format=%H%x1f%an%x1f%aI%x1f%cn%x1f%cI%x1f%B%x1e",
                   *dict.fromkeys(shas), check=False)
    out = {}
    for record in proc.stdout.split("\x1e"):
        record = record.strip("\n")
        if record:
            sha, an, ad, cn, cd, message = record.split("\x1f", 5)
            out[sha] = (an, ad, cn, cd, message)
    return out


def merge_landings(git: Git, revs: list[str], commits: dict[str, list[str]],
                   ) -> dict[str, Landing]:
    """{proposal id: Landing} for proposals whose commits (``commits``: id -> the proposal's
    commit and its fix commits) are in the history of ``revs``: the first-parent commit of the
    first rev that brought each in."""
    wanted = {sha: pid for pid, shas in commits.items() for sha in shas}
    found: dict[str, tuple[str, str]] = {}  # pid -> (landing commit, via)
    # a forge merges on the remote's branch: its first-parent line names the merge itself,
    # where a clone's own line may show the `git pull` that brought it in
    ordered = sorted(revs, key=lambda r: not r.startswith("refs/remotes/"))
    for rev in ordered:
        if len(found) == len(commits):
            break
        chain = []
        for line in git.out("rev-list", "--first-parent", "--parents", rev).splitlines():
            sha, *parents = line.split()
            chain.append(sha)
            if sha in wanted and wanted[sha] not in found:
                found[wanted[sha]] = (sha, "fast-forward")
            for parent in parents[1:]:
                if parent in wanted and wanted[parent] not in found:
                    found[wanted[parent]] = (sha, "merge")
        for pid, shas in commits.items():
            if pid not in found:  # brought in deeper: by a merge on a side line
                landing = _merged_by(git, rev, shas) or _first_containing(git, chain, shas[0])
                if landing:
                    found[pid] = (landing, "merge")
    info = _describe(git, [sha for sha, _ in found.values()])
    out = {}
    for pid, (sha, via) in found.items():
        an, ad, cn, cd, _message = info.get(sha, ("", "", "", "", ""))
        if via == "merge":
            who, date = an, ad
        elif (an, ad) != (cn, cd):  # replayed onto the branch by someone else: a rebase
            via, who, date = "rebase", cn, cd
        else:  # the branch was moved to the proposal itself: git does not record by whom
            who, date = "", cd
        out[pid] = Landing(pid, sha, via, who, date)
    return out


def _merged_by(git: Git, rev: str, shas: list[str]) -> str | None:
    """The merge commit in ``rev``'s history whose later parent is one of ``shas`` (a forge's
    merge that a `git pull` then moved off the first-parent line), oldest first."""
    for sha in shas:
        out = git.out("rev-list", "--merges", "--parents", "--reverse", "--ancestry-path",
                      f"{sha}..{rev}", check=False)
        for line in out.splitlines():
            merge, _first, *later = line.split()
            if sha in later:
                return merge
    return None


def _first_containing(git: Git, chain: list[str], sha: str) -> str | None:
    """The oldest commit of a first-parent ``chain`` (newest first) that contains ``sha``:
    containment only grows along the chain, so a binary search asks git a few times."""
    from dmm.team.refs import is_ancestor

    if not chain or not is_ancestor(git, sha, chain[0]):
        return None
    lo, hi = 0, len(chain) - 1  # chain[lo] contains it; find the largest such index
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if is_ancestor(git, sha, chain[mid]):
            lo = mid
        else:
            hi = mid - 1
    return chain[lo]


def content_landings(git: Git, revs: list[str], proposals: list) -> dict[str, Landing]:
    """{proposal id: Landing} for ``proposals`` (open ones: their commits are not in the
    main branch's history) whose content a commit of ``revs`` wrote: squashed, rebased or
    cherry-picked onto it."""
    if not proposals or not revs:
        return {}
    lookups = "".join(f"{p.commit}:{MEMORY_ROOT}{p.new_path}\n" for p in proposals)
    answers = git.run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                      input=lookups).stdout.splitlines()
    blobs = {}
    for proposal, answer in zip(proposals, answers):
        sha, _, kind = answer.partition(" ")
        if kind == "blob":
            blobs[(MEMORY_ROOT + proposal.new_path, sha)] = proposal
    if not blobs:
        return {}
    # the walk starts where every proposal's base is: a commit reachable from one newer base
    # may still be where an older proposal landed
    bases = sorted({p.base for p in proposals if p.base})
    common = git.out("merge-base", "--octopus", *bases, check=False).split() if bases else []
    proc = git.run("log", "--format=%x1e%H", "--raw", "--no-abbrev", "--no-renames", "-z",
                   *revs, *(["--not", *common] if common else []), "--", MEMORY_ROOT,
                   check=False)
    wrote: dict[tuple[str, str], str] = {}
    for chunk in proc.stdout.split("\x1e")[1:]:
        fields = chunk.strip("\n\0").split("\0")
        sha = fields[0].strip()
        for meta, path in zip(fields[1::2], fields[2::2]):
            parts = meta.split()
            if len(parts) >= 4 and (path, parts[3]) in blobs:
                wrote[(path, parts[3])] = sha  # newest first: the last one seen is the oldest
    if not wrote:
        return {}
    info = _describe(git, list(wrote.values()))
    out = {}
    for key, sha in wrote.items():
        proposal = blobs[key]
        an, ad, cn, cd, message = info.get(sha, ("", "", "", "", ""))
        via = "rebase" if trailers(message).get("Dmm-Proposal") == proposal.proposal_id \
            else "squash"
        out[proposal.proposal_id] = Landing(proposal.proposal_id, sha, via, cn, cd)
    return out
