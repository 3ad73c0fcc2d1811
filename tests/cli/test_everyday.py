"""The everyday commands as a demanding user meets them (issue 30): answers that must be right
(usage of an unqueried memory, stale candidates, a pack whose memories did not fit, a
reindex that keeps the scan state, who proposed), screens that say everything (deferrals,
resolutions), one word per idea, plurals, the things people expect (search, edit, dry runs,
a confirmation, quiet), completion and status. Real repositories, the real CLI."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys

import pytest

from dmm.errors import ExitCode
from tests.cli.test_completion import complete
from tests.cli.test_output import on_terminal
from tests.conflicts.test_resolution import (BEANSTALK, NEW_LIMIT, OLD_LIMIT, SQS, cid,
                                             conflicts, resolve)
from tests.conflicts.test_resolution import store  # noqa: F401 - a fixture
from tests.conftest import git

pexpect = pytest.importorskip("pexpect")
TODAY = dt.date.today().isoformat()


def j(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_usage_of_a_memory_nobody_queried_and_stale_candidates(store):  # noqa: F811
    shown = store.dmm("usage", "show", OLD_LIMIT, "--json")
    assert j(shown)["total_retrievals"] == 0 and j(shown)["memory_id"] == OLD_LIMIT
    missing = store.dmm("usage", "show", "mem_1999_01_01_001")
    assert missing.returncode == ExitCode.NOT_FOUND and "no memory" in missing.stderr
    store.add("project/fresh.md", "mem_2026_09_09_001", "Fresh rule about retries",
              extra=f"created: {TODAY}\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "fresh")
    stale = {m["memory_id"] for m in j(store.dmm("usage", "stale", "--json"))["memories"]}
    assert "mem_2026_09_09_001" not in stale  # approved today: not a candidate yet
    assert OLD_LIMIT in stale  # created long ago, never returned
    assert "retrievals" in store.dmm("usage", "--help").stdout.split("Columns:")[1]


def test_a_pack_whose_memories_did_not_fit_says_so(store):  # noqa: F811
    pack = store.dmm("query", "upload size ceiling of the gateway", "--budget", "40")
    assert pack.returncode == 0, pack.stderr
    assert "(no memory matched the task)" not in pack.stdout
    assert "none fitted the budget" in pack.stdout and "## Excluded" in pack.stdout
    nothing = store.dmm("query", "zebra crossing paint colour", "--budget", "40")
    assert "(no memory matched the task)" in nothing.stdout
    assert " · confidence active · " in store.dmm("query", "upload ceiling").stdout


def test_reindex_keeps_the_scan_state_and_an_undo_is_not_news(store):  # noqa: F811
    assert store.dmm("conflicts", "scan").returncode == 0
    assert store.dmm("reindex").returncode == 0
    pack = j(store.dmm("query", "upload size ceiling of the gateway", "--json"))
    assert not any("never been scanned" in w for w in pack["warnings"]), pack["warnings"]
    full = j(store.dmm("conflicts", "scan", "--full", "--json"))
    assert full["conflicts_detected"] > 0 and full["conflicts_new"] == 0
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    resolve(store, conflict, "--action", "deprecate", "--target", OLD_LIMIT, "--reason", "r")
    assert store.dmm("conflicts", "undo", conflict, "--reason", "wrong").returncode == 0
    store.add("project/unrelated.md", "mem_2026_09_09_002", "Invoices are numbered per year")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "unrelated")
    again = j(store.dmm("conflicts", "scan", "--json"))
    assert conflict not in again.get("new_conflict_ids", []), again


def test_a_person_at_a_terminal_proposes_in_their_name(store, tmp_path):  # noqa: F811
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\np = sys.argv[1]\ntext = open(p).read()\n"
                      "open(p, 'w').write(text.replace('Title of the memory', "
                      "'Deploys happen on weekdays only'))\n")
    env = {**os.environ, "EDITOR": f"{sys.executable} {editor}"}
    child = pexpect.spawn(sys.executable, ["-m", "dmm", "write", "propose", "--path",
                                           "project/deploys.md", "--reason", "agreed"],
                          cwd=str(store.root), env=env, encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    entry = next(e for e in j(store.dmm("log", "--json"))["entries"] if e["event"] == "proposed")
    assert entry["who"] == "Test User"
    history = j(store.dmm("history", "project/limit_new.md", "--json"))["history"]
    assert all(h["who"] for h in history)
    piped = j(store.dmm("write", "propose", "--path", "project/agent.md", "--reason", "r",
                        "--title", "Agents write this", "--tags", "x", "--json",
                        input="Written by a program with no terminal at all, for a test.\n"))
    assert piped["proposed_by"] == "Test User"  # a person piping a file in (issue 37, 18)
    made = j(store.dmm("write", "propose", "--path", "project/agent2.md", "--reason", "r",
                       "--title", "Agents write that", "--tags", "x", "--json",
                       env={"CLAUDECODE": "1"},
                       input="Written by an agent whose shell says so, for a test here.\n"))
    assert made["proposed_by"] == "agent:claude-code"
    by = {e["proposal_id"]: e for e in j(store.dmm("log", "--json"))["entries"]}
    assert not by[made["proposal_id"]]["claimed"]  # an agent in a person's clone: no claim
    assert "agent:claude-code for Test User" in store.dmm("log").stdout


def test_screens_say_why_and_what(store):  # noqa: F811
    made = j(store.dmm("write", "deprecate", "--memory", BEANSTALK, "--reason", "moved",
                       "--json"))
    pid = made["proposal_id"]
    assert store.dmm("review", "defer", pid, "--reason", "ask the queue owners").returncode == 0
    shown = store.dmm("review", "show", pid).stdout
    assert "deferred: by Test User" in shown and "ask the queue owners" in shown
    assert j(store.dmm("review", "show", pid, "--json"))["deferral"]["by"] == "Test User"
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    merged = resolve(store, conflict, "--action", "merge", "--content",
                     "# Upload ceiling of the gateway\n\nThe gateway refuses uploads above "
                     "50 MB with status 413.\n", "--reason", "one limit")
    text = store.dmm("conflicts", "show", conflict).stdout
    assert "(merge)" in text and f"created: {merged['memories_created'][0]}" in text
    assert "score " in text and "confidence 0." not in text


def test_one_word_per_idea(store):  # noqa: F811
    listed = store.dmm("conflicts", "list").stdout.splitlines()[0].split()
    assert "score" in listed and "confidence" not in listed
    assert store.dmm("conflicts", "list", "--min-score", "0.5").returncode == 0
    assert store.dmm("conflicts", "list", "--min-confidence", "0.5").returncode == 0  # old
    a, b = OLD_LIMIT, NEW_LIMIT
    flagged = store.dmm("conflicts", "flag", "--memory", BEANSTALK, "--memory", SQS,
                        "--description", "two queues")
    assert flagged.returncode == 0, flagged.stderr
    events = [e["event"] for e in j(store.dmm("log", "--json"))["entries"]]
    assert "flagged" in events and "resolved:flag" not in events
    assert j(store.dmm("log", "--decision", "resolved:flag", "--json"))["total"] == 1
    assert conflicts(store)  # a, b and the flag are open
    check_help = store.dmm("conflicts", "check", "--help").stdout
    assert "with each other or with any other memory" in " ".join(check_help.split())
    assert a and b


def test_plurals_and_sentences(store, tmp_path):  # noqa: F811
    scan = store.dmm("conflicts", "scan", "--full").stderr
    assert "(s)" not in scan and "memories in" in scan
    made = store.dmm("write", "propose", "--path", "project/x.md", "--reason", "r", "--title",
                     "A rule for the test", "--tags", "x",
                     input="A body long enough to say what it is about and why.\n")
    assert " | " not in made.stderr and "then `dmm review process" in made.stderr
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "main")
    from tests.conftest import run_dmm

    said = run_dmm("init", cwd=fresh).stderr
    assert said.index("installed git hooks") < said.index("Next: commit the store")
    one = store.dmm("status").stdout
    assert "(s)" not in one


def test_the_things_people_expect(store, tmp_path):  # noqa: F811
    found = j(store.dmm("search", "beanstalkd", "--json"))
    assert {m["memory_id"] for m in found["memories"]} == {BEANSTALK, SQS}
    assert j(store.dmm("list", "--grep", "beanstalkd", "--grep", "migrated", "--json")
             )["total"] == 1
    # write propose --title names the file after the title
    made = j(store.dmm("write", "propose", "--title", "Deploys happen on weekdays only",
                       "--tags", "deploy", "--reason", "r", "--json",
                       input="Deploys happen Monday to Thursday, nobody is on call Fridays.\n"))
    assert made["path"] == "project/deploys_happen_weekdays.md"  # little words left out
    # review process --dry-run decides nothing
    before = git(store.root, "for-each-ref")
    dry = store.dmm("review", "process", made["proposal_id"], "--dry-run")
    assert dry.returncode == 0 and "would be" in dry.stdout
    assert git(store.root, "for-each-ref") == before
    approve = store.dmm("review", "approve", made["proposal_id"], "--dry-run")
    assert approve.returncode == 0 and "would be approved" in approve.stdout
    assert git(store.root, "for-each-ref") == before
    # dmm edit: open it, propose what was saved
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\np = sys.argv[1]\ntext = open(p).read()\n"
                      "open(p, 'w').write(text.replace('Beanstalkd and', 'Beanstalkd 1.12 and'))\n")
    edited = store.dmm("edit", BEANSTALK, "--reason", "version", "--json",
                       env={"EDITOR": f"{sys.executable} {editor}"})
    proposal = j(edited)
    assert proposal["success"] and proposal["type"] == "update"
    diff = j(store.dmm("review", "show", proposal["proposal_id"], "--json"))["diff"]
    assert "+Background jobs are queued in Beanstalkd 1.12" in diff
    same = store.dmm("edit", SQS, "--reason", "r", env={"EDITOR": "true"})
    assert same.returncode == 0 and "unchanged" in same.stderr
    # --quiet keeps data and drops notes
    quiet = store.dmm("reindex", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_resolve_auto_asks_before_committing_several_at_a_terminal(store):  # noqa: F811
    plan = j(store.dmm("conflicts", "resolve", "--auto", "--dry-run", "--json"))
    if len(plan["resolved"]) < 2:
        pytest.skip("this store's plan has fewer than two automatic resolutions")
    head = git(store.root, "rev-parse", "HEAD")
    child = pexpect.spawn(sys.executable, ["-m", "dmm", "conflicts", "resolve", "--auto"],
                          cwd=str(store.root), env=dict(os.environ), encoding="utf-8",
                          timeout=60, dimensions=(50, 160))
    child.expect(r"Commit these \d+ resolutions")
    child.sendline("n")
    child.expect("nothing was changed")
    child.expect(pexpect.EOF)
    child.close()
    assert git(store.root, "rev-parse", "HEAD") == head  # nothing committed
    out = on_terminal(store, "conflicts", "resolve", "--auto", "--yes", columns=160)
    assert "Commit these" not in out
    assert git(store.root, "rev-parse", "HEAD") != head


def test_completion_offers_what_each_option_takes(store):  # noqa: F811
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    targets = complete(store, f"dmm conflicts resolve {conflict} --action deprecate --target ")
    assert sorted(targets) == sorted([OLD_LIMIT, NEW_LIMIT])
    assert sorted(complete(store, f"dmm conflicts resolve {conflict} --clarify ")) == sorted(
        [f"{OLD_LIMIT}=", f"{NEW_LIMIT}="])
    resolve(store, conflict, "--action", "dismiss", "--reason", "r")
    assert complete(store, "dmm conflicts undo ") == [conflict]
    made = j(store.dmm("write", "deprecate", "--memory", BEANSTALK, "--reason", "r", "--json"))
    assert store.dmm("review", "reject", made["proposal_id"], "--reason", "no").returncode == 0
    assert made["proposal_id"] in complete(store, "dmm review show prop_")
    ids = complete(store, "dmm show mem_")
    assert ids == sorted(ids)


def test_status_says_the_hooks_are_missing_and_counts_what_list_shows(store):  # noqa: F811
    text = store.dmm("status").stdout
    assert "git hooks:" in text and "not installed in this clone" in text
    assert store.dmm("hooks", "install").returncode == 0
    assert "git hooks: installed" in store.dmm("status").stdout
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    resolve(store, conflict, "--action", "deprecate", "--target", OLD_LIMIT, "--reason", "r")
    data = j(store.dmm("status", "--json"))
    listed = j(store.dmm("list", "--scope", "project", "--json"))["total"]
    assert data["memories"]["active_by_scope"]["project"] == listed
    assert data["hooks"]["post-commit"] == "installed"
    rows = {line.split()[0]: line.split()[-1] for line in store.dmm("status").stdout.splitlines()
            if line.startswith(("project", "(deprecated)"))}
    assert rows["project"] == str(listed) and rows["(deprecated)"] == "1"


def test_an_evidence_line_counts_what_it_lists():
    from dmm.conflicts.analyzers.semantic import shared_text

    nine = [f"`name{i}`" for i in range(9)]
    assert shared_text(nine) == ("the same code, names and values (9 shared: `name0`, `name1`, "
                                 "`name2`, `name3`, `name4`, `name5` and 3 more)")
    assert shared_text(nine[:4]).startswith("the same code, names and values (4 shared: ")
    assert "more" not in shared_text(nine[:4])


def test_log_and_history_name_the_same_person_for_a_commit(store):  # noqa: F811
    made = j(store.dmm("write", "update", "--memory", NEW_LIMIT, "--reason", "r", "--json",
                       "--proposed-by", "claude",
                       input=(store.memory / "project/limit_new.md").read_text()
                       + "\nMeasured at the edge of the network.\n"))
    assert store.dmm("review", "approve", made["proposal_id"], "--reason", "ok",
                     "--force").returncode == 0  # it would conflict: the reviewer defers it
    logged = {e["commit"]: e["who"] for e in j(store.dmm("log", "--json"))["entries"]}
    history = j(store.dmm("history", NEW_LIMIT, "--json"))["history"]
    shared = [h for h in history if h["commit"] in logged]
    assert shared and all(h["who"] == logged[h["commit"]] for h in shared)
    assert "claude" in {h["who"] for h in shared}  # the proposer, not the git user


def test_limits_and_headers_follow_one_convention(store):  # noqa: F811
    for args in (("list",), ("review", "list"), ("conflicts", "list"), ("usage", "top"),
                 ("usage", "stale")):
        assert "default: " not in store.dmm(*args, "--help").stdout.split("--limit")[1] \
            .split("\n  -")[0], args  # all of it
    for args in (("log",), ("usage", "queries")):
        assert "default: 50" in store.dmm(*args, "--help").stdout, args
    store.dmm("query", "upload size ceiling")
    rows = store.dmm("usage", "show", NEW_LIMIT, "--no-headers").stdout.splitlines()
    assert len(rows) == 1 and rows[0].startswith("project/limit_new.md\t")


def test_review_list_names_whom_its_by_column_shows(store):
    made = j(store.dmm("write", "deprecate", "--memory", BEANSTALK, "--reason", "old",
                       "--json"))
    pending = store.dmm("review", "list").stdout.splitlines()[0]
    assert "proposed by" in pending and "decided by" not in pending
    assert store.dmm("review", "reject", made["proposal_id"], "--reason", "no").returncode == 0
    rejected = store.dmm("review", "list", "--status", "rejected").stdout.splitlines()[0]
    assert "decided by" in rejected and "proposed by" not in rejected
