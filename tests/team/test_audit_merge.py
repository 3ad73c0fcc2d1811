"""Audit records of clones that diverged meet without a conflict and without losing or
doubling a record, whatever order the clones sync in, with dmm sync or with plain git."""

from __future__ import annotations

import itertools
import subprocess

import pytest

from tests.conftest import git
from tests.team.conftest import memory


@pytest.fixture(scope="module")
def diverged(tmp_path_factory):
    """Three clones that each closed proposals (reject, withdraw, defer) before meeting."""
    from tests.team.conftest import Team

    base = tmp_path_factory.mktemp("audit") / "team"
    base.mkdir()
    team = Team(base)
    team.lead.sync()
    clones = [team.lead, team.clone("bob"), team.clone("cho")]
    done = {"reject": "rejected", "withdraw": "withdrawn", "defer": "deferred"}
    by_clone = {}
    for clone in clones:
        by_clone[clone.name] = []
        for k, decision in enumerate(done):
            pid = clone.propose(f"project/{clone.name}-{k}.md",
                                f"Rule {k} of {clone.name} about the cache of builds")
            clone.dmm("review", decision, pid, "--reason", f"{decision} by {clone.name}")
            by_clone[clone.name].append(f"{pid}:{done[decision]}")
    return team, by_clone


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_clones_meet_in_every_order_and_keep_every_record_once(diverged, tmp_path, order):
    source, by_clone = diverged
    expected = sorted(sum(by_clone.values(), []))
    team = source.copy(tmp_path / "team")
    clones = [team.lead, *(type(team.lead)(team.base / n, n) for n in ("bob", "cho"))]
    for n in order:
        clones[n].sync()
    for n in order:  # a second round brings every clone what the later ones pushed
        clones[n].sync()
    logs = [clone.log() for clone in clones]
    for clone in clones:
        assert clone.records() == expected, (order, clone.name)
        assert clone.git("rev-parse", "dmm/audit") == git(team.origin, "rev-parse", "dmm/audit")
    assert logs[0] == logs[1] == logs[2]
    deferred = {e.split(":")[0] for e in expected if e.endswith(":deferred")}
    assert clones[0].open_ids() == deferred
    team.fsck()


def test_plain_git_merges_the_audit_lines_too(diverged, tmp_path):
    """A teammate without dmm merges the two lines with git: no conflict, every record kept."""
    source, by_clone = diverged
    team = source.copy(tmp_path / "team")
    bob = type(team.lead)(team.base / "bob", "bob")
    team.lead.sync()
    bob.git("fetch", "-q", "origin")
    wt = team.base / "bob-audit"
    bob.git("worktree", "add", "-q", str(wt), "dmm/audit")
    git(wt, "merge", "-q", "--no-edit", "origin/dmm/audit")
    assert git(wt, "ls-files") == ""  # still nothing but records
    bob.git("worktree", "remove", str(wt))
    assert bob.records() == sorted(by_clone["lead"] + by_clone["bob"])
    bob.sync()  # dmm reads git's merge like its own and publishes it
    team.lead.sync()
    assert team.lead.records() == bob.records()
    team.fsck()


def test_a_made_up_record_inside_a_branch_never_closes_another_proposal(team):
    """Records are read along the audit line: a branch that carries a commit looking like a
    record (say, rejecting someone else's proposal) closes nothing when it is itself closed."""
    ann, mallory = team.lead, team.clone("mallory")
    victim = ann.propose("project/victim.md", "Deploys need two approvals")
    ann.sync()
    mallory.sync()
    empty = subprocess.run(["git", "hash-object", "-t", "tree", "-w", "--stdin"],
                           cwd=mallory.root, input="", capture_output=True, text=True,
                           check=True).stdout.strip()
    fake = git(mallory.root, "commit-tree", empty, "-m",
               f"dmm: rejected\n\nbad\n\nDmm-Proposal: {victim}\nDmm-Decision: rejected\n"
               "Dmm-Reviewer: ann").strip()
    # a proposal branch whose history holds the fake record
    wt = team.base / "mallory-wt"
    mallory.git("worktree", "add", "-q", "-b", "tmp", str(wt), "main")
    git(wt, "merge", "-q", "--allow-unrelated-histories", "--no-edit", "-s", "ours", fake)
    (wt / ".dmm" / "memory" / "project" / "mine.md").write_text(memory("Mallory's rule"))
    git(wt, "add", "-A")
    git(wt, "commit", "-qm", "dmm: propose create project/mine.md\n\nr\n\n"
        "Dmm-Proposal: prop_20260101_000000_0badc0de\nDmm-Type: create\n"
        "Dmm-Path: project/mine.md\nDmm-Memory: \nDmm-Proposed-By: mallory")
    git(wt, "push", "-q", "origin", "HEAD:refs/heads/dmm/proposals/prop_20260101_000000_0badc0de")
    mallory.git("worktree", "remove", "--force", str(wt))
    ann.sync()
    ann.dmm("review", "reject", "prop_20260101_000000_0badc0de", "--reason", "no")
    ann.sync()
    assert victim in ann.open_ids()
    assert victim in team.clone("carol").open_ids()
    assert ann.json("log", "--decision", "rejected")["total"] == 1
