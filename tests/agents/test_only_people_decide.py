"""Only people decide, on every surface (issue 28, section 1): a decision command run for an
agent is refused and changes nothing; what an agent proposes from its shell is recorded as the
agent's; an agent withdraws only its own proposals; a person at a terminal confirms; the
reviewer enforces what BOOT.md calls required."""

from __future__ import annotations

import json
import os
import sys

import pytest

from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT, cid
from tests.conftest import git, memory_text

# what the agents' shells carry (measured through their own shell tools; see identity.py)
AGENT_SHELLS = {"claude-code": {"CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "cli"},
                "codex": {"CODEX_THREAD_ID": "01a2", "CODEX_CI": "1"},
                "cursor": {"CURSOR_AGENT": "1"},
                "cursor-editor": {"CURSOR_EXTENSION_HOST_ROLE": "agent-exec"},
                "dmm-mcp": {"DMM_AGENT": "mcp:claude-code"}}
GOOD = ("---\ntags: [uploads]\npriority: 0.5\nconfidence: active\n---\n\n# Uploads are scanned "
        "for malware before storage\n\nEvery file uploaded through the public gateway is scanned "
        "by the antivirus service before it is written to object storage. Why: uploads come "
        "from anyone, and a stored file is served to other users.\n")


def refs(root) -> str:
    return git(root, "for-each-ref", "--format=%(refname) %(objectname)")


def proposal(repo, text: str = GOOD, env: dict | None = None, path: str = "project/scan.md"):
    proc = repo.dmm("write", "propose", "--path", path, "--reason", "learned", "--json",
                    input=text, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["proposal_id"]


@pytest.mark.parametrize("agent", sorted(AGENT_SHELLS))
def test_every_decision_command_refuses_an_agent_and_changes_nothing(store, agent):
    env = AGENT_SHELLS[agent]
    pending = proposal(store)
    assert store.dmm("conflicts", "scan").returncode == 0
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    before = refs(store.root)
    for args in (["review", "approve", pending], ["review", "reject", pending, "--reason", "x"],
                 ["review", "defer", pending, "--reason", "x"],
                 ["review", "process", pending], ["review", "process", "--all"],
                 ["conflicts", "dismiss", conflict, "--reason", "x"],
                 ["conflicts", "resolve", conflict, "--action", "deprecate", "--target",
                  OLD_LIMIT, "--reason", "x"],
                 ["conflicts", "resolve", "--auto"],
                 ["conflicts", "undo", conflict, "--reason", "x"],
                 ["review", "approve", pending, "--yes"]):
        proc = store.dmm(*args, env=env)
        assert proc.returncode == 6, (args, proc.stdout, proc.stderr)
        assert "a person's decision" in proc.stderr and "propose" in proc.stderr, proc.stderr
    assert refs(store.root) == before
    # what an agent may do still works: a dry run, and a resolution proposed for review
    assert store.dmm("conflicts", "resolve", "--auto", "--dry-run", env=env).returncode == 0
    proc = store.dmm("conflicts", "resolve", conflict, "--action", "deprecate", "--target",
                     OLD_LIMIT, "--reason", "8 MB is the old ceiling", "--propose", env=env)
    assert proc.returncode == 0, proc.stderr


def test_an_agents_proposal_is_recorded_as_the_agents_and_only_it_may_withdraw_it(store):
    env = AGENT_SHELLS["claude-code"]
    mine = proposal(store, env=env)
    message = git(store.root, "log", "-1", "--format=%B", f"dmm/proposals/{mine}")
    assert "Dmm-Proposed-By: agent:claude-code" in message
    # --proposed-by cannot make it a person's
    other_path = "project/scan2.md"
    claimed = store.dmm("write", "propose", "--path", other_path, "--reason", "r", "--json",
                        "--proposed-by", "alice", input=GOOD, env=env)
    made = json.loads(claimed.stdout)["proposal_id"]
    assert "Dmm-Proposed-By: agent:claude-code" in git(
        store.root, "log", "-1", "--format=%B", f"dmm/proposals/{made}")
    persons = proposal(store, path="project/scan3.md")  # a person's (no agent variables)
    refused = store.dmm("review", "withdraw", persons, "--reason", "mine now", env=env)
    assert refused.returncode == 6 and "only its author" in refused.stderr
    codex = store.dmm("review", "withdraw", mine, "--reason", "x", env=AGENT_SHELLS["codex"])
    assert codex.returncode == 6  # another agent's
    done = store.dmm("review", "withdraw", mine, "--reason", "wrong file", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["decision"] == "withdrawn"


def test_an_agent_cannot_mint_a_persons_token_for_the_server(store):
    proc = store.dmm("serve", "--port", "0", "--token", "me", env=AGENT_SHELLS["codex"])
    assert proc.returncode == 6 and "a person's decision" in proc.stderr


def test_a_person_at_a_terminal_confirms_a_decision(store):
    pexpect = pytest.importorskip("pexpect")
    pending = proposal(store)
    before = refs(store.root)
    child = pexpect.spawn(sys.executable, ["-m", "dmm", "review", "approve", pending],
                          cwd=str(store.root), env=dict(os.environ), encoding="utf-8",
                          timeout=60)
    child.expect(r"approving prop_\S+ at commit [0-9a-f]{40}: decide it as yourself\? \[y/N\]")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 6 and refs(store.root) == before
    child = pexpect.spawn(sys.executable, ["-m", "dmm", "review", "approve", pending],
                          cwd=str(store.root), env=dict(os.environ), encoding="utf-8",
                          timeout=60)
    child.expect(r"\[y/N\]")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert f"Dmm-Proposal: {pending}" in git(store.root, "log", "-1", "--format=%B")


def test_the_reviewer_enforces_the_size_boot_md_requires(store):
    short = ("---\ntags: [uploads]\npriority: 0.5\nconfidence: active\n---\n\n"
             "# Scan uploads\n\nScan uploads.\n")
    pending = proposal(store, short)
    proc = store.dmm("review", "process", pending, "--json")
    result = json.loads(proc.stdout)
    assert result["decision"] == "rejected", result
    assert any("too short" in i["message"] for i in result["issues"]), result
    boot = (store.root / ".dmm" / "BOOT.md").read_text()
    assert "requires a size between 30 tokens" in boot  # the bound BOOT.md names
    assert not (store.memory / "project" / "scan.md").exists()


def test_boot_md_and_every_agent_section_tell_one_story(store):
    from dmm.agents.setup import POINTER

    boot = (store.root / ".dmm" / "BOOT.md").read_text()
    for text in (boot, POINTER):
        for verb in ("query", "propose", "check", "flag"):
            assert verb in text.lower(), verb
        for decision in ("dmm review process", "dmm conflicts dismiss", "dmm review approve",
                         "dmm conflicts resolve"):
            # never given as a command to run: at most named as what a person runs
            assert not any(line.strip().startswith(decision) for line in text.splitlines())
            assert f"run `{decision}" not in text.lower() and f"then run `{decision}" \
                not in text.lower(), decision
