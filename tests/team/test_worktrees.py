"""Agents in git worktrees and in sandbox copies propose, query and check exactly as in the main
clone: each work tree keeps its own cache, and dmm's lock is one for all work trees of a
repository."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

from tests.conftest import git
from tests.team.conftest import Clone, memory


def _worktree(clone: Clone, name: str) -> Clone:
    path = clone.root.parent / name
    clone.git("worktree", "add", "-q", "-b", name, str(path), "main")
    return Clone(path, name)


def test_an_agent_in_a_worktree_proposes_queries_and_sees_decisions(team):
    person = team.lead
    person.propose("project/seed.md", "Retries back off exponentially")
    person.dmm("review", "process", "--all")
    agent = _worktree(person, "agent-1")
    agent.git("merge", "-q", "main")
    pack = agent.json("query", "how do retries back off")
    assert any(m["path"] == "project/seed.md" for m in pack["retrieved"]), pack
    from dmm.workspace import Workspace

    mine = Workspace(agent.root).state_dir  # its own cache, in its own git folder
    assert (mine / "cache.sqlite3").is_file() and mine != Workspace(person.root).state_dir
    assert not (agent.root / ".dmm" / "index").exists()
    pid = agent.propose("project/queue.md", "Jobs run on the queue worker")
    assert person.open_ids() == {pid} == agent.open_ids()  # one queue: the shared refs
    # the team's memories share a sentence, so the reviewer defers them as near-duplicates
    person.dmm("review", "approve", pid, "--force")
    assert (person.root / ".dmm/memory/project/queue.md").exists()
    assert not (agent.root / ".dmm/memory/project/queue.md").exists()  # its branch, untouched
    assert agent.open_ids() == set()
    assert [e["event"] for e in agent.json("log")["entries"] if e["proposal_id"] == pid] == [
        "approved", "proposed"]
    # an approval made in the worktree lands on the worktree's branch only
    other = person.propose("project/cache.md", "Cache keys include the tenant")
    agent.git("merge", "-q", "main")  # the proposal was made from main: bring main in first
    agent.dmm("review", "approve", other, "--force")
    assert (agent.root / ".dmm/memory/project/cache.md").exists()
    assert not (person.root / ".dmm/memory/project/cache.md").exists()
    assert person.git("status", "--porcelain") == "" and agent.git("status", "--porcelain") == ""
    team.fsck()


def test_the_lock_holds_across_worktrees(team):
    person = team.lead
    trees = [person] + [_worktree(person, f"agent-{n}") for n in range(3)]
    common = person.root / ".git"
    for tree in trees[1:]:
        assert (tree.root / ".git").is_file()  # a linked work tree: its git folder is elsewhere

    def propose(n):
        tree = trees[n % len(trees)]
        return tree.dmm("write", "propose", "--path", f"project/p{n}.md", "--reason", "r",
                        "--json", input=memory(f"Rule {n} about caches"), ok=False)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(propose, range(12)))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    listed = person.json("review", "list")["proposals"]
    assert len(listed) == 12 and len({p["memory_id"] for p in listed}) == 12
    assert (common / "dmm.lock").exists()
    assert not any((common / "worktrees" / t.name / "dmm.lock").exists() for t in trees[1:])

    def same_path(n):
        return trees[n].dmm("write", "propose", "--path", "project/same.md", "--reason", "r",
                            input=memory(f"Same path {n}"), ok=False)

    with ThreadPoolExecutor(4) as pool:
        same = list(pool.map(same_path, range(4)))
    assert sum(r.returncode == 0 for r in same) == 1
    assert all("already open" in r.stderr for r in same if r.returncode)
    # two approvals racing from two work trees on one branch? each tree has its own branch;
    # two trees approving proposals at once both land, on their own branches
    ids = [p["proposal_id"] for p in listed]
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda n: trees[n + 1].dmm("review", "approve", ids[n], ok=False),
                             range(2)))
    assert all(r.returncode == 0 for r in done), [r.stderr for r in done]
    team.fsck()


def test_a_sandbox_copy_of_a_clone_works_and_syncs(team, tmp_path):
    """A container started from a copy of the clone (same config, same objects): its new ids
    never collide with the original's, and what it proposes reaches the team."""
    person = team.lead
    sandbox_root = tmp_path / "sandbox"
    shutil.copytree(person.root, sandbox_root, symlinks=True)
    sandbox = Clone(sandbox_root, "sandbox")
    mine = [person.propose(f"project/a{n}.md", f"Host rule {n} about deploys") for n in range(3)]
    theirs = [sandbox.propose(f"project/b{n}.md", f"Sandbox rule {n} about builds")
              for n in range(3)]
    sandbox.sync()
    person.sync()
    listed = person.json("review", "list")["proposals"]
    assert {p["proposal_id"] for p in listed} == set(mine + theirs)
    assert len({p["memory_id"] for p in listed}) == 6
    assert git(team.origin, "for-each-ref", "--count=100", "--format=%(refname)",
               "refs/heads/dmm/proposals/").count("\n") == 6
