"""Review on a forge, simulated with git alone: a pushed proposal branch is a pull request, and
merging it (a merge commit, a squash, a rebase) is an approval that dmm reads from the main
branch; a branch's own claims approve nothing."""

from __future__ import annotations

import pytest

from tests.conftest import git


def _forge_merge(team, pid: str, how: str, delete_branch: bool = True) -> str:
    """What a forge does when a maintainer presses merge: in its own clone, as the forge's
    identities, then the branch is removed (as forges offer to). Returns the new main."""
    forge = team.base / "forge"
    if not forge.exists():
        git(team.base, "clone", "-q", str(team.origin), str(forge))
    git(forge, "fetch", "-q", "origin")
    git(forge, "checkout", "-q", "-B", "main", "origin/main")
    branch = f"origin/dmm/proposals/{pid}"
    maintainer = ["-c", "user.name=Maria Maintainer", "-c", "user.email=maria@example.com"]
    web = ["-c", "user.name=GitHub", "-c", "user.email=noreply@github.com"]
    if how == "merge":
        git(forge, *maintainer, "merge", "-q", "--no-ff", branch, "-m",
            f"Merge pull request #7 from agent/dmm/proposals/{pid}")
    elif how == "squash":  # the maintainer edited the message: no trailers left
        git(forge, "merge", "-q", "--squash", branch)
        git(forge, *web, "commit", "-q", "-m", "Add the queue rule (#8)")
    elif how == "rebase":  # each commit replayed onto main, message kept, new committer
        git(forge, *web, "cherry-pick", f"{branch}")
    git(forge, "push", "-q", "origin", "main")
    if delete_branch:
        git(forge, "push", "-q", "origin", "--delete", f"dmm/proposals/{pid}")
    return git(forge, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("how", ["merge", "squash", "rebase"])
@pytest.mark.parametrize("delete_branch", [True, False])
def test_a_forge_merge_is_an_approval_in_the_log_and_leaves_the_queue(team, how,
                                                                       delete_branch):
    agent, reviewer = team.clone("agent"), team.lead
    pid = agent.propose("project/queue.md", "Jobs run on the queue worker")
    agent.sync()
    landed = _forge_merge(team, pid, how, delete_branch)
    for clone in (agent, reviewer):  # the proposer's clone first: it holds the proposal
        clone.sync()
        assert pid not in clone.open_ids(), (clone.name, how)
        listed = [e for e in clone.json("log")["entries"] if e["proposal_id"] == pid]
        events = {e["event"]: e for e in listed}
        assert sorted(e["event"] for e in listed) == ["approved", "proposed"], (clone.name,
                                                                                 listed)
        approval = events["approved"]
        assert approval["via"] == how and approval["commit"] == landed
        assert approval["who"] == ("Maria Maintainer" if how == "merge" else "GitHub")
        closed = clone.json("review", "list", "--status", "approved")["proposals"]
        assert [p["proposal_id"] for p in closed] == [pid]
    # the agent's own branch of the proposal is pruned by its sync, never pushed again
    assert agent.git("branch", "--list", "dmm/proposals/*") == ""
    assert git(team.origin, "for-each-ref", "refs/heads/dmm/proposals/") == ""
    # once pulled, the memory is in the files
    agent.git("pull", "-q", "--ff-only")
    assert (agent.root / ".dmm" / "memory" / "project" / "queue.md").exists()
    team.fsck()


def test_a_commit_that_only_names_a_proposal_approves_nothing(team):
    agent, mallory = team.clone("agent"), team.clone("mallory")
    pid = agent.propose("project/queue.md", "Jobs run on the queue worker")
    agent.sync()
    mallory.git("commit", "-q", "--allow-empty", "-m",
                f"tidy\n\nDmm-Proposal: {pid}\nDmm-Decision: approved\nDmm-Type: create\n"
                "Dmm-Path: project/queue.md\nDmm-Reviewer: maria")
    mallory.git("push", "-q", "origin", "main")
    # and a pushed branch that claims an approval in its own commits
    mallory.git("commit", "-q", "--allow-empty", "-m",
                f"dmm: approved\n\nDmm-Proposal: {pid}\nDmm-Decision: approved")
    mallory.git("push", "-q", "origin", "HEAD:refs/heads/feature/claims")
    mallory.git("reset", "-q", "--hard", "HEAD^")
    team.lead.sync()
    assert pid in team.lead.open_ids()
    approvals = [e for e in team.lead.json("log")["entries"]
                 if e["proposal_id"] == pid and e["event"] == "approved" and e["via"]]
    assert approvals == []


def test_a_proposal_reviewed_on_the_forge_shows_exactly_the_memory_change(team):
    agent = team.clone("agent")
    pid = agent.propose("project/queue.md", "Jobs run on the queue worker")
    agent.git("commit", "-q", "--allow-empty", "-m", "main moves on")  # not pushed
    agent.sync()
    forge = team.base / "reviewer-view"
    git(team.base, "clone", "-q", str(team.origin), str(forge))
    # what a forge shows for the pull request: the branch against the merge base with main
    diff = git(forge, "diff", f"origin/main...origin/dmm/proposals/{pid}", "--stat")
    assert ".dmm/memory/project/queue.md" in diff and "1 file changed" in diff
    message = git(forge, "log", "-1", "--format=%B", f"origin/dmm/proposals/{pid}")
    assert "agent learned it" in message and f"Dmm-Proposal: {pid}" in message


def test_a_squash_is_found_whatever_newer_proposals_were_made_from(team):
    """Squash landings are looked for from where every open proposal was made: a proposal
    made from a newer main (one that holds the squash already) hides nothing."""
    agent, reviewer = team.clone("agent"), team.lead
    squashed = agent.propose("project/queue.md", "Jobs run on the queue worker")
    agent.sync()
    _forge_merge(team, squashed, "squash", delete_branch=False)
    reviewer.git("pull", "-q", "--ff-only")
    newer = reviewer.propose("project/cache.md", "Cache keys include the tenant")
    reviewer.sync()
    assert reviewer.open_ids() == {newer}
    approvals = [e for e in reviewer.json("log")["entries"]
                 if e["proposal_id"] == squashed and e["event"] == "approved"]
    assert [a["via"] for a in approvals] == ["squash"]


def test_a_forge_merge_of_a_proposal_another_clone_closed_is_still_in_the_log(team):
    agent, bob = team.clone("agent"), team.clone("bob")
    pid = agent.propose("project/queue.md", "Jobs run on the queue worker")
    agent.sync()
    bob.sync()
    bob.dmm("review", "withdraw", pid, "--reason", "not needed")  # not synced yet
    landed = _forge_merge(team, pid, "squash")
    bob.sync()
    agent.sync()
    for clone in (agent, bob):
        events = sorted((e["event"], e["commit"] if e["event"] == "approved" else "")
                        for e in clone.json("log")["entries"] if e["proposal_id"] == pid)
        assert events == [("approved", landed), ("proposed", ""), ("withdrawn", "")], clone.name


def test_a_forge_merge_a_pull_moved_off_the_first_parent_line_is_still_the_approval(team):
    """A teammate with a local commit runs `git pull` (a merge whose first parent is their
    own line) and pushes: the forge's merge is now on a side line of main, and still the
    approval, by the person who pressed merge."""
    agent, bob = team.clone("agent"), team.clone("bob")
    pid = agent.propose("project/queue.md", "Jobs run on the queue worker")
    agent.sync()
    bob.git("commit", "-q", "--allow-empty", "-m", "bob's own work")
    landed = _forge_merge(team, pid, "merge")
    bob.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    bob.git("push", "-q", "origin", "main")
    for clone in (agent, team.lead):
        clone.sync()
        [approval] = [e for e in clone.json("log")["entries"]
                      if e["proposal_id"] == pid and e["event"] == "approved"]
        assert (approval["commit"], approval["who"], approval["via"]) == (
            landed, "Maria Maintainer", "merge"), clone.name
