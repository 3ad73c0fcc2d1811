"""`dmm sync --dry-run` previews what a real sync then pushes: the audit records and the
removal of the remote branches of proposals decided here, nothing pushed meanwhile."""

from __future__ import annotations

import json

from tests.conftest import git


def test_dry_run_names_what_the_real_sync_pushes(team):
    lead = team.lead
    pids = [lead.propose(f"project/p{k}.md", f"Builds number {k} are cached") for k in range(2)]
    lead.sync()
    bob = team.clone("bob")
    bob.sync()
    for pid in pids:
        bob.dmm("review", "reject", pid, "--reason", "we cache nothing")
    before = git(team.origin, "for-each-ref")

    preview = bob.json("sync", "--dry-run")
    text = bob.dmm("sync", "--dry-run").stdout
    assert git(team.origin, "for-each-ref") == before  # a preview pushes nothing
    assert preview["pushed"] == []
    planned = {(p["ref"], p["new"] is None) for p in preview["would_push"]}
    assert planned == {("dmm/audit", False), *((f"dmm/proposals/{p}", True) for p in pids)}
    assert "would push to origin:" in text and "pushed nothing" not in text
    for pid in pids:
        assert f"would remove dmm/proposals/{pid}" in text

    done = bob.sync()
    assert {(p["ref"], p["new"] is None) for p in done["pushed"]} == planned
    assert "would_push" not in done or done["would_push"] == []


def test_dry_run_of_a_clone_with_nothing_to_publish_says_so(team):
    team.lead.sync()
    bob = team.clone("bob")
    bob.sync()
    assert bob.json("sync", "--dry-run")["would_push"] == []
    assert "would push nothing" in bob.dmm("sync", "--dry-run").stdout
