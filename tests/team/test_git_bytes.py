"""Git's output is bytes (issue 34, item 10): a pushed branch whose name, or a commit whose
message or author, holds a byte that is not UTF-8 is one reported entry in every clone; every
other proposal still works, and no command ends with an internal error."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from dmm.errors import ExitCode

BAD_NAME = os.fsdecode(b"dmm/proposals/bad\xffname")  # a str git gets back as the 0xff byte
BAD_ID = "prop_20260101_000000_abcdef01"


def _commit_with_bytes(clone, message: bytes) -> str:
    """A proposal-shaped commit whose message holds raw bytes (``git commit-tree -F``)."""
    path = clone.root.parent / "message.bin"
    path.write_bytes(message)
    env = {**os.environ, "GIT_AUTHOR_NAME": os.fsdecode(b"Mall\xf6ry")}
    return subprocess.run(["git", "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-F", str(path)],
                          cwd=clone.root, env=env, check=True, capture_output=True,
                          text=True, errors="surrogateescape").stdout.strip()


@pytest.fixture
def hostile(team):
    """origin holds a good proposal, a branch with a 0xff in its name and a proposal whose
    reason and author hold 0xff bytes; ``bob`` is a fresh clone of it."""
    lead = team.lead
    good = lead.propose("project/retries.md", "Retries use exponential backoff")
    lead.git("update-ref", f"refs/heads/{BAD_NAME}", "HEAD")
    sha = _commit_with_bytes(lead, b"dmm: create project/bytes.md\n\nreason \xff\xfe here\n\n"
                             b"Dmm-Proposal: " + BAD_ID.encode() + b"\nDmm-Type: create\n"
                             b"Dmm-Path: project/bytes.md\n")
    lead.git("update-ref", f"refs/heads/dmm/proposals/{BAD_ID}", sha)
    lead.git("push", "-q", "origin", "refs/heads/dmm/*:refs/heads/dmm/*")
    bob = team.clone("bob")
    return lead, bob, good


def _ok(proc) -> subprocess.CompletedProcess:
    assert proc.returncode not in (ExitCode.GIT_FAILED, 70), proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    return proc


def test_a_non_utf8_branch_is_one_reported_entry_and_the_rest_works(hostile):
    lead, bob, good = hostile
    _ok(bob.dmm("sync", "--json"))
    listed = json.loads(_ok(bob.dmm("review", "list", "--json")).stdout)
    ids = {p["proposal_id"] for p in listed["proposals"]}
    assert good in ids and BAD_ID in ids
    shown = _ok(bob.dmm("review", "list"))
    assert good in shown.stdout
    _ok(bob.dmm("log"))
    _ok(bob.dmm("log", "--json"))
    more = json.loads(_ok(bob.dmm(
        "write", "propose", "--path", "project/more.md", "--reason", "more", "--title",
        "Logs are kept thirty days", "--tags", "logs", "--json")).stdout)["proposal_id"]
    _ok(bob.dmm("review", "approve", good, "--reason", "agreed"))
    batch = bob.dmm("review", "process", "--all", "--json", ok=False)
    _ok(batch)
    result = json.loads(batch.stdout)
    skipped = [s for s in result["skipped"] if "bad" in s["branch"]]
    assert len(skipped) == 1 and skipped[0]["problem"] == "malformed"
    assert "\\udcff" in skipped[0]["branch"] or "\udcff" in skipped[0]["branch"]
    assert more in {r["proposal_id"] for r in result["results"]}
    assert batch.returncode == ExitCode.PROBLEMS_FOUND  # a person must look at the bad one


def test_a_proposal_whose_message_is_not_utf8_is_shown_and_decided(hostile):
    """git re-encodes such a message for `git log` itself; the author name and anything it
    leaves undecodable is shown with replacement characters."""
    _lead, bob, _good = hostile
    shown = json.loads(_ok(bob.dmm("review", "show", BAD_ID, "--json")).stdout)
    assert shown["reason"].startswith("reason ") and shown["reason"].endswith(" here")
    _ok(bob.dmm("review", "show", BAD_ID))
    _ok(bob.dmm("review", "reject", BAD_ID, "--reason", "it adds no file"))


def test_sync_says_why_it_leaves_a_non_utf8_local_branch(hostile):
    lead, _bob, _good = hostile
    synced = json.loads(_ok(lead.dmm("sync", "--json")).stdout)
    entries = [e for e in synced["not_pushed"] if "bad" in e["ref"]]
    assert len(entries) == 1 and "not a proposal id" in entries[0]["reason"]
    text = _ok(lead.dmm("sync")).stderr + _ok(lead.dmm("sync")).stdout
    assert "\\udcff" in text  # the byte is shown, escaped, never sent raw to the terminal
