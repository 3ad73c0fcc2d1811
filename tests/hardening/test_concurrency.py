"""Concurrency and crashes (items 5, 6, 7 and 9): a user's `git commit` racing a landing, a
kill at any step of a landing, parallel proposals and parallel resolutions."""

from __future__ import annotations

import json
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT, cid
from tests.conftest import git
from tests.hardening.faults import kill_at, memory, start, wait_for

pytestmark = pytest.mark.slow


def _proposal(store, n: int = 1) -> str:
    proc = store.dmm("write", "propose", "--path", f"project/rule_{n}.md", "--reason", "r",
                     input=memory(f"mem_2026_05_01_{n:03d}", f"Rule number {n} for payments"))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _tracked(store, rev: str = "HEAD") -> set[str]:
    return set(git(store.root, "ls-tree", "-r", "--name-only", rev).split())


def test_a_user_commit_racing_an_approval_never_reverts_it(store, slow_git, tmp_path):
    pid = _proposal(store)
    (store.root / "notes.txt").write_text("the user's edit\n")
    marker = tmp_path / "moved"
    # the branch has moved; dmm sleeps before syncing the index
    proc = start("review", "approve", pid, cwd=store.root,
                 env=slow_git.env("read-tree -m -u", marker, seconds=3))
    wait_for(marker)
    user = subprocess.run(["git", "commit", "-qam", "user commit"], cwd=store.root,
                          capture_output=True, text=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    if user.returncode != 0:
        assert "index.lock" in user.stderr  # git refused while dmm held its lock
        user = subprocess.run(["git", "commit", "-qam", "user commit"], cwd=store.root,
                              capture_output=True, text=True)
        assert user.returncode == 0, user.stderr
    assert ".dmm/memory/project/rule_1.md" in _tracked(store)
    assert git(store.root, "status", "--porcelain") == ""
    assert git(store.root, "show", "HEAD:notes.txt") == "the user's edit\n"


# the git steps of a landing, in order, as the slow-git wrapper sees their arguments
LANDING_STEPS = ["update-index -q --refresh", "read-tree -m -n -u", "update-ref --stdin",
                 "read-tree -m -u"]


@pytest.mark.parametrize("command", ["approve", "resolve"])
@pytest.mark.parametrize("sig, step", [(signal.SIGKILL, s) for s in LANDING_STEPS]
                         + [(signal.SIGTERM, "read-tree -m -u")])
def test_a_kill_at_any_step_of_a_landing_is_repaired_by_the_next_command(
        store, slow_git, tmp_path, command, sig, step):
    if command == "approve":
        args = ("review", "approve", _proposal(store))
        landed = ".dmm/memory/project/rule_1.md"
    else:
        args = ("conflicts", "resolve", cid(store, OLD_LIMIT, NEW_LIMIT), "--action",
                "deprecate", "--target", OLD_LIMIT, "--reason", "newer")
        landed = ".dmm/memory/deprecated/project/limit_old.md"
    head = git(store.root, "rev-parse", "HEAD").strip()
    done = kill_at(slow_git, step, *args, cwd=store.root, tmp=tmp_path, sig=sig)
    assert done.returncode != 0
    moved = git(store.root, "rev-parse", "HEAD").strip() != head
    assert moved == (step == "read-tree -m -u" and sig == signal.SIGKILL)
    if moved:  # the kill came after the ref moved: the next command must finish the landing
        assert landed in _tracked(store)
        status = store.dmm("status")
        assert status.returncode == 0, status.stderr
        assert "finished a landing that was interrupted" in status.stderr
    assert not (store.root / ".git" / "index.lock").exists() or not moved
    store.dmm("status")
    assert not (store.root / ".git" / "index.lock").exists()
    assert git(store.root, "status", "--porcelain") == ""
    # the user's next commit keeps whatever landed
    (store.root / "notes.txt").write_text("later\n")
    git(store.root, "commit", "-qam", "user")
    assert (landed in _tracked(store)) == moved
    assert (landed in _tracked(store)) == (store.root / landed).exists()
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=store.root, capture_output=True,
                          text=True)
    assert fsck.returncode == 0, fsck.stderr


def test_sigterm_to_dmm_alone_lets_the_landing_finish(store, slow_git, tmp_path):
    pid = _proposal(store)
    done = kill_at(slow_git, "read-tree -m -u", "review", "approve", pid, cwd=store.root,
                   tmp=tmp_path, sig=signal.SIGTERM, group=False)
    assert done.returncode != 0  # it died of the signal, but only once the index was in place
    assert ".dmm/memory/project/rule_1.md" in _tracked(store)
    assert git(store.root, "status", "--porcelain") == ""
    assert not (store.root / ".git" / "dmm-landing.json").exists()


def _parallel(n: int, fn):
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(fn, range(n)))


def test_parallel_proposals_get_distinct_ids_and_one_path_is_proposed_once(store):
    body = "---\ntags: [payments]\npriority: 0.5\nconfidence: active\n---\n\n# Rule {n}\n\nText.\n"
    results = _parallel(10, lambda n: store.dmm("write", "propose", "--path",
                                                f"project/p{n}.md", "--reason", "r", "--json",
                                                input=body.format(n=n)))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    proposals = json.loads(store.dmm("review", "list", "--json").stdout)["proposals"]
    ids = [p["memory_id"] for p in proposals]
    assert len(ids) == 10 and len(set(ids)) == 10
    same = _parallel(5, lambda n: store.dmm("write", "propose", "--path", "project/same.md",
                                            "--reason", "r", input=body.format(n=n)))
    assert sum(r.returncode == 0 for r in same) == 1
    assert all("already open" in r.stderr for r in same if r.returncode)
    proc = store.dmm("review", "process", "--all")
    assert proc.returncode in (0, 1), proc.stderr
    assert store.dmm("validate").returncode == 0


def test_parallel_resolutions_of_one_conflict_never_overrule_each_other(store):
    """Each resolution commits only if the conflict is still as it saw it: once dismissed,
    nothing that started from the older state commits after it (a run that starts after the
    dismissal is refused as already dismissed)."""
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    head = git(store.root, "rev-parse", "HEAD").strip()
    actions = ["dismiss", "defer"] * 3
    results = _parallel(6, lambda n: store.dmm("conflicts", "resolve", conflict, "--action",
                                               actions[n], "--reason", f"run {n}"))
    won = [n for n, r in enumerate(results) if r.returncode == 0]
    assert won and all("already" in r.stderr for r in results if r.returncode)
    log = git(store.root, "log", "--reverse", "--format=%(trailers:key=Dmm-Resolution,"
              "valueonly)", f"{head}..HEAD").split()
    assert sorted(log) == sorted(actions[n] for n in won)  # one commit per winner
    if "dismiss" in log:
        assert log[-1] == "dismiss" and log.count("dismiss") == 1
    record = json.loads((store.root / ".dmm" / "conflicts" / f"{conflict}.json").read_text())
    assert record["status"] == {"dismiss": "dismissed", "defer": "deferred"}[log[-1]]


def test_ten_parallel_approvals_still_merge_cleanly(store):
    pids = [_proposal(store, n) for n in range(1, 11)]
    # the ten rules share most of their words: once some have landed, the reviewer would defer
    # the rest as near-duplicates, which a script approves only with --force (item 19)
    results = _parallel(10, lambda n: store.dmm("review", "approve", pids[n], "--force"))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results if r.returncode]
    assert {f".dmm/memory/project/rule_{n}.md" for n in range(1, 11)} <= _tracked(store)
    assert git(store.root, "status", "--porcelain") == ""
