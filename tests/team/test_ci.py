"""CI on a forge, simulated with git: the generated GitHub Actions workflow's commands run in a
clone checked out as Actions checks out a pull request, with the variables Actions sets; the
annotations follow GitHub's documented workflow-command format."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from dmm import ci
from tests.conftest import git, memory_text, run_dmm
from tests.team.conftest import memory

# https://docs.github.com/actions/reference/workflow-commands-for-github-actions
# ::{error|warning|notice} file={name},line={line},title={title}::{message}, where a property
# escapes % \r \n : , and the message escapes % \r \n
COMMAND = re.compile(r"^::(error|warning|notice) file=([^,:\r\n]+),line=(\d+),"
                     r"title=([^,:\r\n]*)::([^\r\n]*)$")
# what the team's CI would install: this dmm from its repository, pinned to a commit
INSTALL = "dmm-memory @ git+https://git.example.com/team/dmm.git@" + "0" * 40


def _pull_request(team, branch: str, number: int = 7) -> Path:
    """A clone checked out as actions/checkout (fetch-depth: 0) checks out a pull request: the
    detached merge of the branch into the base, every branch as origin/*."""
    runner = team.base / f"runner-{number}"
    git(team.base, "clone", "-q", str(team.origin), str(runner))
    git(runner, "checkout", "-q", "--detach", "origin/main")
    git(runner, "-c", "user.name=GitHub", "-c", "user.email=noreply@github.com", "merge", "-q",
        "--no-ff", f"origin/{branch}", "-m", f"Merge {branch} into main")
    return runner


def _actions_env(runner: Path, branch: str, tmp: Path, number: int = 7) -> dict:
    summary = tmp / f"summary-{number}.md"
    summary.write_text("")
    return {"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_BASE_REF": "main", "GITHUB_HEAD_REF": branch,
            "GITHUB_REF": f"refs/pull/{number}/merge", "GITHUB_WORKSPACE": str(runner),
            "GITHUB_SHA": git(runner, "rev-parse", "HEAD").strip(),
            "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_REPOSITORY": "team/app"}


def _workflow_commands(team) -> list[str]:
    """The `run` steps of the generated workflow, without the install step (dmm is installed
    here already; the line is tests/team/test_ci_install.py's)."""
    team.lead.dmm("ci", "setup", "--install", INSTALL)
    workflow = yaml.safe_load((team.lead.root / ".github/workflows/dmm.yml").read_text())
    assert workflow[True]["pull_request"]["paths"] == [".dmm/**"]  # `on:` reads as True
    steps = workflow["jobs"]["memory"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert steps[0]["with"]["fetch-depth"] == 0
    runs = [s["run"] for s in steps if "run" in s]
    assert runs[0].startswith("python -m pip install ")
    return runs[1:]


def _run_steps(commands: list[str], cwd: Path, env: dict) -> list[subprocess.CompletedProcess]:
    bindir = Path(sys.executable).parent  # where this dmm is installed, first on PATH
    full = {**os.environ, **env, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    full.pop("DMM_DEBUG", None)
    return [subprocess.run(command, shell=True, cwd=cwd, env=full, capture_output=True,
                           text=True) for command in commands]


def test_the_generated_workflow_annotates_a_pull_request(team, tmp_path):
    lead = team.lead
    lead.git("add", "-A")
    commands = _workflow_commands(team)
    # a teammate's hand-made pull request: one memory with a bad priority, one near copy
    lead.git("checkout", "-q", "-b", "feature/memories")
    lead_mem = lead.root / ".dmm" / "memory" / "project"
    lead_mem.mkdir(parents=True, exist_ok=True)
    (lead_mem / "bad.md").write_text(memory_text("mem_2026_01_01_001", "Cache keys",
                                                 priority=5, tags="[cache]"))
    (lead_mem / "percent.md").write_text(memory_text(
        "mem_2026_01_01_002", "Sampling is 100% of requests, always",
        "Trace sampling is 100%, because: every request matters, and it is cheap.",
        tags="[tracing]"))
    lead.git("add", "-A")
    lead.git("commit", "-qm", "memories")
    lead.git("push", "-q", "origin", "feature/memories")
    runner = _pull_request(team, "feature/memories")
    env = _actions_env(runner, "feature/memories", tmp_path)
    [step] = _run_steps(commands, runner, env)
    assert step.returncode == 1, step.stderr  # an error needs a person
    lines = step.stdout.splitlines()
    assert lines and all(COMMAND.match(line) for line in lines), lines
    errors = [COMMAND.match(line).groups() for line in lines if line.startswith("::error")]
    assert any(g[1] == ".dmm/memory/project/bad.md" and "priority" in g[4] for g in errors)
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert summary.startswith("## dmm: memory changes")
    assert "| error | `.dmm/memory/project/bad.md` | dmm schema |" in summary
    assert "A person needs to look" in summary


def test_a_clean_proposal_passes_and_main_reports_undecided_conflicts(team, tmp_path):
    commands = _workflow_commands(team)
    agent = team.clone("agent")
    pid = agent.propose("project/queue.md", "Jobs run on the queue worker")
    agent.sync()
    runner = _pull_request(team, f"dmm/proposals/{pid}")
    env = _actions_env(runner, f"dmm/proposals/{pid}", tmp_path)
    [step] = _run_steps(commands, runner, env)
    assert step.returncode == 0, (step.stdout, step.stderr)
    assert not [line for line in step.stdout.splitlines() if line.startswith("::error")]
    # on main (a push): two memories that contradict each other
    lead = team.lead
    lead.git("pull", "-q")
    (lead.root / ".dmm/memory/project").mkdir(parents=True, exist_ok=True)
    (lead.root / ".dmm/memory/project/a.md").write_text(memory_text(
        "mem_2026_01_01_001", "Upload size ceiling on the gateway",
        "The upload ceiling of the gateway is 8 MB for every request body.", tags="[uploads]"))
    (lead.root / ".dmm/memory/project/b.md").write_text(memory_text(
        "mem_2026_01_02_001", "Upload size ceiling of the gateway",
        "The upload ceiling of the gateway is 50 MB for every request body.", tags="[uploads]"))
    lead.git("add", "-A")
    lead.git("commit", "-qm", "two ceilings")
    push_env = {k: v for k, v in env.items() if k not in ("GITHUB_BASE_REF", "GITHUB_HEAD_REF")}
    push_env.update(GITHUB_EVENT_NAME="push", GITHUB_REF="refs/heads/main")
    [step] = _run_steps(commands, lead.root, push_env)
    assert step.returncode == 1
    warned = {COMMAND.match(line).group(2) for line in step.stdout.splitlines()}
    assert warned == {".dmm/memory/project/a.md", ".dmm/memory/project/b.md"}
    assert "conflict scan" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()


def test_gitlab_gets_plain_lines_and_the_template_runs_the_same_check(team, tmp_path):
    team.lead.dmm("ci", "setup", "--install", INSTALL)
    template = yaml.safe_load((team.lead.root / ".gitlab/dmm.gitlab-ci.yml").read_text())
    script = template["dmm-memory"]["script"]
    assert script[-1] == "dmm ci check" and template["dmm-memory"]["variables"]["GIT_DEPTH"] == "0"
    agent = team.clone("agent")
    (agent.root / ".dmm/memory/project").mkdir(parents=True, exist_ok=True)
    (agent.root / ".dmm/memory/project/bad.md").write_text(memory("Cache keys").replace(
        "priority: 0.5", "priority: high"))
    agent.git("checkout", "-q", "-b", "mr")
    agent.git("add", "-A")
    agent.git("commit", "-qm", "bad")
    env = {"CI": "true", "GITLAB_CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
           "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}
    steps = _run_steps(script[1:], agent.root, env)
    assert steps[-1].returncode == 1
    assert re.search(r"^\.dmm/memory/project/bad\.md:3: error: \[dmm schema\] .*priority",
                     steps[-1].stdout, re.M), steps[-1].stdout
    assert "::" not in steps[-1].stdout


def test_workflow_commands_escape_what_github_would_misread():
    report = ci.CiReport("pull_request", findings=[ci.Finding(
        "error", ".dmm/memory/a,b:c.md", "dmm: schema", "100% wrong\nsecond line\r")])
    [line] = ci.github_commands(report)
    assert line == ("::error file=.dmm/memory/a%2Cb%3Ac.md,line=1,title=dmm%3A schema::"
                    "100%25 wrong%0Asecond line%0D")
    assert COMMAND.match(line)
    table = ci.summary(report)
    assert "<" not in ci.summary(ci.CiReport("main", findings=[ci.Finding(
        "warning", "x.md", "t", "<script>alert(1)</script> | pipe")])).split("| --- |")[-1]
    assert "100% wrong second line" in table


def test_the_pre_commit_hook_entry_refuses_an_invalid_memory(team):
    """dmm's .pre-commit-hooks.yaml entry, run the way the pre-commit framework runs it (its
    entry, no file names, for commits touching its files) from a real git pre-commit hook."""
    hooks = yaml.safe_load((Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml")
                           .read_text())
    entry = next(h for h in hooks if h["id"] == "dmm-validate")
    assert entry["pass_filenames"] is False and entry["language"] == "python"
    files = re.compile(entry["files"])
    lead = team.lead
    bindir = Path(sys.executable).parent
    hook = lead.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\n"
                    "git diff --cached --name-only | grep -qE '" + entry["files"] + "' || exit 0\n"
                    f'PATH="{bindir}:$PATH" exec {entry["entry"]}\n')
    hook.chmod(0o755)
    (lead.root / ".dmm/memory/project").mkdir(parents=True, exist_ok=True)
    bad = lead.root / ".dmm/memory/project/bad.md"
    bad.write_text(memory("Cache keys").replace("priority: 0.5", "priority: 7"))
    assert files.search(".dmm/memory/project/bad.md")
    lead.git("add", "-A")
    proc = subprocess.run(["git", "commit", "-qm", "bad memory"], cwd=lead.root,
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "priority" in proc.stdout + proc.stderr
    bad.write_text(memory_text("mem_2026_01_01_001", "Cache keys include the tenant",
                               tags="[cache]"))
    lead.git("add", "-A")
    proc = subprocess.run(["git", "commit", "-qm", "good memory"], cwd=lead.root,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


CEILING = ("The upload ceiling of the gateway is {} for every request body, because the load "
           "balancer holds the whole body in memory before the service reads any of it.")


def _ceiling(mem_id: str, title: str, size: str) -> str:
    return memory_text(mem_id, title, CEILING.format(size), tags="[uploads]")


def _gate(root: Path, on: bool) -> None:
    """Set [ci] fail_on_new_conflicts in the config.toml `dmm init` wrote."""
    path = root / ".dmm/config.toml"
    text = path.read_text()
    assert "\n[ci]\n" in text
    path.write_text(re.sub(r"(?m)^fail_on_new_conflicts = \w+$",
                           f"fail_on_new_conflicts = {str(on).lower()}", text))


def _contradicting_pull_request(team, tmp_path, *, main_gate: bool = True,
                                pr_gate: bool = True) -> tuple[Path, dict]:
    """main holds one upload ceiling (its config.toml's gate ``main_gate``); a pull request
    adds a memory that contradicts it (and sets the gate ``pr_gate``). Returns the runner's
    clone, checked out as Actions checks out the pull request, and the Actions environment."""
    lead = team.lead
    (lead.root / ".dmm/memory/project").mkdir(parents=True, exist_ok=True)
    (lead.root / ".dmm/memory/project/a.md").write_text(_ceiling(
        "mem_2026_01_01_001", "Upload size ceiling on the gateway", "8 MB"))
    _gate(lead.root, main_gate)
    lead.git("add", "-A")
    lead.git("commit", "-qm", "the upload ceiling")
    lead.git("push", "-q", "origin", "main")
    mate = team.clone("mate")
    mate.git("checkout", "-q", "-b", "feature/ceiling")
    (mate.root / ".dmm/memory/project/b.md").write_text(_ceiling(
        "mem_2026_01_02_001", "Upload size ceiling of the gateway", "50 MB"))
    _gate(mate.root, pr_gate)
    mate.git("add", "-A")
    mate.git("commit", "-qm", "a bigger ceiling")
    mate.git("push", "-q", "origin", "feature/ceiling")
    runner = _pull_request(team, "feature/ceiling")
    return runner, _actions_env(runner, "feature/ceiling", tmp_path)


def _check(cwd: Path, env: dict) -> subprocess.CompletedProcess:
    [step] = _run_steps(["dmm ci check"], cwd, env)
    return step


def test_a_pull_request_that_adds_a_contradiction_fails_there(team, tmp_path):
    runner, env = _contradicting_pull_request(team, tmp_path)
    step = _check(runner, env)
    assert step.returncode == 1, (step.stdout, step.stderr)
    found = [COMMAND.match(line).groups() for line in step.stdout.splitlines()]
    conflicts = [g for g in found if g[3] == "dmm conflict"]
    assert [g[:2] for g in conflicts] == [("error", ".dmm/memory/project/b.md")], step.stdout
    assert "a.md" in conflicts[0][4]  # the memory it contradicts is named
    assert [g for g in found if g[0] == "error"] == conflicts  # nothing else is an error
    assert "conflict" in step.stderr  # why it fails, in the log too
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert "| error | `.dmm/memory/project/b.md` | dmm conflict |" in summary
    assert "A person needs to look" in summary and "conflict" in summary.split(
        "A person needs to look")[1]
    # the same decision from plain `--base`, outside any CI
    plain = run_dmm("ci", "check", "--base", "origin/main", "--format", "plain", cwd=runner)
    assert plain.returncode == 1 and ": error: [dmm conflict]" in plain.stdout, plain.stdout


def test_a_team_that_wants_warnings_on_pull_requests_says_so_on_main(team, tmp_path):
    runner, env = _contradicting_pull_request(
        team, tmp_path, main_gate=False, pr_gate=False)
    step = _check(runner, env)
    assert step.returncode == 0, (step.stdout, step.stderr)
    found = [COMMAND.match(line).groups() for line in step.stdout.splitlines()]
    assert [g[:2] for g in found if g[3] == "dmm conflict"] == [
        ("warning", ".dmm/memory/project/b.md")], step.stdout
    assert not [g for g in found if g[0] == "error"]


def test_a_pull_request_cannot_turn_its_own_gate_off(team, tmp_path):
    """The setting is read from the base branch, what the team agreed on: a request that sets
    it in its own config.toml still fails (and its config change is named for a person)."""
    runner, env = _contradicting_pull_request(
        team, tmp_path, pr_gate=False)
    step = _check(runner, env)
    assert step.returncode == 1, (step.stdout, step.stderr)
    lines = [COMMAND.match(line).groups() for line in step.stdout.splitlines()]
    assert ("error", ".dmm/memory/project/b.md") in [g[:2] for g in lines]
    assert ("warning", ".dmm/config.toml") in [g[:2] for g in lines]


def test_a_pull_request_is_judged_by_the_settings_of_the_branch_it_goes_into(team, tmp_path):
    """A request that raises conflicts.min_confidence in its own config.toml (the contradiction
    it brings is 0.99 sure) still has that contradiction reported, and fails."""
    _contradicting_pull_request(team, tmp_path)
    mate = team.base / "mate"
    path = mate / ".dmm/config.toml"
    path.write_text(re.sub(r"(?m)^min_confidence = .*$", "min_confidence = 1.0",
                           path.read_text()))
    assert "\nmin_confidence = 1.0\n" in path.read_text()
    git(mate, "commit", "-qam", "quieter conflicts")
    git(mate, "push", "-q", "origin", "feature/ceiling")
    runner = _pull_request(team, "feature/ceiling", number=8)
    env = _actions_env(runner, "feature/ceiling", tmp_path, number=8)
    step = _check(runner, env)
    assert step.returncode == 1, (step.stdout, step.stderr)
    found = [COMMAND.match(line).groups()[:4] for line in step.stdout.splitlines()]
    assert ("error", ".dmm/memory/project/b.md", "1", "dmm conflict") in found, step.stdout
    assert ("warning", ".dmm/config.toml", "1", "dmm instructions") in found, step.stdout


def test_main_shows_why_it_fails_errors_not_warnings(team, tmp_path):
    runner, env = _contradicting_pull_request(
        team, tmp_path, main_gate=False, pr_gate=False)
    lead = team.lead
    lead.git("fetch", "-q")
    lead.git("merge", "-q", "--no-ff", "origin/feature/ceiling", "-m", "Merge the ceiling")
    push_env = {k: v for k, v in env.items() if k not in ("GITHUB_BASE_REF", "GITHUB_HEAD_REF")}
    push_env.update(GITHUB_EVENT_NAME="push", GITHUB_REF="refs/heads/main")
    step = _check(lead.root, push_env)
    assert step.returncode == 1
    found = {COMMAND.match(line).groups()[:2] for line in step.stdout.splitlines()}
    assert found == {("error", ".dmm/memory/project/a.md"), ("error", ".dmm/memory/project/b.md")}
    assert "conflict" in step.stderr
    plain = run_dmm("ci", "check", "--format", "plain", cwd=lead.root)
    assert plain.returncode == 1
    assert plain.stdout.count(": error: [dmm conflict]") == 2, plain.stdout


def test_a_merge_request_is_judged_by_its_targets_settings_now_not_at_its_fork_point(team,
                                                                                    tmp_path):
    """GitLab checks out the source branch itself: a branch forked from a commit of main where
    the gate was still off is judged by what main says now (the gate on), not by the settings
    at the fork point, which its author chose by choosing where to branch."""
    _contradicting_pull_request(team, tmp_path, main_gate=False, pr_gate=False)
    lead = team.lead
    lead.git("pull", "-q", "origin", "main")
    _gate(lead.root, True)
    lead.git("commit", "-qam", "conflicts fail merge requests from now on")
    lead.git("push", "-q", "origin", "main")
    mate = team.base / "mate"
    git(mate, "fetch", "-q", "origin")
    env = {"CI": "true", "GITLAB_CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
           "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "GITHUB_ACTIONS": ""}
    step = _check(mate, env)
    assert step.returncode == 1, (step.stdout, step.stderr)
    assert re.search(r"^\.dmm/memory/project/b\.md:\d+: error: \[dmm conflict\]", step.stdout,
                     re.M), step.stdout


def test_annotations_point_at_the_field_and_the_hint_works_in_a_developers_clone(team,
                                                                               tmp_path):
    runner, env = _contradicting_pull_request(team, tmp_path)
    step = _check(runner, env)
    found = [COMMAND.match(line).groups() for line in step.stdout.splitlines()]
    [conflict] = [g for g in found if g[3] == "dmm conflict"]
    said = re.findall(r"`([^`]+)`", conflict[4])
    assert said[0] == "git switch feature/ceiling" and said[1].startswith("dmm conflicts show ")
    mate = type(team.lead)(team.base / "mate", "mate")  # who opened the pull request
    lead = team.lead  # who reviews it, on main: the hint's git command first
    lead.git("fetch", "-q")
    lead.git(*said[0].split()[1:])
    for clone in (mate, lead):
        shown = clone.dmm(*said[1].split()[1:])
        assert "project/b.md" in shown.stdout and "project/a.md" in shown.stdout
    # a field's error is annotated on the field's line, not on line 1
    mate.git("checkout", "-q", "-b", "feature/priority")
    bad = mate.root / ".dmm/memory/project/c.md"
    bad.write_text(memory_text("mem_2026_01_03_001", "Cache keys", priority=5, tags="[cache]"))
    mate.git("add", "-A")
    mate.git("commit", "-qm", "a bad priority")
    plain = run_dmm("ci", "check", "--base", "origin/main", "--format", "plain", cwd=mate.root)
    line = next(n for n, text in enumerate(bad.read_text().splitlines(), 1)
                if text.startswith("priority:"))
    assert line > 1 and f".dmm/memory/project/c.md:{line}: error: [dmm schema] priority" \
        in plain.stdout, plain.stdout
