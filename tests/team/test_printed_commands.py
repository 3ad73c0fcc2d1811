"""Every command dmm prints for a person to run is quoted for the shell (issue 34, item 11): a
pushed branch named like ``dmm/proposals/x;touch${IFS}pwned;`` gives a hint that, copied into
bash, deletes that branch and runs nothing else."""

from __future__ import annotations

import json
import os
import subprocess

from dmm.shellcmd import command, quote

HOSTILE = "dmm/proposals/x;touch${IFS}pwned;"


def _hint(batch: dict, branch: str) -> str:
    [skipped] = [s for s in batch["skipped"] if s["branch"] == branch]
    return skipped["reason"].split("delete it with: ", 1)[1]


def _bash(line: str, cwd) -> None:
    subprocess.run(["bash", "-c", line], cwd=cwd, check=True, capture_output=True)


def test_the_printed_delete_commands_delete_the_branch_and_run_nothing_else(team):
    lead = team.lead
    lead.git("update-ref", f"refs/heads/{HOSTILE}", "HEAD")
    lead.git("push", "-q", "origin", f"refs/heads/{HOSTILE}")
    bob = team.clone("bob")
    remote = json.loads(bob.dmm("review", "process", "--all", "--json", ok=False).stdout)
    line = _hint(remote, f"origin/{HOSTILE}")
    assert line == f"git push origin --delete '{HOSTILE}'"
    _bash(line, bob.root)
    assert not (bob.root / "pwned").exists()
    assert not team.lead.git("ls-remote", "origin", HOSTILE).strip()  # it did its job
    local = json.loads(lead.dmm("review", "process", "--all", "--json", ok=False).stdout)
    line = _hint(local, HOSTILE)
    _bash(line, lead.root)
    assert not (lead.root / "pwned").exists()
    assert not lead.git("branch", "--list", HOSTILE).strip()


def test_a_name_that_is_not_text_is_printed_as_its_bytes():
    name = os.fsdecode(b"dmm/proposals/bad\xffname")
    assert command("git", "branch", "-D", name) == "git branch -D $'dmm/proposals/bad\\xffname'"
    assert quote("a\u202eb") == "$'a\\xe2\\x80\\xaeb'"  # a bidi override is shown, not obeyed
    assert quote("prop_20260101_000000_abcdef01") == "prop_20260101_000000_abcdef01"
    out = subprocess.run(["bash", "-c", "printf %s " + quote(name)], capture_output=True).stdout
    assert out == b"dmm/proposals/bad\xffname"


def test_sync_says_how_to_delete_a_branch_it_did_not_make(team):
    lead = team.lead
    lead.git("update-ref", f"refs/heads/{HOSTILE}", "HEAD")
    out = lead.dmm("sync").stderr + lead.dmm("sync").stdout
    line = out.split("delete it with: ", 1)[1].splitlines()[0]
    assert line == f"git branch -D '{HOSTILE}'"
    _bash(line, lead.root)
    assert not (lead.root / "pwned").exists()
    assert not lead.git("branch", "--list", HOSTILE).strip()
