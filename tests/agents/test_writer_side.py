"""The writer's side of an agent (issue 36, item 10): memory_propose defaults to create as the
CLI does, an agent's proposal is not followed by advice to approve it, BOOT.md's commands use
the options `--help` shows, and a proposal's id and its time are one clock reading."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import git

DRAFT = ("---\ntags: [deploys]\npriority: 0.5\nconfidence: active\n---\n\n# Deploys wait for "
         "the release train\n\nEvery deploy, hotfixes included, goes out with the weekly release "
         "train on Tuesday, so that one person watches each release from start to end.\n")


@pytest.fixture
def repo(repo):
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "dmm init")
    return repo


def test_memory_propose_without_a_type_creates(repo):
    from dmm.agents.mcp_server import handlers, run_tool

    result, error = run_tool(handlers(repo.ws, lambda: "agent:test"), "memory_propose", {
        "path": "project/deploys.md", "reason": "learned it", "content": DRAFT})
    assert error is None and result["success"], (error, result)
    branch = f"dmm/proposals/{result['proposal_id']}"
    assert "Dmm-Type: create" in git(repo.root, "log", "-1", "--format=%B", branch)


def _propose(repo, env: dict) -> subprocess.CompletedProcess:
    return repo.dmm("write", "propose", "--path", "project/deploys.md", "--reason", "learned",
                    "--content", DRAFT, env=env)


def test_an_agent_is_told_a_person_decides_and_never_to_approve(repo):
    agent = _propose(repo, {"CLAUDECODE": "1"})
    assert agent.returncode == 0, agent.stderr
    assert "review approve" not in agent.stderr and "A person decides it" in agent.stderr
    assert f"dmm review show {agent.stdout.strip()}" in agent.stderr
    person = repo.dmm("write", "propose", "--path", "project/other.md", "--reason", "r",
                      "--content", DRAFT.replace("Deploys wait", "Releases wait"))
    assert person.returncode == 0 and "dmm review approve" in person.stderr


def _help_options(words: list[str]) -> set[str]:
    out = subprocess.run([sys.executable, "-m", "dmm", *words, "--help"], capture_output=True,
                         text=True, check=True).stdout
    return set(re.findall(r"(--[a-z][a-z-]*)", out))


def test_boot_md_commands_use_the_options_help_shows():
    from dmm.resources import resource_dir

    text = (resource_dir("templates") / "boot.md.j2").read_text()
    checked = 0
    for line in re.findall(r"(?m)(?:^ {4}|`)(dmm [a-z][^`\n]*)", text):
        words = line.split()
        command = [w for w in words[1:3] if re.fullmatch(r"[a-z]+", w)]
        options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line))
        if not options:
            continue
        shown = _help_options(command)
        assert options <= shown, (line, options - shown)
        checked += 1
    assert checked >= 5


def test_a_proposal_id_and_its_time_are_one_reading(repo):
    proc = repo.dmm("write", "propose", "--path", "project/deploys.md", "--reason", "learned",
                    "--content", DRAFT, "--json")
    data = json.loads(proc.stdout)
    stamp = re.match(r"prop_(\d{8})_(\d{6})_", data["proposal_id"])
    day, time = stamp.group(1), stamp.group(2)
    expected = f"{day[:4]}-{day[4:6]}-{day[6:]}T{time[:2]}:{time[2:4]}:{time[4:]}+00:00"
    assert data["proposed_at"] == expected, data
    shown = json.loads(repo.dmm("review", "show", data["proposal_id"], "--json").stdout)
    assert shown["proposed_at"] == expected  # read back from the branch's commit
