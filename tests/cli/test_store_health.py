"""Keeping a store healthy: old ephemeral notes, what a promotion does with `expires`,
`dmm init --upgrade`, and size checks that fire only where they help. Real repositories, the
real CLI."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys

from dmm.errors import ExitCode
from tests.conftest import git, memory_text, run_dmm

def days_ago(n: int) -> str:
    """A date ``n`` days before today, read when the test runs (not when the module was
    imported: a run that crosses midnight would make a 45-day-old note 46 days old)."""
    return (dt.date.today() - dt.timedelta(days=n)).isoformat()


def commit(repo, message: str = "memories") -> None:
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", message)


def problems(repo) -> dict[str, list[str]]:
    proc = repo.dmm("status", "--json")
    assert proc.returncode == 0, proc.stderr
    found: dict[str, list[str]] = {}
    for p in json.loads(proc.stdout)["problems"]:
        found.setdefault(p["path"], []).append(p["message"])
    return found


def test_ephemeral_notes_past_their_age_are_reported(repo):
    note = "A note about today's flaky test run, kept while the fix is under review."
    repo.add("ephemeral/old.md", "mem_2026_01_01_001", "CI runner pool was flaky", note,
             scope="ephemeral", extra=f"created: {days_ago(45)}\n")
    repo.add("ephemeral/recent.md", "mem_2026_01_01_002", "Staging database was restored", note,
             scope="ephemeral", extra=f"created: {days_ago(3)}\n")
    repo.add("ephemeral/dated.md", "mem_2026_01_01_003", "Release branch is frozen this month",
             note, scope="ephemeral",
             extra=f"created: {days_ago(45)}\nexpires: {days_ago(-9)}\n")
    repo.add("project/old_rule.md", "mem_2026_01_01_004", "Releases are tagged from main", note,
             extra=f"created: {days_ago(400)}\n")
    commit(repo)
    found = problems(repo)
    assert list(found) == ["ephemeral/old.md"]
    assert "45 days old" in found["ephemeral/old.md"][0]
    assert "promote it" in found["ephemeral/old.md"][0]
    assert "45 days old" in repo.dmm("validate").stdout + repo.dmm("validate").stderr
    assert repo.dmm("validate", "--strict").returncode == 1

    config = repo.root / ".dmm" / "config.toml"
    config.write_text(config.read_text() + "\n[store]\nephemeral_max_days = 0\n"
                      if "[store]" not in config.read_text() else
                      config.read_text().replace("ephemeral_max_days = 30",
                                                 "ephemeral_max_days = 0"))
    assert problems(repo) == {}


def ephemeral_store(repo):
    repo.add("ephemeral/flaky.md", "mem_2026_01_01_001", "The payments test is flaky on CI",
             "The payments integration test fails about one run in ten on CI because the "
             "sandbox rate-limits us; rerun it before investigating.", scope="ephemeral",
             extra="expires: 2026-12-31\n")
    commit(repo)


def promote(repo, *args) -> subprocess.CompletedProcess:
    return repo.dmm("write", "promote", "--path", "ephemeral/flaky.md", "--new-scope",
                    "project", "--reason", "held for five tasks", *args)


def proposed_text(repo, proc) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pid = json.loads(proc.stdout)["proposal_id"]
    return git(repo.root, "show", f"dmm/proposals/{pid}:.dmm/memory/project/flaky.md")


def test_promoting_a_note_that_expires_asks_what_becomes_of_the_date(repo):
    ephemeral_store(repo)
    refused = promote(repo, "--json")
    assert refused.returncode == ExitCode.INVALID_INPUT
    errors = json.loads(refused.stdout)["precheck_errors"]
    assert any("expires on 2026-12-31" in e and "keep" in e and "drop" in e for e in errors)
    assert git(repo.root, "branch", "--list", "dmm/proposals/*") == ""  # nothing proposed

    dropped = proposed_text(repo, promote(repo, "--expires", "drop", "--json"))
    assert "expires" not in dropped and "scope: project" in dropped
    assert "The payments integration test" in dropped
    for pid in re.findall(r"dmm/proposals/(\S+)", git(repo.root, "branch", "--list",
                                                            "dmm/proposals/*")):
        repo.dmm("review", "withdraw", pid, "--reason", "trying the next choice")
    kept = proposed_text(repo, promote(repo, "--expires", "keep", "--json"))
    assert "expires: 2026-12-31" in kept
    for pid in re.findall(r"dmm/proposals/(\S+)", git(repo.root, "branch", "--list",
                                                            "dmm/proposals/*")):
        repo.dmm("review", "withdraw", pid, "--reason", "trying the next choice")
    moved = proposed_text(repo, promote(repo, "--expires", "2027-06-30", "--json"))
    assert "expires: 2027-06-30" in moved and "2026-12-31" not in moved

    bad = promote(repo, "--expires", "someday", "--json")
    assert bad.returncode == ExitCode.INVALID_INPUT
    assert "not a date" in " ".join(json.loads(bad.stdout)["precheck_errors"])


def test_on_a_terminal_promote_asks(repo):
    ephemeral_store(repo)
    leader, follower = os.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "dmm", "write", "promote", "--path",
                                 "ephemeral/flaky.md", "--new-scope", "project", "--reason",
                                 "held"], cwd=repo.root, stdin=follower, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        os.write(leader, b"keep\n")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    assert proc.returncode == 0, err
    assert "expires on 2026-12-31" in err  # the question
    pid = out.strip()
    text = git(repo.root, "show", f"dmm/proposals/{pid}:.dmm/memory/project/flaky.md")
    assert "expires: 2026-12-31" in text


def test_init_upgrade_refreshes_boot_and_comments_and_keeps_every_setting(git_repo):
    assert run_dmm("init", "--no-hooks", cwd=git_repo).returncode == 0
    config = git_repo / ".dmm" / "config.toml"
    boot = git_repo / ".dmm" / "BOOT.md"
    current_boot, current_config = boot.read_text(), config.read_text()
    # what an older dmm wrote: other comments, one setting changed by the team, one setting
    # that did not exist yet, another tool's section and an outdated BOOT.md
    old = re.sub(r"(?m)^# .*\n", "# old comment\n", current_config)
    old = old.replace("default_budget = 1200", "default_budget = 900")
    old = re.sub(r"(?m)^ephemeral_max_days = .*\n", "", old)
    old += "\n[tool.other]\nname = \"kept as written\"  # theirs\n"
    config.write_text(old)
    boot.write_text("# BOOT from an older dmm\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "a store made by an older dmm")

    proc = run_dmm("init", "--upgrade", "--no-hooks", "--json", cwd=git_repo)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert sorted(result["rewritten"]) == [".dmm/BOOT.md", ".dmm/config.toml"]
    assert {"setting": "query.default_budget", "value": 900, "default": 1200} in \
        result["customised"]
    assert boot.read_text() == current_boot.replace("1200", "900")
    upgraded = config.read_text()
    assert "# old comment" not in upgraded and "default_budget = 900" in upgraded
    assert "ephemeral_max_days = 30" in upgraded
    assert '[tool.other]\nname = "kept as written"  # theirs' in upgraded
    assert upgraded.startswith(current_config.replace("default_budget = 1200",
                                                      "default_budget = 900"))
    assert json.loads(run_dmm("query", "anything", "--json", cwd=git_repo).stdout)["stats"][
        "budget"] == 900

    git(git_repo, "commit", "-qam", "upgrade dmm's files")
    again = run_dmm("init", "--upgrade", "--no-hooks", cwd=git_repo)
    assert again.returncode == 0 and "nothing changed" in again.stderr

    boot.write_text(boot.read_text() + "\nOur own note, not committed yet.\n")
    config.write_text(old)
    git(git_repo, "add", str(config))
    git(git_repo, "commit", "-qm", "back to old config")
    refused = run_dmm("init", "--upgrade", "--no-hooks", cwd=git_repo)
    assert refused.returncode == ExitCode.INVALID_INPUT
    assert "BOOT.md has changes git does not hold" in refused.stderr
    assert boot.read_text().endswith("Our own note, not committed yet.\n")
    assert config.read_text() == old  # nothing was upgraded


def test_the_size_checks_fire_where_they_help(git_repo):
    assert run_dmm("init", "--no-hooks", cwd=git_repo).returncode == 0
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "store")
    boot = (git_repo / ".dmm" / "BOOT.md").read_text()
    example = re.search(r"dmm write propose --path (\S+) --reason \"[^\"]*\" <<'EOF'\n(.*?)\n"
                        r" *EOF", boot, re.S)
    content = "\n".join(line[4:] for line in example.group(2).splitlines())

    def warnings(path: str, text: str) -> list[str]:
        proc = run_dmm("write", "propose", "--path", path, "--reason", "r", "--json",
                       cwd=git_repo, input=text)
        data = json.loads(proc.stdout)
        assert data["success"], data
        processed = json.loads(run_dmm("review", "process", data["proposal_id"], "--json",
                                       cwd=git_repo).stdout)
        return data["precheck_warnings"] + [i["message"] for i in processed["issues"]
                                            if i["category"] == "quality"]

    assert warnings(example.group(1), content) == []  # BOOT.md's own example passes
    starter = (git_repo / ".dmm/memory/baseline/dmm_usage.md").read_text()
    assert not any("tokens" in w for w in warnings(
        "project/starter_copy.md", re.sub(r"(?m)^(id|scope|status|created): .*\n", "",
                                           starter)))

    front = "---\ntags: [billing]\npriority: 0.5\nconfidence: active\n---\n\n"
    short = warnings("project/short.md", front + "# Invoices restart yearly\n\nEach April.\n")
    assert any("too short" in w for w in short)
    long_body = " ".join(f"Step {i}: check the ledger entry against the bank statement."
                         for i in range(120))
    long = warnings("project/long.md", front + "# The month-end ledger reconciliation\n\n"
                    + long_body + "\n\nWhy: the auditors require it.\n")
    assert any("crowds a pack" in w for w in long)


def test_status_counts_every_problem_and_lists_a_page_errors_first(repo):
    """`dmm status` counts problems in the cache and shows a page of them, errors first, so a
    store with thousands of warnings answers in the time of the page; `validate` lists all."""
    from dmm.index import read
    from dmm.index.refresh import open_fresh

    note = "A note kept while the fix is under review, with enough words to be a memory."
    for n in range(3):  # warnings: deprecated, left in their scope's folder
        repo.add(f"project/a{n}.md", f"mem_2026_01_02_00{n}", f"Old rule {n}", note,
                 status="deprecated")
    repo.add("ephemeral/old.md", "mem_2026_01_01_001", "CI runner pool was flaky", note,
             scope="ephemeral", extra=f"created: {days_ago(45)}\n")
    repo.add("project/frozen.md", "mem_2026_01_01_002", "Release branch is frozen", note,
             extra=f"expires: {days_ago(2)}\n")
    repo.write("project/zz_broken.md", "---\nid: [unclosed\n---\n\n# Broken\n")  # an error
    commit(repo)
    proc = repo.dmm("status", "--json")
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)
    validate = json.loads(repo.dmm("validate", "--json").stdout)
    every = validate["problems"]
    assert status["errors"] == sum(p["severity"] == "error" for p in every) == 1
    assert status["warnings"] == len(every) - 1 == 5
    assert status["problems"][0]["path"] == "project/zz_broken.md"  # first, though last by path
    assert sorted(map(json.dumps, status["problems"])) == sorted(map(json.dumps, every))
    assert status["more_problems"] == 0
    conn, _ = open_fresh(repo.ws)
    try:
        page, errors, warnings = read.problem_page(conn, 2, ephemeral_days=30)
        everything = read.problems(conn, ephemeral_days=30)
    finally:
        conn.close()
    assert (errors, warnings) == (1, 5) and len(everything) == 6
    assert [p.path for p in page] == ["project/zz_broken.md", "ephemeral/old.md"]
    text = repo.dmm("status").stdout
    assert "problems: 1 error, 5 warnings" in text
    assert text.index("zz_broken.md") < text.index("ephemeral/old.md")
