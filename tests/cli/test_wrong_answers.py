"""Answers the everyday commands used to get wrong: events under one memory only, ids handed out
twice, partial scans that forgot other analyzers, counts that disagreed with lists, exit
codes that disagreed with the docs. Real repositories, the real CLI."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from dmm.errors import ExitCode
from tests.conflicts.test_resolution import (BEANSTALK, NEW_LIMIT, OLD_LIMIT, cid, conflicts,
                                             resolve)
from tests.conflicts.test_resolution import store  # noqa: F401 - a fixture
from tests.conftest import git, run_dmm
from tests.proposals.test_writeback import committed  # noqa: F401 - a fixture

MEMORY = ("---\ntags: [billing]\npriority: 0.6\nconfidence: active\n---\n\n"
          "# Invoices are numbered per tax year\n\nInvoice numbers restart at 1 each April.\n")


def log(repo, *args) -> list[dict]:
    proc = repo.dmm("log", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["entries"]


def test_an_event_naming_several_memories_is_logged_under_each(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    merged = resolve(store, conflict, "--action", "merge", "--content",
                     "# Upload ceiling of the gateway\n\nThe gateway refuses uploads above "
                     "50 MB with 413.\n", "--reason", "one memory for one limit")
    created = merged["memories_created"][0]
    for memory in (OLD_LIMIT, NEW_LIMIT, created):
        events = [e for e in log(store, "--memory", memory) if e["conflict_id"] == conflict]
        assert [e["event"] for e in events] == ["resolved:merge"], memory
    entry = log(store, "--decision", "resolved:merge")[0]
    assert sorted(entry["memory_ids"][:2]) == [OLD_LIMIT, NEW_LIMIT]
    assert entry["memory_ids"][2:] == [created]
    assert sorted(entry["trailers"]["Dmm-Memory"]) == [OLD_LIMIT, NEW_LIMIT]
    assert entry["trailers"]["Dmm-Created"] == [created]
    text = store.dmm("log", "--limit", "1").stdout
    assert conflict in text and OLD_LIMIT in text and created in text and "()" not in text

    # an automatic resolution is the resolver's, as its trailer says, not the user's
    assert store.dmm("conflicts", "resolve", "--auto").returncode == 0
    auto = [e for e in log(store) if e["event"].startswith("resolved:") and
            e["trailers"].get("Dmm-Resolved-By") == ["dmm-auto"]]
    assert auto and all(e["who"] == "dmm-auto" for e in auto)

    bogus = store.dmm("log", "--decision", "bogus")
    assert bogus.returncode == ExitCode.USAGE and "resolved:merge" in bogus.stderr
    assert "resolved:" in store.dmm("log", "--help").stdout
    # paths as the user has them: repository-relative, gone files included
    moved = log(store, "--path", ".dmm/memory/project/limit_old.md")
    assert moved == log(store, "--path", "project/limit_old.md")


def test_the_id_of_a_rejected_proposal_is_never_handed_out_again(committed):
    first = json.loads(committed.dmm("write", "propose", "--path", "project/billing/a.md",
                                     "--reason", "r", "--json", input=MEMORY).stdout)
    assert first["success"], first
    rejected = committed.dmm("review", "reject", first["proposal_id"], "--reason", "no")
    assert rejected.returncode == 0, rejected.stderr
    second = json.loads(committed.dmm("write", "propose", "--path", "project/billing/b.md",
                                      "--reason", "r", "--json",
                                      input=MEMORY.replace("April", "May")).stdout)
    assert second["success"], second
    assert second["memory_id"] != first["memory_id"]
    assert len(log(committed, "--memory", second["memory_id"])) == 1


def test_a_partial_scan_replaces_only_its_own_analyzers_findings(store):
    before = {k: c for k, c in conflicts(store).items()}
    assert before
    others = {k for k, c in before.items() if "negation" not in c["methods"]}
    assert others  # found by analyzers the partial scan below does not run
    scan = store.dmm("conflicts", "scan", "--methods", "negation", "--full")
    assert scan.returncode == 0, scan.stderr
    after = conflicts(store)
    assert others <= set(after)
    for key in others:
        assert after[key]["methods"] == before[key]["methods"]
    # and the store is not marked as scanned by everything: a later list rescans nothing lost
    assert set(conflicts(store)) >= others


def test_stats_count_what_list_shows_and_list_is_most_confident_first(store):
    flagged = store.dmm("conflicts", "flag", "--memories", f"{BEANSTALK},{OLD_LIMIT}",
                        "--description", "the queue limits uploads", "--json")
    assert flagged.returncode == 0, flagged.stderr
    listed = json.loads(store.dmm("conflicts", "list", "--status", "all", "--json").stdout)
    stats = json.loads(store.dmm("conflicts", "stats", "--json").stdout)
    assert stats["total"] == listed["total"] == len(listed["conflicts"])
    for key in ("by_type", "by_method", "by_status"):
        assert sum(stats[key].values()) == stats["total"], key
    assert stats["by_status"].get("flagged") == 1
    confidences = [c["confidence"] for c in listed["conflicts"]]
    assert confidences == sorted(confidences, reverse=True)
    unresolved = json.loads(store.dmm("conflicts", "list", "--json").stdout)["conflicts"]
    shown = [c["confidence"] for c in unresolved]
    assert shown == sorted(shown, reverse=True) and 1.0 in shown  # the flag, first


def test_exit_codes_are_the_documented_ones(store):
    missing = store.dmm("write", "deprecate", "--path", "project/nope.md", "--reason", "x")
    assert missing.returncode == ExitCode.NOT_FOUND, missing.stderr
    same = (store.memory / "project/limit_old.md").read_text()  # a duplicate: rejected
    copy = "---\ntags: [uploads, limits]\npriority: 0.5\nconfidence: active\n---\n\n# " + \
        same.split("\n# ", 1)[1]
    made = json.loads(store.dmm("write", "propose", "--path", "project/limit_copy.md",
                                "--reason", "r", "--json", input=copy).stdout)
    assert made["success"], made
    processed = store.dmm("review", "process", made["proposal_id"])
    assert "REJECTED" in processed.stdout, processed.stdout
    assert processed.returncode == ExitCode.PROBLEMS_FOUND
    checked = store.dmm("conflicts", "check", "--memories", f"{OLD_LIMIT},{NEW_LIMIT}")
    assert checked.returncode == ExitCode.PROBLEMS_FOUND


@pytest.mark.slow
def test_ctrl_c_in_the_interactive_resolver_exits_130(store):
    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(sys.executable, ["-m", "dmm", "conflicts", "resolve", "--interactive"],
                          cwd=str(store.root), env=dict(os.environ), encoding="utf-8",
                          timeout=60, dimensions=(50, 140))
    child.expect(r"\[q\] quit: ")
    # at once: a signal that lands between the prompt and the wait must not be lost (the
    # wait is a select on the terminal and a wakeup pipe; tests/cli/test_prompt.py shows the
    # case of a signal that came before the wait began, deterministically)
    child.sendintr()
    child.expect("stopped: 0 resolved")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == ExitCode.INTERRUPTED
    assert git(store.root, "status", "--porcelain") == ""  # nothing half done


def test_a_fresh_clone_says_its_conflicts_were_not_checked(store, tmp_path):
    assert store.dmm("conflicts", "scan").returncode == 0
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(store.root), str(clone))
    task = "upload size ceiling of the gateway"
    pack = json.loads(run_dmm("query", task, "--json", cwd=clone).stdout)
    assert {OLD_LIMIT, NEW_LIMIT} <= {m["memory_id"] for m in pack["retrieved"]}
    assert any("were not checked" in w for w in pack["warnings"]), pack["warnings"]
    assert run_dmm("conflicts", "scan", cwd=clone).returncode == 0
    pack = json.loads(run_dmm("query", task, "--json", cwd=clone).stdout)
    assert not any("were not checked" in w for w in pack["warnings"])
    assert pack["conflicts"]  # now checked, and the contradiction is named


def commit(root, message: str) -> str:
    """Commit everything with the real git (hooks run); what the hooks said on stderr."""
    git(root, "add", "-A")
    proc = subprocess.run(["git", "commit", "-qm", message], cwd=root, capture_output=True,
                          text=True, check=True)
    return proc.stderr


def test_a_rebuilt_cache_announces_no_old_conflicts(store):
    """After `dmm reindex` or a deleted cache, the next commit's hook rescans everything:
    what it finds again is not new, and a dismissed conflict is decided, not new."""
    assert store.dmm("hooks", "install").returncode == 0
    dismissed = cid(store, BEANSTALK, "mem_2026_01_10_001")
    assert store.dmm("conflicts", "dismiss", dismissed, "--reason", "tested").returncode == 0
    for rebuild in (("reindex",), None):
        if rebuild:
            assert store.dmm(*rebuild).returncode == 0
        else:
            shutil.rmtree(store.ws.state_dir)
        store.add("project/unrelated.md", f"mem_2026_03_0{1 if rebuild else 2}_001",
                  "Release notes are written in the pull request",
                  "Every pull request carries its own release note.")
        notice = commit(store.root, "an unrelated memory")
        assert "new memory conflict" not in notice, notice
    # a conflict the commit brings is still announced
    store.add("project/limit_third.md", "mem_2026_04_01_001", "Upload size ceiling at the gateway",
              "The ceiling is 2 MB. Uploads through the public gateway are refused above the "
              "size ceiling, answered with status 413.", tags="[uploads, limits]")
    notice = commit(store.root, "a third limit")
    assert "2 new memory conflicts found (2 contradictory)" in notice, notice


def test_review_process_takes_the_id_as_every_review_command_does(committed):  # noqa: F811
    proc = committed.dmm("write", "propose", "--path", "project/billing/invoices.md",
                         "--reason", "numbering rule", input=MEMORY)
    assert proc.returncode == 0, proc.stderr
    hint = re.search(r"dmm review process (prop_\w+)", proc.stderr + proc.stdout)
    assert hint, proc.stderr  # the hint names the positional form
    pid = hint.group(1)
    processed = committed.dmm("review", "process", pid, "--json")
    assert json.loads(processed.stdout)["proposal_id"] == pid, processed.stderr
    neither = committed.dmm("review", "process")
    assert neither.returncode == ExitCode.USAGE and "a proposal id or --all" in neither.stderr


@pytest.mark.parametrize("args", [
    ("conflicts", "show", "conflict_000000000000"),  # not found
    ("conflicts", "list", "--status", "bogus"),  # a usage error, found by click
    ("review", "show", "nope"),
    ("usage", "show", "mem_2099_01_01_001"),
    ("log", "--decision", "bogus"),
])
def test_json_means_json_on_stdout_even_for_errors(store, args):
    """(A write that fails answers with its own ProposalResult, success false, as before.)"""
    proc = store.dmm(*args, "--json")
    assert proc.returncode != 0
    error = json.loads(proc.stdout)
    assert error["exit_code"] == proc.returncode and error["error"]
    assert set(error) == {"error", "hint", "exit_code"}
    assert "error" in proc.stderr.lower()  # the person at the terminal still reads it
    plain = store.dmm(*args)
    assert plain.returncode == proc.returncode and plain.stdout == ""


def test_history_shows_the_decision_that_stands(committed):  # noqa: F811
    proc = committed.dmm("write", "propose", "--path", "project/billing/invoices.md",
                         "--reason", "numbering rule", input=MEMORY)
    pid = proc.stdout.strip()
    assert proc.returncode == 0 and pid, proc.stderr
    assert committed.dmm("review", "defer", pid, "--reason", "ask finance").returncode == 0
    approved = committed.dmm("review", "approve", pid, "--reason", "finance agreed")
    assert approved.returncode == 0, approved.stderr
    history = json.loads(committed.dmm("history", "project/billing/invoices.md",
                                       "--json").stdout)["history"]
    assert [e["decision"] for e in history] == ["approved"]
    assert "[deferred]" not in committed.dmm("history", "project/billing/invoices.md").stdout


def test_every_command_names_a_memory_by_id_or_path(store):
    old_path, repo_path = "project/limit_old.md", ".dmm/memory/project/limit_old.md"
    by_id = conflicts(store, "--memory", OLD_LIMIT)
    assert by_id and conflicts(store, "--memory", old_path) == by_id
    assert conflicts(store, "--memory", repo_path) == by_id
    unknown = store.dmm("conflicts", "list", "--memory", "project/nope.md")
    assert unknown.returncode == ExitCode.NOT_FOUND  # not a silent "No conflicts"
    checked = store.dmm("conflicts", "check", "--memories", f"{repo_path},project/limit_new.md")
    assert checked.returncode == 1, checked.stderr  # they conflict
    flagged = store.dmm("conflicts", "flag", "--memories", f"{old_path},project/jobs/sqs.md",
                        "--description", "the queue limits uploads", "--json")
    assert flagged.returncode == 0, flagged.stderr
    never = store.dmm("usage", "show", old_path)  # a memory no query returned yet: zeros
    assert never.returncode == 0 and "never" in never.stdout, never.stderr
    assert store.dmm("usage", "show", "mem_1999_01_01_001").returncode == ExitCode.NOT_FOUND
    proposed = store.dmm("write", "deprecate", "--path", BEANSTALK, "--reason", "moved to SQS",
                         "--json")
    result = json.loads(proposed.stdout)
    assert result["success"], result
    shown = json.loads(store.dmm("review", "show", result["proposal_id"], "--json").stdout)
    assert "project/jobs/beanstalk.md" in json.dumps(shown)


def test_a_teammates_clone_is_told_what_init_did(store, tmp_path):
    clone = tmp_path / "clone"
    git(store.root.parent, "clone", "-q", str(store.root), str(clone))
    proc = run_dmm("init", cwd=clone)
    assert proc.returncode == 0, proc.stderr
    assert "store found" in proc.stderr and "installed git hooks" in proc.stderr
    assert "commit the store" not in proc.stderr  # it is committed already
    assert git(clone, "status", "--porcelain") == ""
    again = run_dmm("init", cwd=clone)
    assert "nothing changed" in again.stderr


def test_status_and_validate_report_expired_memories(store):
    store.add("project/freeze.md", "mem_2025_12_01_001", "Code freeze until the audit ends",
              "No merges to main until the audit ends.", extra="expires: 2025-12-31\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "a memory that expired")
    report = json.loads(store.dmm("validate", "--json").stdout)
    expired = [p for p in report["problems"] if p["path"] == "project/freeze.md"]
    assert [p["field"] for p in expired] == ["expires"] and "expired on 2025-12-31" in \
        expired[0]["message"]
    assert "expired on 2025-12-31" in store.dmm("status").stdout
    assert store.dmm("validate", "--strict").returncode == 1  # a warning fails --strict


def test_agents_get_one_story(git_repo):
    """BOOT.md, the starter memory and the pack agree: propose, never edit; prefer the newer,
    more confident memory, and the pack shows both facts."""
    assert run_dmm("init", "--no-hooks", cwd=git_repo).returncode == 0
    starter = (git_repo / ".dmm/memory/baseline/dmm_usage.md").read_text()
    boot = (git_repo / ".dmm/BOOT.md").read_text()
    assert "dmm write propose" in starter and "never edit" in starter
    assert "never edit `.dmm/memory/` directly" in boot
    assert "commit it on its own" not in starter
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "store")
    pack = run_dmm("query", "how do I use the memory", cwd=git_repo)
    assert pack.returncode == 0, pack.stderr
    assert "created " in pack.stdout and " · confidence stable · " in pack.stdout
    data = json.loads(run_dmm("query", "how do I use the memory", "--json",
                              cwd=git_repo).stdout)
    entry = data["baseline"][0]
    assert entry["created"] and entry["confidence"] == "stable"


def test_conflicts_show_puts_both_memories_side_by_side_with_the_way_out(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    out = store.dmm("conflicts", "show", conflict).stdout
    assert "The ceiling is 8 MB." in out and "The ceiling is 50,000,000 bytes." in out
    assert any(" | " in line and "mem_2025_06_10_001" in line and OLD_LIMIT in line
               for line in out.splitlines())  # one row, two columns
    assert f"dmm conflicts resolve {conflict} --action deprecate --target {OLD_LIMIT}" in out
    assert f"dmm conflicts dismiss {conflict}" in out
    assert store.dmm("conflicts", "dismiss", conflict, "--reason", "tested").returncode == 0
    decided = store.dmm("conflicts", "show", conflict).stdout
    assert "decision: dismissed" in decided and "to resolve it" not in decided


def test_writing_a_memory_without_hand_written_frontmatter(committed, tmp_path):  # noqa: F811
    body = tmp_path / "body.md"
    body.write_text("Every list endpoint pages with an opaque cursor; offsets drift as rows "
                    "are inserted.\n\nWhy: clients saw duplicates when paging by offset.\n")
    made = json.loads(committed.dmm(
        "write", "propose", "--path", "project/api/paging.md", "--reason", "agreed in review",
        "--title", "List endpoints page with cursors", "--tags", "api, paging",
        "--priority", "0.7", "--file", str(body), "--json").stdout)
    assert made["success"], made
    diff = json.loads(committed.dmm("review", "show", made["proposal_id"], "--json").stdout)
    for line in ("+# List endpoints page with cursors", "+tags: [api, paging]",
                 "+priority: 0.7", "+confidence: active", "+scope: project"):
        assert line in diff["diff"], line
    both = committed.dmm("write", "propose", "--path", "project/api/x.md", "--reason", "r",
                         "--title", "X", input=MEMORY)
    assert both.returncode == ExitCode.INVALID_INPUT and "own frontmatter" in both.stderr
    # $EDITOR on a template, as a person at a terminal gets it
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/Title of the memory/Refunds go through the "
                      "ledger service/' \"$1\"\n")
    editor.chmod(0o755)
    edited = committed.dmm("write", "propose", "--path", "project/billing/refunds.md",
                           "--reason", "from the incident review", "--edit", "--json",
                           env={"EDITOR": str(editor), "VISUAL": str(editor)})
    result = json.loads(edited.stdout)
    assert result["success"], (result, edited.stderr)
    shown = json.loads(committed.dmm("review", "show", result["proposal_id"], "--json").stdout)
    assert "+# Refunds go through the ledger service" in shown["diff"]
    unchanged = committed.dmm("write", "propose", "--path", "project/billing/none.md",
                              "--reason", "r", "--edit", env={"EDITOR": "true",
                                                              "VISUAL": "true"})
    assert unchanged.returncode == ExitCode.INVALID_INPUT and "nothing was proposed" in \
        unchanged.stderr


def test_a_patch_from_a_file_or_stdin(committed, tmp_path):  # noqa: F811
    target = committed.memory / "project/db/migrations.md"
    before = target.read_text()
    after = before.replace("reviewed with the code", "reviewed with the code by two people", 1)
    import difflib

    diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                        "a/migrations.md", "b/migrations.md"))
    patch = tmp_path / "change.diff"
    patch.write_text(diff)
    for args, stdin in ((("--patch-file", str(patch)), None), (("--patch-file", "-"), diff)):
        made = committed.dmm("write", "update", "--path", "project/db/migrations.md",
                             "--reason", "two reviewers", *args, "--json", input=stdin)
        result = json.loads(made.stdout)
        assert result["success"], (result, made.stderr)
        shown = json.loads(committed.dmm("review", "show", result["proposal_id"],
                                         "--json").stdout)
        assert "by two people" in shown["diff"]
        committed.dmm("review", "withdraw", result["proposal_id"], "--reason", "tested")


def test_closed_proposals_are_visible(committed):  # noqa: F811
    def propose(path: str, title: str) -> str:
        proc = committed.dmm("write", "propose", "--path", path, "--reason", f"about {title}",
                             "--title", title, "--tags", "billing",
                             "--content", f"{title}. This matters for every invoice we send.")
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    kept = propose("project/billing/a.md", "Invoices carry the VAT number")
    dropped = propose("project/billing/b.md", "Invoices are printed")
    gone = propose("project/billing/c.md", "Invoices are faxed")
    assert committed.dmm("review", "approve", kept, "--reason", "right").returncode == 0
    assert committed.dmm("review", "reject", dropped, "--reason", "we never print").returncode == 0
    assert committed.dmm("review", "withdraw", gone, "--reason", "obsolete").returncode == 0

    def ids(status: str) -> list[str]:
        data = json.loads(committed.dmm("review", "list", "--status", status, "--json").stdout)
        return [p["proposal_id"] for p in data["proposals"]]

    assert ids("approved") == [kept] and ids("rejected") == [dropped]
    assert ids("withdrawn") == [gone] and set(ids("closed")) == {kept, dropped, gone}
    assert ids("open") == []  # nothing open
    assert set(ids("all")) == {kept, dropped, gone}  # all: open and closed
    shown = json.loads(committed.dmm("review", "show", dropped, "--json").stdout)
    assert shown["status"] == "rejected" and shown["reason"] == "we never print"
    assert "+# Invoices are printed" in shown["diff"]
    text = committed.dmm("review", "show", kept).stdout
    assert "approved" in text and "+# Invoices carry the VAT number" in text
