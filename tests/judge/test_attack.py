"""The judge's surfaces attacked: what a model answer, a memory's text or a repository's
config can make dmm do. Each test reproduces one hole that was closed (docs/guarantees.md
names them). Real repositories, real commits, the stand-in model (tests/judge/standin)."""

from __future__ import annotations

from dmm.conflicts import service
from dmm.index.refresh import open_fresh
from tests.judge.conftest import set_judge
from tests.judge.test_rule_extraction import (FRIDAYS, NO_FRIDAYS, PAIR, VALUES, add, commit,
                                              listed, scan, store)  # noqa: F401


def _auto_steps(repo) -> dict[frozenset, object]:
    conn, _ = open_fresh(repo.ws)
    try:
        steps = service.auto_plan(repo.ws, conn)
    finally:
        conn.close()
    return {frozenset(m.memory_id for m in s.conflict.memories): s for s in steps}


def test_resolve_auto_never_retires_a_memory_on_a_models_word(repo):
    # two memories 31 days apart that contradict only in the judge's reading: the rules find
    # nothing, the model's "conflict" at 0.9 would have made `resolve --auto` retire the
    # older one
    for memory in (FRIDAYS, NO_FRIDAYS):
        add(repo, memory)
    commit(repo)
    set_judge(repo.root)
    scan(repo, full=True, rule_extraction=True)
    assert listed(repo)[PAIR]["detection_method"] == "rule_extraction"
    step = _auto_steps(repo)[PAIR]
    assert step.action is None and step.target is None
    assert "language model" in step.why


def test_a_models_no_never_hides_a_contradiction_the_rules_report(store):
    # the floor a team reports at: the rules' contradiction is above it, and a model that
    # answers "no conflict" to everything would have taken it under the floor, out of every
    # list a person reads
    path = store.root / ".dmm" / "config.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("min_confidence = 0.5", "min_confidence = 0.6", 1),
                    encoding="utf-8")
    commit(store, "report from 0.6")
    scan(store, full=True)
    rules_only = listed(store)[VALUES]["confidence"]
    assert rules_only * (1 - 0.9 / 2) < 0.6 <= rules_only  # what the attack needs
    set_judge(store.root, model="standin-never")
    scan(store, full=True, rule_extraction=True)
    denied = listed(store)[VALUES]
    assert denied["confidence"] == 0.6 and "no conflict" in denied["evidence"]


def test_a_work_tree_with_the_judge_off_never_adopts_a_judged_scan(repo, tmp_path):
    # the main work tree's judge found a conflict no rule finds, and its scan was kept for the
    # other work trees by the memories' contents alone: a linked work tree with the very same
    # memories but the judge off in its config listed the model's conflict as its own
    from tests.conftest import Repo, git

    for memory in (FRIDAYS, NO_FRIDAYS):
        add(repo, memory)
    commit(repo)
    tree = tmp_path / "judge-off"
    git(repo.root, "worktree", "add", "-q", "-b", "off", str(tree))
    set_judge(repo.root)  # this work tree only: the branch's config keeps the judge off
    scan(repo, full=True, rule_extraction=True)
    assert PAIR in listed(repo)
    side = Repo(tree)
    conn, _ = open_fresh(side.ws)
    try:
        found, _ = service.conflicts(side.ws, conn, status="all")
    finally:
        conn.close()
    assert PAIR not in [frozenset(m.memory_id for m in c.memories) for c in found]
