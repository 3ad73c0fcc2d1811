"""Docs that are generated or promised stay in step with the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from dmm.resources import resource_dir

ROOT = Path(__file__).resolve().parents[1]


def test_cli_reference_is_current():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "tools" / "gen_cli_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == module.render(), \
        "docs/cli.md is stale: run python tools/gen_cli_docs.py"


def test_every_exit_code_is_documented():
    from dmm.errors import ExitCode

    text = (ROOT / "docs" / "exit_codes.md").read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"| {int(code)} | {code.name} |" in text, code.name


def test_every_setting_is_documented_and_in_the_config_template():
    from dmm.config import DEFAULTS

    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    template = (resource_dir("templates") / "config.toml.j2").read_text(encoding="utf-8")
    for section, values in DEFAULTS.items():
        for key in values:
            assert f"`{section}.{key}`" in doc, key
            assert f"{key} = " in template, key


def test_readme_opens_with_the_two_commands_and_ci_runs_the_same_tests():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = ".venv/bin/python -m pytest"
    assert "dmm query" in readme.split(test_command)[0]
    assert test_command in readme and test_command in ci


def test_this_repository_store_is_valid(tmp_path):
    import json
    import shutil

    from tests.conftest import git, run_dmm

    git(tmp_path, "init", "-q")
    shutil.copytree(ROOT / ".dmm", tmp_path / ".dmm", ignore=shutil.ignore_patterns("index"))
    proc = run_dmm("validate", "--strict", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout)["files"] >= 10


# Git commands the docs name to explain how dmm works inside (not suggestions to run).
DESCRIBED = {"git merge-tree --write-tree", "git read-tree -m -u", "git update-ref --stdin",
             "git fsck --strict", "git log --follow", "git log --grep", "git diff HEAD^ HEAD",
             "git commit-tree -S", "git log --format=%G?", "git clone --depth 1"}
# Suggestions run, exactly as written, by another test: the signing set-up of docs/team.md is
# team/test_authority.py::test_signed_decisions_are_shown_verified_and_unsigned_ones_are_not
CHECKED_ELSEWHERE = {"git config gpg.format ssh", "git config user.signingkey ~/.ssh/dmm_signing",
                     "git config gpg.ssh.allowedSignersFile ~/.ssh/allowed_signers",
                     # judge/test_rule_extraction.py: a judge sends nothing until it is run
                     "git config dmm.judge MODEL"}


def suggested_git_commands() -> set[str]:
    """Every git command with arguments in README, BOOT.md and docs/: inline or in a block."""
    import re

    found = set()
    for doc in [ROOT / "README.md", resource_dir("templates") / "BOOT.md.j2",
                *sorted((ROOT / "docs").glob("*.md"))]:
        if not doc.exists():
            continue
        text = doc.read_text(encoding="utf-8")
        found.update(re.findall(r"`(git [^`\n]+)`", text))
        for block in re.findall(r"^```(?:sh|bash|shell)?\n(.*?)^```", text, re.M | re.S):
            found.update(re.findall(r"^(git [^\n]+)$", block, re.MULTILINE))
    return {c.strip() for c in found if len(c.split()) > 2 or "&&" in c} - DESCRIBED \
        - CHECKED_ELSEWHERE


def test_every_git_command_the_docs_suggest_does_what_they_say(tmp_path):
    """Run each suggestion in a real repository with approved, closed, pending proposals and a
    resolved conflict; a suggestion added to the docs without a check here fails."""
    import json
    import os
    import subprocess

    from tests.conftest import git, memory_text, run_dmm

    def sh(cwd, command: str) -> str:
        proc = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True)
        assert proc.returncode == 0, (command, proc.stderr)
        return proc.stdout

    def dmm(*args, content=None) -> dict:
        proc = run_dmm(*args, "--json", cwd=root, input=content)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        return json.loads(proc.stdout)

    checked = {}
    origin, root = tmp_path / "origin.git", tmp_path / "repo"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(tmp_path, "clone", "-q", str(origin), str(root))
    git(root, "config", "user.name", "Ann")
    git(root, "config", "user.email", "ann@example.com")
    git(root, "commit", "-q", "--allow-empty", "-m", "start")
    assert run_dmm("init", "--no-hooks", cwd=root).returncode == 0
    readme = 'git add .dmm && git commit -m "Add dmm memory store"'
    sh(root, readme)
    checked[readme] = git(root, "ls-files", ".dmm/config.toml") != ""
    (root / ".dmm" / "BOOT.md").write_text("BOOT.md of an older dmm\n")  # then dmm upgraded
    git(root, "commit", "-qam", "older BOOT.md")
    assert run_dmm("init", "--upgrade", "--no-hooks", cwd=root).returncode == 0
    checked["git diff .dmm/"] = "-BOOT.md of an older dmm" in sh(root, "git diff .dmm/")
    git(root, "commit", "-qam", "upgraded dmm's files")

    def propose(path, title, body):
        text = memory_text("", title, body).replace("id: \n", "")
        return dmm("write", "propose", "--path", path, "--reason", "learned today",
                   content=text)["proposal_id"]

    pending = propose("project/queue.md", "Jobs run on the queue worker",
                      "Background jobs run on the queue worker, never in a web request.")
    approved = propose("project/retry.md", "Retries back off exponentially",
                       "Outbound calls to payment and shipping providers retry three times "
                       "with exponential backoff starting at one second. Why: their outages "
                       "are short, and retrying at once only adds load.")
    dmm("review", "approve", approved, "--reason", "agreed")
    rejected = propose("project/tabs.md", "Indent with tabs", "Indent code with tabs.")
    dmm("review", "reject", rejected, "--reason", "we use spaces")
    git(root, "commit", "-q", "--allow-empty", "-m", "main moves on")

    diff = f"git diff HEAD...dmm/proposals/{pending}"
    out = sh(root, diff)
    checked[diff.replace(pending, "<id>")] = ("+# Jobs run on the queue worker" in out
                                              and "retry.md" not in out)
    checked["git log --first-parent"] = f"Dmm-Proposal: {approved}" in sh(
        root, "git log --first-parent")
    checked["git log dmm/audit"] = f"Dmm-Proposal: {rejected}" in sh(root, "git log dmm/audit")

    cid = dmm("conflicts", "flag", "--memories", "project/retry.md,baseline/dmm_usage.md",
              "--description", "the retry rule contradicts the starter")["conflict_id"]
    dmm("conflicts", "dismiss", cid, "--reason", "both are true for different clients")
    grep = f'git log --grep "Dmm-Conflict: {cid}"'
    checked[grep.replace(cid, "<id>")] = cid in sh(root, grep)

    # docs/team.md: publishing, reading the team's branches, merging records, work trees
    push_main = "git push origin main"
    sh(root, push_main + " 2>&1")
    checked[push_main] = git(origin, "rev-parse", "main") == git(root, "rev-parse", "main")
    dmm("sync")
    pushed = git(origin, "for-each-ref", "--format=%(refname)", "refs/heads/dmm")
    assert f"refs/heads/dmm/proposals/{pending}" in pushed and "dmm/audit" in pushed
    teammate = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(origin), str(teammate))
    pr_diff = f"git diff origin/main...origin/dmm/proposals/{pending}"
    out = sh(teammate, pr_diff)
    checked[pr_diff.replace(pending, "<id>")] = ("+# Jobs run on the queue worker" in out
                                                 and "retry.md" not in out)
    audit_tree = tmp_path / "audit-line"
    git(teammate, "worktree", "add", "-q", "-b", "dmm/audit", str(audit_tree),
        "origin/dmm/audit")
    another = propose("project/spaces.md", "Indent with four spaces", "Indent with 4 spaces.")
    dmm("review", "reject", another, "--reason", "already said")
    dmm("sync")
    git(teammate, "fetch", "-q", "origin")
    merge_audit = "git merge origin/dmm/audit"
    sh(audit_tree, merge_audit)
    checked[merge_audit] = (git(audit_tree, "rev-parse", "HEAD")
                            == git(teammate, "rev-parse", "origin/dmm/audit")
                            and git(audit_tree, "ls-files") == "")
    worktree = "git worktree add -b agent-1 ~/agent-1"
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.run(worktree, shell=True, cwd=teammate, capture_output=True, text=True,
                          env={**os.environ, "HOME": str(home)})
    checked[worktree] = proc.returncode == 0 and (home / "agent-1" / ".dmm" / "config.toml"
                                                  ).is_file()

    # docs/cache.md: what older versions left tracked under .dmm/index/ leaves git, and dmm
    # stops reporting it
    (root / ".dmm" / "index").mkdir()
    (root / ".dmm" / "index" / "cache.sqlite3").write_bytes(b"committed by an older dmm")
    git(root, "add", "-f", ".dmm/index")
    git(root, "commit", "-qm", "a committed cache")
    untrack = "git rm -r .dmm/index"
    sh(root, untrack)
    git(root, "commit", "-qm", "untracked")
    checked[untrack] = (git(root, "ls-files", ".dmm/index") == ""
                        and run_dmm("validate", cwd=root).returncode == 0)

    assert suggested_git_commands() <= set(checked), \
        f"suggested in the docs but not checked: {suggested_git_commands() - set(checked)}"
    assert all(checked.values()), {c: ok for c, ok in checked.items() if not ok}


def test_docs_point_only_at_what_a_reader_of_this_repository_can_see():
    """No paths outside the repository, no history of how a figure was reached (issues, rounds,
    sessions of work), no names from design documents the reader does not have."""
    import re

    forbidden = [r"\.\./", r"\bissues? #?\d", r"\b(first|second|third|fourth|fifth|previous|last|this) "
                 r"(session|round)\b", r"\bPRDs?\b", r"\b(ScanResult|ProposalResult|ResolutionResult)\b"]
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted(resource_dir("templates").glob("*.j2"))]
    found = []
    for doc in docs:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{doc.name}:{number}: {line.strip()}" for pattern in forbidden
                      if re.search(pattern, line, re.IGNORECASE)]
    assert not found, "\n".join(found)


def test_the_store_this_repository_ships_points_only_inside_it():
    """The README's first command prints memories of .dmm/memory/: every file they name is in
    this repository, none outside it."""
    import re

    missing, outside = [], []
    for memory in sorted((ROOT / ".dmm" / "memory").rglob("*.md")):
        text = memory.read_text(encoding="utf-8")
        rel = memory.relative_to(ROOT)
        outside += [f"{rel}: {m}" for m in re.findall(r"(?:\.\./|/work/|~/)\S*", text)]
        for path in re.findall(r"`((?:docs|tools|tests|dmm|templates|hooks)/[\w./-]+)`", text):
            if path.startswith(("dmm/audit", "dmm/proposals")):  # branches, not files
                continue
            if not (ROOT / path.rstrip("/")).exists():
                missing.append(f"{rel}: {path}")
    assert not outside, outside
    assert not missing, missing


def test_performance_and_conflicts_docs_state_todays_figures_not_a_history():
    import re

    history = [r"\bversion \d+ (against|and) (version )?\d+", r"\bstood at\b", r"\bwhat moved it\b",
               r"\bmeasured again\b", r"\ban hour later\b", r"\ba day earlier\b",
               r"\bbefore the rules\b"]
    for name in ("performance.md", "conflicts.md"):
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        found = [p for p in history if re.search(p, text, re.IGNORECASE)]
        assert not found, (name, found)
        assert "## How to reproduce" in text or "How to reproduce" in text, name


def test_small_promises_match_the_code():
    """The config's comment on copies, writeback's exit codes and the pre-commit advice."""
    import re

    from dmm.conflicts.analyzers.semantic import MIN_SHARED_ANCHORS
    from dmm.errors import ExitCode

    for config in (resource_dir("templates") / "config.toml.j2", ROOT / ".dmm" / "config.toml"):
        said = re.search(r"in common \(at least (\d+)\)", config.read_text(encoding="utf-8"))
        assert said and int(said.group(1)) == MIN_SHARED_ANCHORS, config
    writeback = " ".join((ROOT / "docs" / "writeback.md").read_text(encoding="utf-8").split())
    assert f"exit code {int(ExitCode.INVALID_INPUT)}, or {int(ExitCode.NOT_FOUND)} when" in \
        writeback
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "rev: <a tag>" not in hooks and "commit sha" in hooks


def test_every_command_and_subcommand_shows_examples_in_its_help():
    import re

    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")  # current: see above
    sections = re.split(r"\n(?=#{3,4} dmm )", reference)[1:]
    assert len(sections) > 40
    missing = [s.splitlines()[0] for s in sections if "Example" not in s]
    assert not missing, missing
    reflowed = re.findall(r"^.*Examples?:[ \t]+\S.*$", reference, re.M)  # one per line, as typed
    assert not reflowed, reflowed


def test_every_dmm_command_in_the_team_guide_parses():
    """Each `dmm ...` line of docs/team.md's examples names real commands and options, with
    values they accept (parsed by the command line itself, nothing run)."""
    import re
    import shlex

    import click

    from dmm.cli import cli

    text = (ROOT / "docs" / "team.md").read_text(encoding="utf-8")
    lines = []
    for block in re.findall(r"^```(?:sh|bash|shell)?\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            for part in line.split("&&"):
                part = part.split("  #", 1)[0].strip()
                if part.startswith("dmm "):
                    lines.append(part)
    assert len(lines) >= 10, lines
    for line in lines:
        args = shlex.split(line.replace("<id>", "prop_20260101_120000_abcdef12"))[1:]
        ctx, command, rest = None, cli, args
        while isinstance(command, click.Group) and rest:
            name, command, rest = command.resolve_command(ctx or click.Context(cli), rest)
            ctx = command.make_context(name, list(rest), parent=ctx)
            # a group leaves its subcommand and the rest unparsed
            rest = [*getattr(ctx, "_protected_args", []), *ctx.args] \
                if isinstance(command, click.Group) else []
        assert not isinstance(command, click.Group), line


def test_readme_says_how_to_put_dmm_on_path_before_using_it_in_a_project():
    """The Quickstart installs dmm in the clone's .venv, which is not on PATH: "Use it in your
    project" says how to get the command (pipx, uv tool), then keeps its two set-up commands."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it in your project")[1].split("\n## ")[0]
    first_init = section.index("dmm init")
    assert "pipx install" in section[:first_init] and "uv tool install" in section[:first_init]
    assert 'git add .dmm && git commit -m "Add dmm memory store"' in section
