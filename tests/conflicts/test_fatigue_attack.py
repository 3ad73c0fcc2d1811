"""Attacks on the conflict-fatigue tools (issue 37 item 6) from the trust boundaries of
docs/guarantees.md: decision records, trailers and proposal branches are repository content
anyone can push; only a person at a terminal decides. On real repositories."""

from __future__ import annotations

import datetime as dt
import json

from tests.conflicts.test_fatigue import JOBS, LIMITS, NODES, cids, commits_since, head
from tests.conflicts.test_resolution import OLD_LIMIT, conflicts, store  # noqa: F401
from tests.conftest import git


def _forge_record(repo, cid: str, **fields) -> None:
    """Commit a decision record for ``cid`` as a teammate's (or a fork's) commit could."""
    path = repo.root / ".dmm" / "conflicts" / f"{cid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"conflict_id": cid, "status": "deferred", "action": "defer",
              "reason": "later", "by": "someone", "at": dt.datetime.now(dt.timezone.utc)
              .isoformat(timespec="seconds"), **fields}
    path.write_text(json.dumps(record, indent=2) + "\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "a pushed record")


def test_a_deferral_whose_end_is_not_a_date_silences_nothing(store):
    ids = cids(store)
    for bad in ("never", 99999999, "2026-13-45"):
        _forge_record(store, ids[LIMITS], suppressed_until=bad)
        listed = conflicts(store)
        assert LIMITS in listed and listed[LIMITS]["status"] == "unresolved", bad
        assert "Traceback" not in store.dmm("conflicts", "show", ids[LIMITS]).stderr
    # a readable end still holds until its day
    later = (dt.date.today() + dt.timedelta(days=3)).isoformat()
    _forge_record(store, ids[LIMITS], suppressed_until=later)
    assert LIMITS not in conflicts(store)


def test_an_open_proposal_never_reopens_a_conflict_already_decided(store):
    """A proposal branch is a claim anyone can push (a fork, a teammate's stale
    `resolve --propose`): it may make an open conflict in_progress, never bring back one a
    person dismissed, and never block a batch decision of the others."""
    ids = cids(store)
    proc = store.dmm("conflicts", "resolve", ids[LIMITS], "--action", "deprecate", "--target",
                     OLD_LIMIT, "--reason", "raised in June", "--propose")
    assert proc.returncode == 0, proc.stderr
    proc = store.dmm("conflicts", "dismiss", ids[LIMITS], "--reason", "two gateways")
    assert proc.returncode == 0, proc.stderr
    assert LIMITS not in conflicts(store)
    assert conflicts(store, "--status", "in_progress") == {}
    assert set(conflicts(store, "--status", "dismissed")) == {LIMITS}
    start = head(store)
    proc = store.dmm("conflicts", "dismiss", "--scope", "project", "--reason", "one sweep")
    assert proc.returncode == 0, proc.stderr
    assert "dismissed 2 in one commit" in proc.stderr and head(store) != start
    plan = json.loads(store.dmm("conflicts", "resolve", "--auto", "--dry-run", "--json").stdout)
    assert plan["resolved"] == [] and plan["left_for_a_person"] == []


def test_a_forged_detected_at_neither_breaks_nor_skews_the_figures(store):
    """`detected_at` of a decision record is a claim: one that is not a time (a number, a
    list) is no time at all, and one before either memory was written times nothing."""
    from tests.conflicts.test_resolution import BEANSTALK

    ids = cids(store)
    flag = store.dmm("conflicts", "flag", "--memory", OLD_LIMIT, "--memory", BEANSTALK,
                     "--description", "one gateway, one queue", "--json")
    assert flag.returncode == 0, flag.stderr
    flagged = json.loads(flag.stdout)["conflict_id"]
    pair = sorted((OLD_LIMIT, BEANSTALK))
    for forged in (12345, ["1970-01-01"]):
        _forge_record(store, ids[JOBS], status="dismissed", action="dismiss",
                      detected_at=forged, memories=sorted(JOBS))
        _forge_record(store, flagged, status="flagged", action="flag", detected_at=forged,
                      memories=pair)
        for args in (["list", "--sort", "detected"], ["stats"], ["show", flagged]):
            proc = store.dmm("conflicts", *args)
            assert proc.returncode == 0 and "Traceback" not in proc.stderr, (forged, args,
                                                                              proc.stderr)
        data = json.loads(store.dmm("conflicts", "stats", "--json").stdout)
        assert isinstance(data["oldest_unresolved"], str), data
    # a time before the memories were written (created: 2025 and 2026) times nothing
    _forge_record(store, ids[JOBS], status="dismissed", action="dismiss",
                  detected_at="1970-01-01T00:00:00+00:00", memories=sorted(JOBS))
    _forge_record(store, flagged, status="flagged", action="flag",
                  detected_at="1970-01-01T00:00:00+00:00", memories=pair)
    data = json.loads(store.dmm("conflicts", "stats", "--json").stdout)
    assert data["median_days_to_resolution"] is None, data
    assert not data["oldest_unresolved"].startswith("1970"), data
    # the agents' surfaces (MCP, HTTP) give the same figure
    from dmm.agents import calls

    assert calls.conflict_stats(store.ws)["oldest_unresolved"] == data["oldest_unresolved"]


def test_two_batches_racing_over_one_conflict_decide_it_once(store):
    """Two dmm processes at once, each a batch naming the same conflict: one commits, the
    other commits nothing and says why (the compare-and-swap of the batch's one commit). (A
    deferral is no final decision: a dismissal after it, by a command that read it, is
    allowed.)"""
    from concurrent.futures import ThreadPoolExecutor

    from tests.conftest import run_dmm

    ids = cids(store)
    start = head(store)
    jobs = (["dismiss", ids[LIMITS], ids[JOBS], "--reason", "one"],
            ["dismiss", ids[JOBS], ids[NODES], "--reason", "two"])
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda a: run_dmm("conflicts", *a, cwd=store.root), jobs))
    assert sorted(p.returncode == 0 for p in done) == [False, True], [p.stderr for p in done]
    loser = next(p for p in done if p.returncode != 0)
    assert "Traceback" not in loser.stderr and "already" in loser.stderr, loser.stderr
    assert commits_since(store, start) == 1
    record = f".dmm/conflicts/{ids[JOBS]}.json"
    assert len(git(store.root, "log", "--format=%H", "--", record).split()) == 1
    assert git(store.root, "status", "--porcelain").strip() in ("", "?? notes.txt")


def test_a_deferral_end_with_escape_sequences_is_shown_as_text(store):
    ids = cids(store)
    _forge_record(store, ids[LIMITS], suppressed_until="\x1b]0;owned\x07\x1b[8m2099-01-01")
    shown = store.dmm("conflicts", "show", ids[LIMITS])
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\\u001b" in shown.stdout
    assert "(over: open again)" in shown.stdout


def test_commit_order_never_makes_auto_retire_a_memory(repo):
    """Which of two memories of one day git added later only words a recommendation for a
    person, never an automatic deprecation; and it is read from when each reached this
    branch, not from commit dates, which a fork can backdate."""
    import os
    import subprocess

    from tests.conflicts.test_fatigue import FIRST, SECOND, plan
    from tests.conflicts.test_resolution import UPLOAD

    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "the store")
    base = head(repo)
    repo.add("project/limit_a.md", FIRST, "Upload size ceiling on the gateway",
             f"The ceiling is 8 MB. {UPLOAD}", tags="[uploads, limits]",
             extra="created: 2025-06-10\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "the first ceiling")
    git(repo.root, "checkout", "-qb", "fork", base)
    repo.add("project/limit_b.md", SECOND, "Upload size ceiling of the gateway",
             f"The ceiling is 50,000,000 bytes. {UPLOAD}", tags="[uploads, limits]",
             extra="created: 2025-06-10\n")
    git(repo.root, "add", "-A")
    old = {**os.environ, "GIT_COMMITTER_DATE": "2001-01-01T00:00:00Z",
           "GIT_AUTHOR_DATE": "2001-01-01T00:00:00Z"}
    subprocess.run(["git", "commit", "-qm", "backdated"], cwd=repo.root, env=old, check=True)
    git(repo.root, "checkout", "-q", "-")
    git(repo.root, "merge", "-q", "--no-edit", "fork")
    steps = plan(repo)
    assert steps["resolved"] == [], steps
    assert len(steps["left_for_a_person"]) == 1
    # the backdated one reached this branch last: it is the one committed later here
    assert steps["left_for_a_person"][0]["recommendation"] == f"keep {SECOND} (committed later)"


def test_a_scope_is_one_of_dmms_scopes_never_a_pattern(repo):
    """--scope reaches SQL only as a bound value, and only as one of the five scopes: a
    pattern, a quote or a path is refused with a sentence before anything is read."""
    for value in ("project' OR 1=1 --", "../project", "%"):
        for args in (["list"], ["scan"], ["resolve", "--auto", "--dry-run"],
                     ["dismiss", "--reason", "x", "--dry-run"]):
            proc = repo.dmm("conflicts", *args, "--scope", value)
            assert proc.returncode == 2 and "Traceback" not in proc.stderr, (value, args)
            assert "--scope" in proc.stderr and "is not one of" in proc.stderr


def test_memories_dated_in_the_future_are_not_recent():
    """`created` is the memory's own claim: two memories dated years ahead are not "created
    within the last 7 days", so they do not raise their conflict's severity."""
    from tests.conflicts.test_fatigue import test_severity_follows_seed_002 as judged

    judged("project", "active", -4000, "contradictory", "low")  # 2 points, not 4
    judged("project", "active", 1, "contradictory", "medium")  # really recent: 4


def test_auto_never_takes_a_date_after_today_as_newer(repo):
    """`created` is written by whoever wrote the memory: one dated years ahead would have
    made `resolve --auto` retire the memory it contradicts as the older one."""
    from tests.conflicts.test_fatigue import plan
    from tests.conflicts.test_resolution import UPLOAD

    repo.add("project/limit_a.md", "mem_2025_06_10_001", "Upload size ceiling on the gateway",
             f"The ceiling is 8 MB. {UPLOAD}", tags="[uploads, limits]",
             extra="created: 2025-06-10\n")
    repo.add("project/limit_b.md", "mem_2025_06_10_002", "Upload size ceiling of the gateway",
             f"The ceiling is 50,000,000 bytes. {UPLOAD}", tags="[uploads, limits]",
             extra="created: 2099-06-10\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "a ceiling from the future")
    steps = plan(repo)
    assert steps["resolved"] == [], steps["resolved"]
    assert len(steps["left_for_a_person"]) == 1
    assert "after today" in steps["left_for_a_person"][0]["why"]
