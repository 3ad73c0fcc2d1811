"""Conflict fatigue (issue 37 items 6 and 10; seeds 000 sections 13 and 14.2, and 002): which
memory is newer, batch dismissal, deferral until a date, severity, scopes, the whole
auto-then-ask workflow, resolution figures; on real repositories through the command line."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from tests.conflicts.test_resolution import (BEANSTALK, NEW_LIMIT, NODE18, NODE22, OLD_LIMIT,
                                             SQS, UPLOAD, conflicts, store)  # noqa: F401
from tests.conftest import git

# the same day, and the id that sorts last is the one written first
FIRST, SECOND = "mem_2025_06_10_009", "mem_2025_06_10_002"


def plan(repo, *args) -> dict:
    proc = repo.dmm("conflicts", "resolve", "--auto", "--dry-run", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_newer_of_two_memories_of_one_day_is_the_one_committed_later(repo):
    repo.add("project/limit_a.md", FIRST, "Upload size ceiling on the gateway",
             f"The ceiling is 8 MB. {UPLOAD}", tags="[uploads, limits]",
             extra="created: 2025-06-10\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "the first ceiling")
    repo.add("project/limit_b.md", SECOND, "Upload size ceiling of the gateway",
             f"The ceiling is 50,000,000 bytes. {UPLOAD}", tags="[uploads, limits]",
             extra="created: 2025-06-10\n")
    git(repo.root, "add", "-A")
    # another person's commit: one author's commits minutes apart are a working session
    # (narrative.apply_rules), where the later fact settles the earlier one
    git(repo.root, "-c", "user.name=Bea", "-c", "user.email=bea@example.com", "commit", "-qm",
        "the second ceiling")
    steps = plan(repo)["left_for_a_person"]
    assert len(steps) == 1, steps
    assert steps[0]["recommendation"] == f"keep {SECOND} (committed later)"
    # a merge takes the newer one's title: the one committed later
    proc = repo.dmm("conflicts", "resolve", steps[0]["conflict_id"], "--action", "merge",
                    "--content", "The ceiling is 50,000,000 bytes.", "--reason", "one rule",
                    "--json")
    assert proc.returncode == 0, proc.stderr
    created = [p for p in repo.memory.rglob("*.md") if "deprecated" not in p.parts
               and p.name not in ("limit_a.md", "limit_b.md")]
    assert len(created) == 1 and "# Upload size ceiling of the gateway" in created[0].read_text()



def cids(repo, *args) -> dict[frozenset, str]:
    return {pair: c["conflict_id"] for pair, c in conflicts(repo, *args).items()}


def head(repo) -> str:
    return git(repo.root, "rev-parse", "HEAD").strip()


def commits_since(repo, start: str) -> int:
    return int(git(repo.root, "rev-list", "--count", f"{start}..HEAD"))


LIMITS, JOBS, NODES = (frozenset(p) for p in ((OLD_LIMIT, NEW_LIMIT), (BEANSTALK, SQS),
                                               (NODE18, NODE22)))


def test_batch_dismiss_by_ids_is_one_commit_and_undo_reopens_one(store):
    ids = cids(store)
    start = head(store)
    proc = store.dmm("conflicts", "dismiss", ids[LIMITS], ids[JOBS], "--reason", "noise",
                     "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["result"]
    assert result["conflict_ids"] == [ids[LIMITS], ids[JOBS]]
    assert commits_since(store, start) == 1
    trailers = git(store.root, "log", "-1", "--format=%(trailers:key=Dmm-Conflict,valueonly)")
    assert set(trailers.split()) == {ids[LIMITS], ids[JOBS]}
    assert set(conflicts(store)) == {NODES}
    assert {p for p, c in conflicts(store, "--status", "dismissed").items()} == {LIMITS, JOBS}
    # undoing one of a batch reopens that one only
    proc = store.dmm("conflicts", "undo", ids[LIMITS], "--reason", "that one is real")
    assert proc.returncode == 0, proc.stderr
    assert set(conflicts(store)) == {NODES, LIMITS}
    assert set(conflicts(store, "--status", "dismissed")) == {JOBS}
    # a closed one in a batch: nothing is committed
    start = head(store)
    proc = store.dmm("conflicts", "dismiss", ids[LIMITS], ids[JOBS], "--reason", "again")
    assert proc.returncode != 0 and "already decided" in proc.stderr
    assert "Traceback" not in proc.stderr and head(store) == start


def test_batch_dismiss_by_filter_dry_run_first(store):
    start = head(store)
    proc = store.dmm("conflicts", "dismiss", "--type", "stale", "--reason", "old notes",
                     "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["result"] is None and len(data["conflicts"]) == 1
    assert head(store) == start
    proc = store.dmm("conflicts", "dismiss", "--scope", "project", "--reason", "one sweep")
    assert proc.returncode == 0, proc.stderr
    assert "dismissed 3 in one commit" in proc.stderr
    assert commits_since(store, start) == 1 and conflicts(store) == {}
    proc = store.dmm("conflicts", "dismiss", "--scope", "global", "--reason", "none there")
    assert proc.returncode == 0 and "nothing dismissed" in proc.stderr
    proc = store.dmm("conflicts", "dismiss", "--reason", "what?")
    assert proc.returncode != 0 and "name the conflicts" in proc.stderr


def test_defer_until_a_date_then_open_again(store):
    ids = cids(store)
    tomorrow = (dt.date.today() + dt.timedelta(days=1)).isoformat()
    for bad in ("next week", (dt.date.today()).isoformat()):
        proc = store.dmm("conflicts", "defer", ids[LIMITS], "--until", bad, "--reason", "x")
        assert proc.returncode != 0 and "--until" in proc.stderr
        assert "Traceback" not in proc.stderr
    proc = store.dmm("conflicts", "resolve", ids[LIMITS], "--action", "defer", "--until",
                     tomorrow, "--reason", "after the audit", "--json")
    assert proc.returncode == 0, proc.stderr
    assert LIMITS not in conflicts(store)
    deferred = conflicts(store, "--status", "deferred")[LIMITS]
    assert deferred["decision"]["suppressed_until"] == tomorrow
    assert "Dmm-Until: " + tomorrow in git(store.root, "log", "-1", "--format=%B")
    # the day comes (the committed record says it came yesterday)
    record = store.root / ".dmm" / "conflicts" / f"{ids[LIMITS]}.json"
    data = json.loads(record.read_text())
    data["suppressed_until"] = (dt.date.today() - dt.timedelta(days=1)).isoformat()
    record.write_text(json.dumps(data, indent=2) + "\n")
    git(store.root, "commit", "-qam", "a day later")
    assert conflicts(store)[LIMITS]["status"] == "unresolved"
    assert LIMITS not in conflicts(store, "--status", "deferred")
    shown = store.dmm("conflicts", "show", ids[LIMITS])
    assert "over: open again" in shown.stdout
    # and it can be decided like any open conflict
    proc = store.dmm("conflicts", "dismiss", ids[LIMITS], "--reason", "settled now")
    assert proc.returncode == 0, proc.stderr
    assert LIMITS in conflicts(store, "--status", "dismissed")


def test_defer_several_in_one_commit(store):
    start = head(store)
    later = (dt.date.today() + dt.timedelta(days=30)).isoformat()
    proc = store.dmm("conflicts", "defer", "--scope", "project", "--until", later, "--reason",
                     "after the release")
    assert proc.returncode == 0, proc.stderr
    assert commits_since(store, start) == 1 and conflicts(store) == {}
    assert len(conflicts(store, "--status", "deferred")) == 3


def _memory(text_args: dict):
    from dmm.memory.parse import parse_memory
    from tests.conftest import memory_text

    scope = text_args.pop("scope", "project")
    return parse_memory(memory_text(scope=scope, **text_args), f"{scope}/x.md")[0]


@pytest.mark.parametrize("scope, confidence, created_days_ago, type_, expected", [
    ("project", "active", 400, "stale", "low"),
    ("project", "active", 400, "contradictory", "low"),  # 2 points
    ("global", "active", 400, "stale", "medium"),  # 3
    ("global", "active", 400, "contradictory", "high"),  # 5
    ("project", "stable", 1, "contradictory", "high"),  # 2 + 2 + 2
    ("baseline", "stable", 1, "contradictory", "critical"),  # 9
    ("global", "stable", 400, "contradictory", "critical"),  # 7
    ("baseline", "stable", 1, "duplicate", "low"),  # a duplicate is low, whatever else
])
def test_severity_follows_seed_002(scope, confidence, created_days_ago, type_, expected):
    from dmm.conflicts.model import Conflict, ConflictMemory
    from dmm.conflicts.severity import severity

    today = dt.date(2026, 11, 28)
    created = (today - dt.timedelta(days=created_days_ago)).isoformat()
    a = _memory(dict(mem_id="mem_2025_01_01_001", title="A", body="a", scope=scope,
                     confidence=confidence, extra=f"created: {created}\n"))
    b = _memory(dict(mem_id="mem_2025_01_01_002", title="B", body="b",
                     extra=f"created: {created}\n"))
    assert a is not None and b is not None
    c = Conflict("conflict_000000000000", type_, "negation", 0.9, "", "",
                 [ConflictMemory.of(a, "primary"), ConflictMemory.of(b, "secondary")])
    assert severity(c, [a, b], today) == expected


def test_severity_is_shown_and_sorted(store):
    # the old ceiling becomes a global, stable rule: its contradiction is the gravest
    store.memory.joinpath("project/limit_old.md").unlink()
    store.add("global/limit_old.md", OLD_LIMIT, "Upload size ceiling on the gateway",
              f"The ceiling is 8 MB. {UPLOAD}", scope="global", tags="[uploads, limits]",
              confidence="stable", extra="created: 2025-01-10\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "a global rule")
    proc = store.dmm("conflicts", "list", "--sort", "severity", "--json")
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)["conflicts"]
    levels = [c["severity"] for c in listed]
    from dmm.conflicts.severity import rank

    assert levels == sorted(levels, key=rank, reverse=True) and len(set(levels)) > 1
    assert {m["memory_id"] for m in listed[0]["memories"]} >= {OLD_LIMIT}
    table = store.dmm("conflicts", "list", "--sort", "severity").stdout
    assert listed[0]["severity"] in table.splitlines()[2]
    shown = store.dmm("conflicts", "show", listed[0]["conflict_id"]).stdout
    assert f"severity {listed[0]['severity']}" in shown
    stats = json.loads(store.dmm("conflicts", "stats", "--json").stdout)
    assert sum(stats["by_severity"].values()) == stats["total"]


def test_scope_limits_scan_list_and_resolve(store):
    store.memory.joinpath("project/limit_old.md").unlink()
    store.add("global/limit_old.md", OLD_LIMIT, "Upload size ceiling on the gateway",
              f"The ceiling is 8 MB. {UPLOAD}", scope="global", tags="[uploads, limits]",
              extra="created: 2025-01-10\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "a global rule")
    proc = store.dmm("conflicts", "scan", "--scope", "global", "--json")
    assert proc.returncode == 0, proc.stderr
    scan = json.loads(proc.stdout)
    assert scan["scan_type"] == "targeted" and scan["conflicts_detected"] >= 1
    assert set(conflicts(store, "--scope", "global")) == {LIMITS}
    assert set(conflicts(store, "--scope", "project")) == {LIMITS, JOBS, NODES}
    assert conflicts(store, "--scope", "ephemeral") == {}
    plan = json.loads(store.dmm("conflicts", "resolve", "--auto", "--dry-run", "--json",
                                "--scope", "global").stdout)
    assert {frozenset(s["memories"]) for s in plan["resolved"] + plan["left_for_a_person"]} \
        == {LIMITS}
    proc = store.dmm("conflicts", "scan", "--scope", "global", "--full")
    assert proc.returncode != 0 and "--scope" in proc.stderr
    # a scope scan leaves the rest for the next scan: an edit elsewhere is still scanned
    store.add("project/jobs/sqs.md", SQS, "Background jobs moved to SQS",
              "In January we migrated the job queue from Beanstalkd to SQS.",
              tags="[jobs, queue]", extra="created: 2026-01-10\n")
    assert store.dmm("conflicts", "scan", "--scope", "global").returncode == 0
    assert "incremental" in store.dmm("conflicts", "scan", "--json").stdout


def test_stats_give_resolution_rate_median_time_and_oldest(store):
    ids = cids(store)
    before = json.loads(store.dmm("conflicts", "stats", "--json").stdout)
    assert before["resolution_rate"] == 0.0 and before["median_days_to_resolution"] is None
    assert before["oldest_unresolved"]
    proc = store.dmm("conflicts", "dismiss", ids[JOBS], "--reason", "fine")
    assert proc.returncode == 0, proc.stderr
    record = json.loads((store.root / ".dmm" / "conflicts" / f"{ids[JOBS]}.json").read_text())
    assert record["detected_at"]
    after = json.loads(store.dmm("conflicts", "stats", "--json").stdout)
    assert after["resolution_rate"] == round(1 / 3, 3)
    assert after["resolutions_timed"] == 1 and 0 <= after["median_days_to_resolution"] < 1
    text = store.dmm("conflicts", "stats").stdout
    assert "resolution rate: 33%" in text and "median time to resolution" in text
    assert "oldest unresolved: 20" in text


def test_scan_id_is_filled_in_the_shapes(store):
    from dmm.agents import shapes

    scan = json.loads(store.dmm("conflicts", "scan", "--full", "--json").stdout)
    listed = conflicts(store)
    assert {c["scan_id"] for c in listed.values()} == {scan["scan_id"]}
    assert shapes.conflict(listed[LIMITS])["scan_id"] == scan["scan_id"]


def test_methods_take_the_prd_short_names(store):
    proc = store.dmm("conflicts", "scan", "--full", "--methods", "tag,semantic,supersession",
                     "--json")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)["methods_used"]) == {
        "tag_overlap", "semantic_similarity", "supersession_chain"}
    proc = store.dmm("conflicts", "scan", "--full", "--methods", "tag,nonsense")
    assert proc.returncode != 0 and "nonsense" in proc.stderr and "Traceback" not in proc.stderr


def test_auto_then_interactive_is_seed_002s_whole_workflow(store):
    import os
    import sys

    import pexpect

    # the same rule in two scopes: left for a person by the automatic pass
    store.add("global/tests.md", "mem_2025_01_10_002", "Run the full test suite before pushing",
              "Run the whole test suite locally before every push, so that the main branch "
              "stays green.", scope="global", tags="[testing, workflow]")
    store.add("project/tests.md", "mem_2025_05_10_002", "Run all tests before pushing",
              "Run the complete test suite locally before every push, so that the main branch "
              "stays green.", tags="[testing, workflow]")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "scope overlap")
    left = cids(store)[frozenset(("mem_2025_01_10_002", "mem_2025_05_10_002"))]
    start = head(store)
    off = store.dmm("conflicts", "resolve", "--auto", "--interactive")
    assert off.returncode != 0 and "terminal" in off.stderr and head(store) == start
    child = pexpect.spawn(sys.executable, ["-m", "dmm", "conflicts", "resolve", "--auto",
                                           "--interactive"], cwd=str(store.root),
                          env=dict(os.environ), encoding="utf-8", timeout=60,
                          dimensions=(50, 140))
    child.expect("Commit these 3 resolutions")
    child.sendline("y")
    child.expect("now the conflicts left for a person")
    child.expect(r"\[q\] quit: ")
    assert left in child.before
    child.sendline("d")
    child.expect("Reason")
    child.sendline("both scopes are intended")
    child.expect("committed")
    child.expect("done: 1 resolved")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert commits_since(store, start) == 4 and conflicts(store) == {}


def test_a_proposed_resolution_makes_its_conflict_in_progress(store):
    ids = cids(store)
    proc = store.dmm("conflicts", "resolve", ids[LIMITS], "--action", "deprecate", "--target",
                     OLD_LIMIT, "--reason", "raised in June", "--propose", "--json")
    assert proc.returncode == 0, proc.stderr
    proposal = json.loads(proc.stdout)["proposal_id"]
    assert conflicts(store)[LIMITS]["status"] == "in_progress"
    assert set(conflicts(store, "--status", "in_progress")) == {LIMITS}
    assert json.loads(store.dmm("conflicts", "stats", "--json").stdout)["by_status"] == {
        "in_progress": 1, "unresolved": 2}
    # until it lands the conflict is still there: agents are still warned
    assert store.dmm("conflicts", "check", "--memory", OLD_LIMIT).returncode == 1
    plan = json.loads(store.dmm("conflicts", "resolve", "--auto", "--dry-run", "--json").stdout)
    assert all(set(s["memories"]) != LIMITS for s in plan["resolved"])
    reviewed = json.loads(store.dmm("review", "process", "--id", proposal, "--json").stdout)
    assert reviewed["decision"] in ("approved", "modified"), reviewed
    assert set(conflicts(store, "--status", "resolved")) == {LIMITS}
    assert conflicts(store, "--status", "in_progress") == {}


def test_batch_decisions_are_a_persons(store):
    ids = cids(store)
    start = head(store)
    for args in (["dismiss", "--scope", "project", "--reason", "x"],
                 ["dismiss", ids[LIMITS], ids[JOBS], "--reason", "x"],
                 ["defer", ids[LIMITS], "--reason", "x"],
                 ["resolve", "--auto", "--interactive"]):
        proc = store.dmm("conflicts", *args, env={"DMM_AGENT": "mcp:claude-code"})
        assert proc.returncode != 0 and "person's decision" in proc.stderr, args
    assert head(store) == start


def test_the_http_and_mcp_scan_take_the_short_names_too(store):
    from dmm.agents import calls

    result = calls.scan(store.ws, full=True, methods=["tag", "supersession"])
    assert set(result["methods_used"]) == {"tag_overlap", "supersession_chain"}
