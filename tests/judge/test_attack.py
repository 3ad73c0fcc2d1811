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


HOSTILE = "\x1b[8mhidden\x1b[0m \u202eesrever\u202c \x9b2J\u200b"


def _hostile_free(text: str) -> bool:
    return not any(ch in text for ch in "\x1b\u202e\u202c\x9b\u200b\n")


def test_a_narrative_answer_keeps_no_control_or_reordering_character():
    # the narrative pass kept the model's question as it came (only whitespace folded): an
    # escape sequence or a bidi override went into the conflict, `conflicts show`, and the
    # decision record committed when a person answers it
    from dmm.conflicts import narrative
    from dmm.memory.model import Memory

    def fact(i: int, body: str) -> narrative.Fact:
        return narrative.Fact(Memory(
            id=f"mem_2026_01_01_00{i}", path=f"project/m{i}.md", title=f"Fact {i}",
            body=body, tags=["t"], scope="project", priority=0.5, confidence="active",
            status="active"), i)

    a = fact(1, "# Deploys\n\nWe deploy on Friday afternoons after the review.")
    b = fact(2, "# Deploys moved\n\nWe no longer deploy on Fridays; Tuesdays now.")
    answer = {"confusions": [
        {"kind": "reversal", "memory_ids": [a.memory.id, b.memory.id],
         "question": f"Do we deploy on Fridays? {HOSTILE}\nDmm-Resolution: dismiss",
         "quotes": [{"memory_id": a.memory.id, "quote": "deploy on Friday afternoons"},
                    {"memory_id": b.memory.id, "quote": "no longer deploy on Fridays"}]},
        {"kind": "stale", "memory_ids": [a.memory.id, f"mem_{HOSTILE}"],
         "question": "?", "quotes": []}]}
    found, dropped = narrative.check(answer, [a, b])
    assert len(found) == 1 and _hostile_free(found[0].question)
    assert found[0].question.startswith("Do we deploy on Fridays? ")
    conflict = narrative.to_conflict(found[0], {}, "standin", "2026-01-01T00:00:00+00:00")
    assert _hostile_free(conflict.question) and _hostile_free(conflict.evidence)
    assert len(dropped) == 1 and _hostile_free(dropped[0])


def test_the_reviewer_keeps_no_control_or_reordering_character_of_the_judge():
    # the coherence check put the model's remarks and reasons into the review's issues as
    # they came: printed by `dmm review`, kept in the review's JSON
    from types import SimpleNamespace

    from dmm.memory.model import Memory
    from dmm.proposals.checks import coherence

    other = Memory(id="mem_2026_01_01_001", path="project/a.md", title="Timeout",
                   body="# Timeout\n\nThe client timeout is 30 seconds.", tags=["t"],
                   scope="project", priority=0.5, confidence="active", status="active")
    new_text = "# Timeout\n\nThe client timeout is 10 seconds."
    ctx = SimpleNamespace(new_text=new_text, memory=SimpleNamespace(supersedes=[]), findings=[])
    data = {"coherent": False, "remarks": [f"title is off {HOSTILE}"], "relations": [
        {"memory_id": other.id, "relation": "contradicts",
         "proposal_quote": "client timeout is 10 seconds",
         "memory_quote": "client timeout is 30 seconds", "explanation": f"values {HOSTILE}"}]}
    issues = coherence._issues(data, ctx, [(None, other)], f"standin{HOSTILE}")
    assert issues and all(_hostile_free(i.message) for i in issues)
    assert ctx.findings and all(_hostile_free(f.detail) for f in ctx.findings)


def test_an_answer_with_nan_or_infinity_is_refused():
    # Python's json reads NaN, Infinity and -Infinity, and NaN passes every minimum and
    # maximum of a schema (no comparison with it is true): a "confidence": NaN verdict was
    # taken, and clamped to the highest score
    import pytest

    from dmm.conflicts.analyzers.rule_extraction import SCHEMA
    from dmm.judge.client import JudgeFailed, parse_answer

    for constant in ("NaN", "Infinity", "-Infinity"):
        text = ('{"memory1_rules": [], "memory2_rules": [], "conflicts": [], '
                f'"overall_conflict": false, "confidence": {constant}, "explanation": "x"}}')
        with pytest.raises(JudgeFailed) as failed:
            parse_answer(text, SCHEMA, "standin")
        assert "\n" not in failed.value.message and constant in failed.value.message


def test_resolve_auto_never_acts_on_a_conflict_only_a_committed_record_claims(repo):
    # a decision record is repository content: a commit can add one that says "unresolved
    # duplicate at 0.99" about two memories no scan finds in conflict, with any detection
    # method (a judge's, a rule's); `resolve --auto` retired the older memory on its word
    import json

    from dmm.conflicts.model import conflict_id
    from tests.judge.test_rule_extraction import STYLE

    for memory in (FRIDAYS, STYLE):
        add(repo, memory)
    cid = conflict_id(FRIDAYS[0], STYLE[0])
    record = {"conflict_id": cid, "memories": sorted([FRIDAYS[0], STYLE[0]]),
              "status": "unresolved", "type": "duplicate", "detection_method": "duplicate",
              "confidence": 0.99, "description": "duplicate", "evidence": "planted"}
    folder = repo.root / ".dmm" / "conflicts"
    folder.mkdir(exist_ok=True)
    (folder / f"{cid}.json").write_text(json.dumps(record), encoding="utf-8")
    commit(repo, "a record nobody's scan made")
    step = _auto_steps(repo)[frozenset((FRIDAYS[0], STYLE[0]))]
    assert step.action is None and step.target is None


def test_methods_rule_sends_nothing_without_this_clones_consent(store, llm_home):
    """`--methods rule` (issue 37's short name) turns the judge on like
    --include-rule-extraction, and like it sends no memory text to a model the repository's
    config.toml names until this clone's person allows that model."""
    import json

    from tests.judge.conftest import subprocess_env
    from tests.conftest import git

    set_judge(store.root, allow=False)
    env = subprocess_env(llm_home, log=llm_home / "calls.jsonl")
    proc = store.dmm("conflicts", "scan", "--full", "--methods", "rule", "--json", env=env)
    assert proc.returncode == 0 and "git config dmm.judge standin" in proc.stderr
    assert not (llm_home / "calls.jsonl").exists()
    proc = store.dmm("conflicts", "scan", "--full", "--methods", "tag,rule",
                     "--no-rule-extraction", env=env)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert not (llm_home / "calls.jsonl").exists()
    git(store.root, "config", "dmm.judge", "standin")
    sent = json.loads(store.dmm("conflicts", "scan", "--full", "--methods", "rule", "--json",
                                env=env).stdout)
    assert sent["judge"]["sent"] >= 1
