"""`dmm sync`: bring a clone's view of the team's proposals and records up to date, and publish
its own.

One round, repeated (at most MAX_ROUNDS, with a random pause growing each time) when a
teammate pushed in between:

1. fetch ``dmm/*`` and the remote's default branch into ``refs/remotes/<remote>/`` (git's own
   remote-tracking refs: nothing of this clone's branches or files changes);
2. join the audit lines: this clone's ``dmm/audit`` moves forward to the remote's when it is
   behind, and when both gained records a merge commit of the two (an empty tree: records
   never conflict) is made, so no record of either side is lost;
3. prune this clone's proposal branches that are decided (approved on a main branch, closed by
   a record of any clone); pull in a teammate's reviewer fixes on a proposal made here;
4. push, in one atomic push that is never forced: this clone's open proposals that the remote
   lacks or is behind on, the audit line, and the removal of a remote proposal branch whose
   decision the remote holds after this push (a lease on the tip it had: a branch someone
   moved meanwhile is left alone). A push refused because the remote moved starts the round
   again.

The checked-out branch is the user's: sync never moves, merges, pushes or rebases it; it says
how far it is from its upstream, and `git pull` / `git push` stay the user's to run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dmm.errors import GitError, InvalidInputError
from dmm.fsutil import file_lock
from dmm.gitrepo import Git
from dmm.proposals.model import AUDIT_REF, PROPOSAL_ID, PROPOSAL_PREFIX
from dmm.team import refs as team_refs
from dmm.team.records import chain, empty_tree, is_decision, is_record, walk

MAX_ROUNDS = 12


@dataclass
class SyncReport:
    remote: str
    dry_run: bool = False
    fetched: dict = field(default_factory=lambda: {"new_proposals": [], "gone_proposals": [],
                                                   "new_records": 0, "branches": []})
    joined: dict | None = None  # the audit merge made: {"commit", "ours", "theirs"}
    pushed: list[dict] = field(default_factory=list)  # {"ref", "old", "new", "what"}
    # with --dry-run, what a real sync would push (as ``pushed``; "new" is "" for a commit
    # the sync would make first: a join or a record of a landing)
    would_push: list[dict] = field(default_factory=list)
    not_pushed: list[dict] = field(default_factory=list)  # {"ref", "reason"}
    pruned: list[dict] = field(default_factory=list)  # {"proposal_id", "decision"}
    kept: list[dict] = field(default_factory=list)  # decided, not pruned: {..., "reason"}
    updated: list[dict] = field(default_factory=list)  # local proposal branches fast-forwarded
    decided_twice: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # why sync published less than it could
    branch: dict | None = None  # {"branch", "upstream", "ahead", "behind"}
    rounds: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def choose_remote(git: Git, name: str | None) -> str:
    remotes = git.out("remote").split()
    if name:
        if name not in remotes:
            raise InvalidInputError(f"no remote named {name!r}",
                                    hint="`git remote -v` lists them")
        return name
    up = team_refs.upstream(git)
    if up and up.split("/")[2] in remotes:
        return up.split("/")[2]
    if "origin" in remotes:
        return "origin"
    if len(remotes) == 1:
        return remotes[0]
    raise InvalidInputError("this clone has no remote to sync with" if not remotes else
                            f"several remotes ({', '.join(remotes)}): say which with --remote",
                            hint="git remote add origin URL")


def _snapshot(git: Git, remote: str) -> dict[str, str]:
    return git.refs(f"refs/remotes/{remote}/dmm/")


def _fetch(git: Git, remote: str) -> None:
    specs = [f"+refs/heads/dmm/*:refs/remotes/{remote}/dmm/*"]
    default = team_refs.default_branches(git).get(remote)
    if default is None:
        git.run("remote", "set-head", remote, "--auto", check=False)
        default = team_refs.default_branches(git).get(remote)
    up = team_refs.upstream(git)
    from dmm.team.authority import canonical

    main = canonical(git)
    mine = main.remote_ref if main.remote == remote else None
    for ref in {default, up, mine}:
        if ref and ref.startswith(f"refs/remotes/{remote}/"):
            branch = ref[len(f"refs/remotes/{remote}/"):]
            specs.append(f"+refs/heads/{branch}:{ref}")
    proc = git.run("fetch", "--prune", "--no-tags", "--quiet", remote, *specs, check=False)
    if proc.returncode != 0:
        raise GitError(f"git fetch {remote} failed: {proc.stderr.strip()}",
                       hint="check the remote's address and your access (git remote -v)")


def sync(git: Git, remote: str | None = None, dry_run: bool = False) -> SyncReport:
    remote = choose_remote(git, remote)
    report = SyncReport(remote, dry_run)
    seen = _snapshot(git, remote)
    branch_before = {r: git.rev_parse(r) for r in team_refs.main_revs(git)
                     if r.startswith("refs/remotes/")}
    known = set(seen)  # remote proposal branches this clone had seen
    for _ in range(MAX_ROUNDS):
        report.rounds += 1
        _fetch(git, remote)
        now = _snapshot(git, remote)
        _describe_fetch(git, remote, report, seen, now)
        with file_lock(git.common_dir() / "dmm.lock"):
            plan = _plan(git, remote, report, known, dry_run,
                         seen.get(f"refs/remotes/{remote}/dmm/audit"))
        if dry_run:
            report.would_push = _as_pushed(plan)
            break
        if not plan:
            break
        if _push(git, remote, plan, report):
            break
        _back_off(report.rounds)
        seen = _snapshot(git, remote)
        known |= set(seen)
    else:
        raise GitError(f"{remote} kept moving while dmm pushed: run dmm sync again")
    for ref, old in branch_before.items():
        new = git.rev_parse(ref)
        if new and new != old:
            count = int(git.out("rev-list", "--count", new, *([f"^{old}"] if old else [])))
            report.fetched["branches"].append({"ref": ref.removeprefix("refs/remotes/"),
                                               "old": old, "new": new, "commits": count})
    report.branch = _branch_status(git)
    return report


def _back_off(rounds: int) -> None:
    """Wait a little, more each round and at random, so that clones racing to push the same
    audit line stop colliding."""
    import random
    import time

    time.sleep(random.uniform(0.0, 0.1 * min(rounds, 5)))


def _plan(git: Git, remote: str, report: SyncReport, known: set[str], dry_run: bool,
          seen_audit: str | None = None) -> list[tuple[str, str | None, str | None, str]]:
    """Update this clone's refs (unless ``dry_run``) and return the pushes to make:
    (remote ref, new sha or None to delete, expected sha on the remote or None, what)."""
    from dmm.team.authority import history_gap, publishing_ref

    plan = []
    prefix = f"refs/remotes/{remote}/"
    theirs = git.rev_parse(prefix + "dmm/audit")
    audit_tip = _join_audit(git, remote, theirs, report, dry_run, seen_audit)
    recorded = bool(report.joined)  # a --dry-run's audit line would gain a commit
    closed = _closing_records(git, report)
    mains = team_refs.main_revs(git)
    merged = team_refs.merged_refs(git, mains)
    # what this sync publishes (an inferred record, a branch removed on the remote) is derived
    # from the canonical remote's branch alone, in a clone with its whole history
    remote_main, why_not = publishing_ref(git, remote)
    if why_not and why_not not in report.warnings:  # said once, though _plan runs per round
        report.warnings.append(why_not)
    if remote_main and (history_gap(git) or not git.rev_parse(remote_main)):
        remote_main = None
    merged_there = team_refs.merged_refs(git, [remote_main]) if remote_main else set()
    remote_tips = {r.proposal_id: r for r in team_refs.all_proposal_refs(git)
                   if not isinstance(r, tuple) and r.remote == remote}
    landed = _squashed_or_rebased(git, mains)
    keep = _kept_branches(git)
    mine = git.refs(PROPOSAL_PREFIX)
    for ref in _only_copies(git, mine):
        keep.setdefault(ref, "holds commits no other branch has: keep them (git branch -m) or "
                             "delete it yourself")
    for ref, tip in mine.items():
        pid = ref[len(PROPOSAL_PREFIX):]
        if not PROPOSAL_ID.fullmatch(pid):
            report.not_pushed.append({"ref": ref, "reason": "not a proposal id"})
            continue
        decided = "approved" if ref in merged or pid in landed else closed.get(pid)
        if decided and decided != "deferred":
            record = pid in landed and ref not in merged and pid not in closed \
                and remote_main in landed[pid][2]
            if record and not dry_run:
                _landing_record(git, *landed[pid][:2])  # keeps it in the record
                closed[pid] = "approved"
            recorded |= record
            why = keep.get(ref)
            if why and record and why.startswith("holds commits"):
                why = None  # the record just written (or about to be) keeps them reachable
            if why:
                report.kept.append({"proposal_id": pid, "decision": decided, "reason": why})
                continue
            if not dry_run:
                git.update_refs([(ref, None, tip)])
            report.pruned.append({"proposal_id": pid, "decision": decided})
            continue
        there = remote_tips.get(pid)
        if there is None:
            if prefix + ref[len("refs/heads/"):] in known:
                report.not_pushed.append({"ref": ref, "reason": f"removed on {remote} by "
                                          "someone else: not pushed again"})
                continue
            plan.append((ref, tip, None, f"proposal {pid}"))
        elif there.tip == tip:
            continue
        elif team_refs.is_ancestor(git, there.tip, tip):
            plan.append((ref, tip, there.tip, f"proposal {pid} (reviewer fixes)"))
        elif team_refs.is_ancestor(git, tip, there.tip):
            if not dry_run:
                git.update_refs([(ref, there.tip, tip)])
            report.updated.append({"proposal_id": pid, "old": tip, "new": there.tip})
        else:
            report.not_pushed.append({"ref": ref, "reason": f"{remote} holds another version "
                                      "of this proposal: dmm never overwrites it"})
    for pid, there in remote_tips.items():
        squashed = landed.get(pid)
        if there.ref in merged_there or (squashed and remote_main
                                         and remote_main in squashed[2]):
            if squashed and there.ref not in merged_there and pid not in closed:
                recorded = True
                if not dry_run:
                    # the branch goes: the record keeps the proposal in everyone's log
                    _landing_record(git, *squashed[:2])
                    closed[pid] = "approved"
            plan.append((f"{PROPOSAL_PREFIX}{pid}", None, there.tip, f"proposal {pid} "
                         f"(approved on {remote})"))
        elif closed.get(pid) in ("rejected", "withdrawn"):
            plan.append((f"{PROPOSAL_PREFIX}{pid}", None, there.tip,
                         f"proposal {pid} ({closed[pid]})"))
    ours = git.rev_parse(AUDIT_REF)
    if dry_run:  # the line as the real sync would push it: after its join and records
        ours = "" if recorded else audit_tip
    if ours is not None and ours != theirs:
        plan.insert(0, ("refs/heads/dmm/audit", ours, theirs, "audit records"))
    return plan


def _landing_record(git: Git, proposal, landing) -> None:
    """An approval record for a proposal squashed or rebased onto a main branch: the landed
    commit may not name it (an edited squash message) and the forge removed its branch, so
    without this record the team's log would lose the proposal."""
    from dmm.gitrepo import commit_message

    audit = git.rev_parse(AUDIT_REF)
    pairs = [("Dmm-Proposal", proposal.proposal_id), ("Dmm-Decision", "approved"),
             ("Dmm-Type", proposal.type), ("Dmm-Path", proposal.path),
             ("Dmm-Memory", proposal.memory_id), ("Dmm-Reviewer", landing.who or "unknown"),
             ("Dmm-Landed", landing.commit), ("Dmm-Via", landing.via)]
    message = commit_message(f"dmm: approved {proposal.type} {proposal.path} "
                             f"({proposal.proposal_id}) by a {landing.via}", "", pairs)
    record = git.commit_tree(git.empty_tree(), ([audit] if audit else []) + [proposal.commit],
                             message)
    if not git.update_refs([(AUDIT_REF, record, audit)]):
        raise GitError("dmm/audit moved while recording a landing: run dmm sync again")


def _squashed_or_rebased(git: Git, mains: list[str]) -> dict[str, tuple]:
    """{proposal id: (proposal, landing, main branches it landed on)} for this clone's and the
    remote's open proposals that a squash or a rebase put on a main branch."""
    from dmm.proposals.queue import unmerged
    from dmm.team.landed import content_landings

    waiting = {p.proposal_id: p for p in unmerged(git)}
    out: dict[str, tuple] = {}
    for rev in mains if waiting else []:
        for pid, landing in content_landings(git, [rev], list(waiting.values())).items():
            proposal, first, revs = out.get(pid, (waiting[pid], landing, set()))
            out[pid] = (proposal, first, revs | {rev})
    return out


def _join_audit(git: Git, remote: str, theirs: str | None, report: SyncReport,
                dry_run: bool, seen: str | None = None) -> str | None:
    """This clone's audit line after meeting the remote's: its tip. A remote line that hides
    records (of this clone's line it descends from, or of the remote's own line as this clone
    last saw it) is refused: the audit line is append-only as dmm joins it."""
    ours = git.rev_parse(AUDIT_REF)
    if theirs is None or ours == theirs:
        return ours
    ahead = ours is None or team_refs.is_ancestor(git, ours, theirs)
    _refuse_dropping(git, remote, theirs, ours if ahead else None, seen)
    if ahead:
        if not dry_run:
            git.update_refs([(AUDIT_REF, theirs, ours)])
        return theirs
    if team_refs.is_ancestor(git, theirs, ours):
        return ours
    message = (f"dmm: join the audit records of {remote}\n\n"
               "Both lines gained records; this commit keeps every one of them.\n")
    report.joined = {"ours": ours, "theirs": theirs, "commit": None}
    if dry_run:
        return ours
    merge = git.commit_tree(git.empty_tree(), [ours, theirs], message)
    if not git.update_refs([(AUDIT_REF, merge, ours)]):
        raise GitError("dmm/audit moved while joining the records: run dmm sync again")
    report.joined["commit"] = merge
    return merge


def _refuse_dropping(git: Git, remote: str, theirs: str, ours: str | None,
                     seen: str | None) -> None:
    """Raise when the remote's audit line ``theirs`` hides a record of ``ours`` (the line it
    would fast-forward) or of ``seen`` (the remote's line at the last fetch)."""
    from dmm.shellcmd import command
    from dmm.team.records import dropped

    lost = dropped(git, ours, theirs) | (dropped(git, seen, theirs) if seen != ours else set())
    if lost:
        raise GitError(
            f"{remote}'s dmm/audit drops {len(lost)} record(s) this clone has seen (its history "
            f"was rewritten or hides earlier decisions): refused. This clone's dmm/audit keeps "
            f"every record and nothing was pushed",
            hint=f"ask whoever can push to {remote} to restore it from a clone that has every "
                 "record: " + command("git", "push", f"--force-with-lease=dmm/audit:{theirs}",
                                      remote, "dmm/audit"))


def _kept_branches(git: Git) -> dict[str, str]:
    """{ref: why} of the branches sync never deletes: checked out in a work tree."""
    out = {}
    for line in git.out("worktree", "list", "--porcelain", check=False).splitlines():
        if line.startswith("branch "):
            out[line[len("branch "):]] = "checked out in a work tree: switch away to prune it"
    return out


def _only_copies(git: Git, tips: dict[str, str]) -> set[str]:
    """The proposal branches of ``tips`` ({ref: tip}) holding commits that no other ref has:
    whose tip no ref outside this clone's dmm/proposals/ reaches (one git call)."""
    if not tips:
        return set()
    proc = git.run("rev-list", "--stdin", "--not", f"--exclude={PROPOSAL_PREFIX}*", "--all",
                   input="".join(f"{tip}\n" for tip in set(tips.values())), check=False)
    alone = set(proc.stdout.split())
    return {ref for ref, tip in tips.items() if tip in alone}


def _closing_records(git: Git, report: SyncReport) -> dict[str, str]:
    """{proposal id: its decision} from the records of this clone's audit line (after the
    join); proposals closed in two clones before they met are reported."""
    tip = git.rev_parse(AUDIT_REF)
    if tip is None:
        return {}
    mains = team_refs.main_revs(git)
    nodes = {n.commit.sha: n for n in walk(git, tip, *(["--not", *mains] if mains else []))}
    out: dict[str, str] = {}
    seen: dict[str, list[str]] = {}
    decisions = [n for n in chain(nodes, [tip], empty_tree(git)) if is_decision(n.commit)]
    for node in sorted(decisions, key=lambda n: n.time):
        t = node.commit.trailers
        pid, decision = t.get("Dmm-Proposal", ""), t.get("Dmm-Decision", "")
        if decision != "deferred":
            seen.setdefault(pid, []).append(decision)
        if out.get(pid) in (None, "deferred"):
            out[pid] = decision  # closed by the first; a deferral waits for a close
    report.decided_twice = [{"proposal_id": pid, "decisions": ds}
                            for pid, ds in sorted(seen.items()) if len(ds) > 1]
    return out


def _push(git: Git, remote: str, plan: list, report: SyncReport) -> bool:
    """One atomic push of ``plan``; False when the remote refused because it moved."""
    args = ["push", "--atomic", "--porcelain", "--no-verify", remote]
    for ref, new, expected, _what in plan:
        if new is None:
            args.append(f"--force-with-lease={ref}:{expected}")  # a delete, only of that tip
    args += [f"{new}:{ref}" if new else f":{ref}" for ref, new, _e, _w in plan]
    proc = git.run(*args, check=False)
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        if "rejected" in text or "stale info" in text or "fetch first" in text \
                or "non-fast-forward" in text or "atomic" in text:
            return False
        raise GitError(f"git push {remote} failed: {proc.stderr.strip()}",
                       hint="check your access to the remote (git remote -v)")
    report.pushed += _as_pushed(plan)
    return True


def _as_pushed(plan: list) -> list[dict]:
    """A plan of pushes (see _plan) as the report's ``pushed`` shows them."""
    return [{"ref": ref.removeprefix("refs/heads/"), "old": expected, "new": new, "what": what}
            for ref, new, expected, what in plan]


def _describe_fetch(git: Git, remote: str, report: SyncReport, before: dict[str, str],
                    after: dict[str, str]) -> None:
    """What one fetch brought: proposals that appeared or went, records that arrived."""
    tail = f"refs/remotes/{remote}/dmm/proposals/"

    def pids(refs) -> set[str]:
        return {r[len(tail):] for r in refs if r.startswith(tail)}

    report.fetched["new_proposals"] += sorted(pids(after) - pids(before))
    report.fetched["gone_proposals"] += sorted(pids(before) - pids(after))
    audit = f"refs/remotes/{remote}/dmm/audit"
    old, new = before.get(audit), after.get(audit)
    if new and new != old:
        nodes = walk(git, new, "--not", *([old] if old else []), *team_refs.main_revs(git))
        empty = empty_tree(git)
        report.fetched["new_records"] += sum(1 for n in nodes
                                             if is_record(n.commit) and n.tree == empty)


def _branch_status(git: Git) -> dict | None:
    branch, up = git.current_branch(), team_refs.upstream(git)
    if branch is None or up is None or not git.rev_parse(up):
        return None
    ahead, behind = git.out("rev-list", "--left-right", "--count", f"HEAD...{up}").split()
    return {"branch": branch.removeprefix("refs/heads/"), "upstream":
            up.removeprefix("refs/remotes/"), "ahead": int(ahead), "behind": int(behind)}
