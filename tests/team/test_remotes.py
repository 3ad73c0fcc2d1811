"""Remotes are part of the store: a clone sees the team's proposals and records from the
remote-tracking refs, and `dmm sync` fetches and publishes without ever forcing anything."""

from __future__ import annotations

import json
import threading

from tests.conftest import git
from tests.team.conftest import memory


def test_a_fresh_clone_sees_the_teams_queue_and_record_without_any_setting(team):
    lead = team.lead
    open_one = lead.propose("project/queue.md", "Jobs run on the queue worker")
    rejected = lead.propose("project/tabs.md", "Indent with tabs")
    lead.dmm("review", "reject", rejected, "--reason", "we use spaces")
    pushed = lead.sync()
    assert {p["ref"] for p in pushed["pushed"]} == {"dmm/audit", f"dmm/proposals/{open_one}"}
    newcomer = team.clone("newcomer")  # a plain git clone, no dmm sync
    said = newcomer.dmm("init", "--no-hooks").stderr
    assert "read from origin after any fetch" in said and "dmm sync" in said
    assert newcomer.open_ids() == {open_one}
    closed = newcomer.json("review", "list", "--status", "rejected")["proposals"]
    assert [p["proposal_id"] for p in closed] == [rejected]
    events = newcomer.json("log", "--decision", "rejected")["entries"]
    assert [e["proposal_id"] for e in events] == [rejected]
    shown = newcomer.json("review", "show", open_one)
    assert shown["remote"] == "origin" and "+# Jobs run on the queue worker" in shown["diff"]
    # a new memory in the clone never takes an id the team's record names already
    ids = {e["memory_id"] for e in newcomer.json("log")["entries"]}
    mine = newcomer.json("write", "propose", "--path", "project/new.md", "--reason", "r",
                         input=memory("Something new entirely"))["memory_id"]
    assert mine not in ids


def test_sync_says_what_it_fetched_and_pushed_and_prunes_what_was_decided(team):
    ann, bob = team.lead, team.clone("bob")
    first = ann.propose("project/a.md", "Retries back off exponentially")
    second = ann.propose("project/b.md", "Jobs run on the queue worker")
    out = ann.sync()
    assert sorted(p["what"] for p in out["pushed"]) == sorted([f"proposal {first}",
                                                               f"proposal {second}"])
    out = bob.sync()
    assert out["fetched"]["new_proposals"] == sorted([first, second]) and out["pushed"] == []
    bob.dmm("review", "approve", first)
    bob.dmm("review", "reject", second, "--reason", "duplicate of the worker rule")
    out = bob.sync()
    # the rejection is published with its record; the approval waits for bob's `git push`
    assert {(p["ref"], p["new"] is None) for p in out["pushed"]} == {
        ("dmm/audit", False), (f"dmm/proposals/{second}", True)}
    assert out["branch"] == {"branch": "main", "upstream": "origin/main", "ahead": 2,
                             "behind": 0}
    bob.git("push", "-q", "origin", "main")
    out = bob.sync()
    assert [(p["ref"], p["new"]) for p in out["pushed"]] == [(f"dmm/proposals/{first}", None)]
    assert git(team.origin, "for-each-ref", "refs/heads/dmm/proposals/") == ""
    out = ann.sync()
    assert sorted((p["proposal_id"], p["decision"]) for p in out["pruned"]) == sorted(
        [(first, "approved"), (second, "rejected")])
    assert out["fetched"]["new_records"] == 1 and out["branch"]["behind"] == 2
    assert ann.git("branch", "--list", "dmm/proposals/*") == "" and ann.open_ids() == set()
    # ann's own files and branch are untouched until she pulls
    assert not (ann.root / ".dmm" / "memory" / "project" / "a.md").exists()
    assert ann.git("status", "--porcelain") == ""
    decided = {(e["proposal_id"], e["event"]) for e in ann.json("log")["entries"]}
    assert {(first, "approved"), (second, "rejected")} <= decided
    team.fsck()


def test_sync_never_overwrites_another_clones_version(team):
    ann, bob = team.lead, team.clone("bob")
    pid = ann.propose("project/a.md", "Retries back off exponentially")
    ann.sync()
    bob.sync()
    # bob makes his own commit on ann's proposal and pushes it by hand; ann has another one
    wt = team.base / "bob-wt"
    bob.git("worktree", "add", "-q", "-b", "mine", str(wt), f"origin/dmm/proposals/{pid}")
    (wt / ".dmm" / "memory" / "project" / "a.md").write_text(memory("Retries back off slowly"))
    git(wt, "commit", "-qam", "bob's version")
    git(wt, "push", "-q", "origin", f"HEAD:refs/heads/dmm/proposals/{pid}")
    theirs = git(team.origin, "rev-parse", f"dmm/proposals/{pid}")
    # ann adds her own commit on her branch of the proposal: the two versions diverged
    wt = team.base / "ann-wt"
    ann.git("worktree", "add", "-q", str(wt), f"dmm/proposals/{pid}")
    (wt / ".dmm" / "memory" / "project" / "a.md").write_text(memory("Retries back off fast"))
    git(wt, "commit", "-qam", "ann's version")
    ann.git("worktree", "remove", str(wt))
    out = ann.sync()
    assert git(team.origin, "rev-parse", f"dmm/proposals/{pid}") == theirs
    assert out["pushed"] == []
    assert [n["reason"] for n in out["not_pushed"] if pid in n["ref"]] == [
        "origin holds another version of this proposal: dmm never overwrites it"]


def test_racing_syncs_from_many_clones_all_land_without_force(team):
    clones = [team.clone(f"c{n}") for n in range(5)]
    pids = {}
    for clone in clones:
        pids[clone.name] = [clone.propose(f"project/{clone.name}-{k}.md",
                                          f"Rule {k} of {clone.name} about caching")
                            for k in range(2)]
        clone.dmm("review", "reject", pids[clone.name][0], "--reason", "not now")
    results = {}

    def run(clone):
        results[clone.name] = clone.dmm("sync", "--json", ok=False)

    threads = [threading.Thread(target=run, args=(c,)) for c in clones]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.returncode == 0 for r in results.values()), \
        {k: r.stderr for k, r in results.items() if r.returncode}
    for clone in clones:
        clone.sync()
    expected = sorted(f"{p[0]}:rejected" for p in pids.values())
    for clone in clones:
        assert clone.records() == expected, clone.name
        assert clone.open_ids() == {p[1] for p in pids.values()}
    origin_refs = git(team.origin, "for-each-ref", "--format=%(refname)", "refs/heads/dmm/")
    assert sorted(origin_refs.split()) == sorted(
        ["refs/heads/dmm/audit"] + [f"refs/heads/dmm/proposals/{p[1]}" for p in pids.values()])
    reflog = git(team.origin, "log", "-g", "--format=%gs", "dmm/audit", "--") \
        if (team.origin / "logs").exists() else ""
    assert "forced" not in reflog
    team.fsck()


def test_a_teammates_proposal_is_decided_from_its_remote_tracking_ref(team):
    ann, bob = team.lead, team.clone("bob")
    approved = ann.propose("project/a.md", "Retries back off exponentially")
    deferred = ann.propose("project/b.md", "Jobs run on the queue worker")
    ann.sync()
    bob.git("fetch", "-q", "origin")  # plain git is enough to see them
    assert bob.git("branch", "--list", "dmm/*") == ""
    bob.dmm("review", "approve", approved)
    bob.dmm("review", "defer", deferred, "--reason", "ask the platform team")
    again = bob.dmm("review", "approve", approved, ok=False)
    assert again.returncode != 0 and "already approved" in again.stderr
    assert (bob.root / ".dmm" / "memory" / "project" / "a.md").exists()
    status = {p["proposal_id"]: p["status"] for p in bob.json("review", "list")["proposals"]}
    assert status == {deferred: "deferred"}
    bob.sync()
    ann.sync()
    # bob's approval is his until he pushes his branch: for ann the proposal is still open
    assert approved in ann.open_ids()
    bob.git("push", "-q", "origin", "main")
    ann.sync()
    assert {p["proposal_id"]: p["status"] for p in ann.json("review", "list")["proposals"]} \
        == {deferred: "deferred"}


def test_a_dry_run_changes_nothing_here_or_there(team):
    ann, bob = team.lead, team.clone("bob")
    ann.propose("project/a.md", "Retries back off exponentially")
    rejected = ann.propose("project/b.md", "Jobs run on the queue worker")
    ann.dmm("review", "reject", rejected, "--reason", "no")
    ann.sync()
    bob.propose("project/c.md", "Cache keys include the tenant")
    bob.dmm("review", "reject", bob.propose("project/d.md", "Indent with tabs"), "--reason", "x")
    before = bob.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
    origin_before = git(team.origin, "for-each-ref")
    proc = bob.dmm("sync", "--dry-run")
    assert "would join this clone's audit records with origin's" in proc.stdout
    assert "would push to origin:" in proc.stdout and "pushed nothing" not in proc.stdout
    assert "dmm/audit" in proc.stdout and "(new): proposal" in proc.stdout
    assert bob.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/") == before
    assert git(team.origin, "for-each-ref") == origin_before


def test_a_proposal_from_a_clone_ahead_asks_to_pull_first_instead_of_rejecting(team):
    ann, bob = team.lead, team.clone("bob")
    ann.dmm("review", "approve", ann.propose("project/a.md", "Retries back off exponentially"))
    ann.git("push", "-q", "origin", "main")
    later = ann.propose("project/b.md", "Jobs run on the queue worker")  # made on the newer main
    ann.sync()
    bob.sync()  # bob fetched, but has not pulled
    refused = bob.dmm("review", "approve", later, ok=False)
    assert refused.returncode != 0 and "git pull" in refused.stderr
    assert "origin/main" in refused.stderr
    proc = bob.dmm("review", "process", "--all", "--json", ok=False)
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and out["processed"] == 0 and out["skipped"][0]["problem"] == "refused"
    assert later in bob.open_ids()  # never rejected for it
    bob.git("pull", "-q", "--ff-only")
    bob.dmm("review", "approve", later, "--force")  # near a.md: the reviewer would defer it
