"""A linked work tree sees the conflicts the clone knows among its memories (issue 36): its own
cache was never scanned, and its pack held both sides of a known conflict with only "never
scanned", while the main work tree's pack named the conflict. Scan results are shared by the
contents they were computed from (dmm/conflicts/shared.py), never across other contents."""

from __future__ import annotations

import json

from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT, store  # noqa: F401
from tests.conftest import Repo, git

TASK = "upload size ceiling of the gateway"
PAIR = {OLD_LIMIT, NEW_LIMIT}


def _pack(repo) -> dict:
    proc = repo.dmm("query", TASK, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _pairs(pack) -> list[set]:
    return [{m["memory_id"] for m in c["memories"]} for c in pack["conflicts"]]


def _never_scanned(pack) -> bool:
    return any("never been scanned" in w for w in pack["warnings"])


def test_a_linked_work_tree_sees_the_conflicts_of_the_same_memories(store, tmp_path):
    assert store.dmm("conflicts", "scan").returncode == 0
    assert PAIR in _pairs(_pack(store))
    tree = tmp_path / "agent-tree"
    git(store.root, "worktree", "add", "-q", "-b", "agent", str(tree))
    side = Repo(tree)
    pack = _pack(side)
    assert PAIR in _pairs(pack) and not _never_scanned(pack), pack["warnings"]
    # the work tree's own decisions still decide: a dismissal committed there hides it there
    listed = json.loads(side.dmm("conflicts", "list", "--json").stdout)["conflicts"]
    assert PAIR in [{m["memory_id"] for m in c["memories"]} for c in listed]


def test_another_branch_with_other_memories_never_lends_its_result(store, tmp_path):
    """An attacker's work tree (or anyone's) holding other memories keeps scan results named
    by other contents: a work tree adopts only a result of exactly its own memories."""
    tree = tmp_path / "other-tree"
    git(store.root, "worktree", "add", "-q", "-b", "other", str(tree))
    other = Repo(tree)
    limit = other.memory / "project" / "limit_new.md"
    limit.write_text(limit.read_text().replace("50,000,000 bytes", "8 MB"))
    git(tree, "commit", "-qam", "the same ceiling")
    assert other.dmm("conflicts", "scan").returncode == 0  # its result is kept, by its content
    assert _never_scanned(_pack(store))  # the main work tree's memories differ: not adopted
    folder = store.ws.shared_state_dir / "scans"
    assert len(list(folder.glob("*.json"))) == 1
    # and a kept result that is not what a scan makes is never taken in
    kept = next(folder.glob("*.json"))
    tree2 = tmp_path / "third-tree"
    git(store.root, "worktree", "add", "-q", "-b", "third", str(tree2))
    third = Repo(tree2)
    assert third.dmm("conflicts", "scan").returncode == 0
    forged = next(p for p in folder.glob("*.json") if p != kept)
    data = json.loads(forged.read_text())
    for c in data["conflicts"]:
        c["conflict_id"] = "conflict_000000000000"
    forged.write_text(json.dumps(data))
    pack = _pack(store)  # the main work tree has the same memories as the third one
    assert "conflict_000000000000" not in json.dumps(pack)
    assert _never_scanned(pack)
