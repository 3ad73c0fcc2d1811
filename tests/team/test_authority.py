"""One authority for "landed" and "decided": the canonical remote's main branch (issue #34,
class B). Every test is an attack from the issue, run with real clones, remotes and pushes:
what anyone can push (a record on dmm/audit, a fork, a work branch, HEAD) decides nothing."""

from __future__ import annotations

import subprocess

from tests.conftest import git, run_dmm
from tests.team.conftest import memory
from tests.team.test_forge import _forge_merge

def _empty_tree(clone) -> str:
    return subprocess.run(["git", "hash-object", "-t", "tree", "-w", "--stdin"], cwd=clone.root,
                          input="", capture_output=True, text=True, check=True).stdout.strip()


def _record(clone, pid: str, decision: str, reviewer: str, *, author: str,
            parents: list[str], extra: str = "") -> str:
    """A hand-made audit record, committed as ``author`` (what anyone with push can make)."""
    message = (f"dmm: {decision} {pid}\n\nmade up\n\nDmm-Proposal: {pid}\n"
               f"Dmm-Decision: {decision}\nDmm-Type: create\nDmm-Path: project/queue.md\n"
               f"Dmm-Reviewer: {reviewer}\n{extra}")
    args = ["git", "-c", f"user.name={author}", "-c", f"user.email={author.lower()}@x.org",
            "commit-tree", _empty_tree(clone)]
    for parent in parents:
        args += ["-p", parent]
    return subprocess.run(args, cwd=clone.root, input=message, capture_output=True, text=True,
                          check=True).stdout.strip()


def _approvals(clone, pid: str) -> list[dict]:
    return [e for e in clone.json("log")["entries"]
            if e["proposal_id"] == pid and e["event"] in ("approved", "modified")]


def _origin_records(team) -> list[str]:
    proc = subprocess.run(["git", "log", "--format=%(trailers:key=Dmm-Decision,valueonly)",
                           "dmm/audit"], cwd=team.origin, capture_output=True, text=True)
    return [line for line in proc.stdout.split() if line] if proc.returncode == 0 else []


def _proposed(team, who: str = "bob"):
    bob = team.clone(who)
    pid = bob.propose("project/queue.md", "Jobs run on the queue worker")
    bob.sync()
    return bob, pid


# item 4 ------------------------------------------------------------------------------------

def test_a_pushed_approval_record_approves_nothing(team):
    bob, pid = _proposed(team)
    mallory = team.clone("mallory")
    mallory.git("fetch", "-q", "origin")
    tip = mallory.git("rev-parse", f"origin/dmm/proposals/{pid}").strip()
    forged = _record(mallory, pid, "approved", "Lead", author="Lead", parents=[tip],
                     extra=f"Dmm-Landed: {tip}\nDmm-Via: squash\n")
    mallory.git("push", "-q", "origin", f"{forged}:refs/heads/dmm/audit")
    for clone in (team.lead, bob):
        clone.sync()
        assert pid in clone.open_ids(), clone.name
        assert _approvals(clone, pid) == [], clone.name
        assert clone.json("review", "list", "--status", "approved")["proposals"] == []
    # and the proposer's own branch is still there: nothing was decided
    assert bob.git("branch", "--list", f"dmm/proposals/{pid}").strip()


def test_a_record_on_a_forks_audit_branch_decides_nothing(team, tmp_path):
    bob, pid = _proposed(team)
    fork = tmp_path / "fork.git"
    git(team.base, "clone", "-q", "--bare", str(team.origin), str(fork))
    mallory = team.clone("mallory")
    tip = mallory.git("rev-parse", f"origin/dmm/proposals/{pid}").strip()
    forged = _record(mallory, pid, "rejected", "Carol", author="Carol", parents=[tip])
    git(mallory.root, "push", "-q", str(fork), f"{forged}:refs/heads/dmm/audit")
    lead = team.lead
    lead.git("remote", "add", "fork", str(fork))
    lead.git("fetch", "-q", "fork")
    lead.sync()
    assert pid in lead.open_ids()
    assert lead.json("review", "list", "--status", "rejected")["proposals"] == []
    assert [e for e in lead.json("log")["entries"] if e["event"] == "rejected"] == []


def test_a_close_record_naming_someone_else_than_its_author_is_shown_as_a_claim(team):
    bob, pid = _proposed(team)
    mallory = team.clone("mallory")
    tip = mallory.git("rev-parse", f"origin/dmm/proposals/{pid}").strip()
    forged = _record(mallory, pid, "rejected", "Lead", author="Mallory", parents=[tip])
    mallory.git("push", "-q", "origin", f"{forged}:refs/heads/dmm/audit")
    for clone in (team.lead, bob):
        clone.sync()
        [closed] = clone.json("review", "list", "--status", "rejected")["proposals"]
        assert (closed["decided_by"], closed["decided_by_claimed"], closed["committed_by"]) \
            == ("Lead", True, "Mallory"), clone.name
        said = "Lead (claimed; committed by Mallory)"
        assert said in clone.dmm("review", "list", "--status", "rejected").stdout
        assert said in clone.dmm("log", "--decision", "rejected").stdout
    # a record by the person it names is no claim
    other = bob.propose("project/b.md", "Retries back off exponentially")
    bob.sync()
    team.lead.sync()
    team.lead.dmm("review", "reject", other, "--reason", "not ours")
    team.lead.sync()
    bob.sync()
    listed = {p["proposal_id"]: p["decided_by_claimed"]
              for p in bob.json("review", "list", "--status", "rejected")["proposals"]}
    assert listed == {pid: True, other: False}


# item 5 ------------------------------------------------------------------------------------

def test_an_agent_committing_a_proposal_on_its_work_branch_approves_nothing(team):
    bob, pid = _proposed(team)
    agent = team.clone("agent")
    agent.git("checkout", "-q", "-b", "agent/work")
    agent.git("checkout", f"origin/dmm/proposals/{pid}", "--", ".dmm/memory/project/queue.md")
    agent.git("commit", "-qm", "agent work")
    said = agent.dmm("sync", "--json", env={"DMM_AGENT": "claude"})
    assert "approved" not in said.stdout
    assert _origin_records(team) == []
    assert agent.records() == []
    for clone in (agent, bob, team.lead):
        clone.sync()
        assert pid in clone.open_ids(), clone.name
        assert _approvals(clone, pid) == [], clone.name


# item 6 ------------------------------------------------------------------------------------

def test_a_merge_on_a_forks_default_branch_approves_nothing(team, tmp_path):
    bob, pid = _proposed(team)
    fork = tmp_path / "fork.git"
    git(team.base, "clone", "-q", "--bare", str(team.origin), str(fork))
    work = tmp_path / "fork-work"
    git(tmp_path, "clone", "-q", str(fork), str(work))
    git(work, "fetch", "-q", str(team.origin), f"refs/heads/dmm/proposals/{pid}:refs/p")
    git(work, "-c", "user.name=Lead", "-c", "user.email=lead@example.com", "merge", "-q",
        "--no-ff", "refs/p", "-m", "Merge the queue rule")
    git(work, "push", "-q", "origin", "main")
    for clone in (team.lead, bob):
        clone.git("remote", "add", "fork", str(fork))
        clone.git("fetch", "-q", "fork")
        clone.git("remote", "set-head", "fork", "--auto")
        clone.sync()
        assert pid in clone.open_ids(), clone.name
        assert _approvals(clone, pid) == [], clone.name
    assert bob.git("branch", "--list", f"dmm/proposals/{pid}").strip()


# item 7 ------------------------------------------------------------------------------------

def _rejected(team):
    bob, pid = _proposed(team)
    team.lead.sync()
    team.lead.dmm("review", "reject", pid, "--reason", "we use spaces")
    team.lead.sync()
    bob.sync()
    assert [p["proposal_id"] for p in
            bob.json("review", "list", "--status", "rejected")["proposals"]] == [pid]
    return bob, pid


def _still_rejected(clone, pid):
    assert [p["proposal_id"] for p in
            clone.json("review", "list", "--status", "rejected")["proposals"]] == [pid]
    assert [e["proposal_id"] for e in clone.json("log", "--decision", "rejected")["entries"]] \
        == [pid]


def test_a_fast_forward_that_hides_the_records_is_refused_loudly(team):
    bob, pid = _rejected(team)
    mallory = team.clone("mallory")
    tip = mallory.git("rev-parse", "origin/dmm/audit").strip()
    tree = mallory.git("rev-parse", "HEAD^{tree}").strip()
    hide = subprocess.run(["git", "commit-tree", tree, "-p", tip, "-m", "tidy"],
                          cwd=mallory.root, capture_output=True, text=True,
                          check=True).stdout.strip()
    mallory.git("push", "-q", "origin", f"{hide}:refs/heads/dmm/audit")
    for clone in (bob, team.lead):
        proc = clone.dmm("sync", ok=False)
        assert proc.returncode != 0 and "dmm/audit" in proc.stderr, (clone.name, proc.stderr)
        assert "drops" in proc.stderr or "hides" in proc.stderr
        _still_rejected(clone, pid)
        assert clone.git("rev-parse", "dmm/audit").strip() != hide


def test_an_audit_branch_replaced_by_another_history_is_refused_loudly(team):
    bob, pid = _rejected(team)
    mallory = team.clone("mallory")
    other = _record(mallory, "prop_20260101_000000_aaaaaaaa", "withdrawn", "Mallory",
                    author="Mallory", parents=[])
    mallory.git("push", "-q", "--force", "origin", f"{other}:refs/heads/dmm/audit")
    proc = bob.dmm("sync", ok=False)
    assert proc.returncode != 0 and "dmm/audit" in proc.stderr
    _still_rejected(bob, pid)


# item 8 ------------------------------------------------------------------------------------

def test_committing_on_your_own_checked_out_proposal_branch_is_not_an_approval(team):
    bob, pid = _proposed(team)
    bob.git("checkout", "-q", f"dmm/proposals/{pid}")
    (bob.root / "notes.txt").write_text("mine\n")
    bob.git("add", "notes.txt")
    bob.git("commit", "-qm", "my own work on the branch")
    assert _approvals(bob, pid) == []
    assert pid in bob.open_ids()
    bob.sync()
    assert bob.git("symbolic-ref", "HEAD").strip() == f"refs/heads/dmm/proposals/{pid}"
    assert bob.git("branch", "--list", f"dmm/proposals/{pid}").strip()


def test_sync_keeps_a_decided_branch_that_is_checked_out_or_holds_the_only_copy(team):
    bob = team.clone("bob")
    first = bob.propose("project/a.md", "Retries back off exponentially")
    second = bob.propose("project/b.md", "Jobs run on the queue worker")
    bob.sync()
    lead = team.lead
    lead.sync()
    lead.dmm("review", "reject", first, "--reason", "no")
    lead.dmm("review", "reject", second, "--reason", "no")
    lead.sync()
    # the first is checked out in a linked worktree; the second gained a commit of bob's
    wt = team.base / "bob-wt"
    bob.git("worktree", "add", "-q", str(wt), f"dmm/proposals/{first}")
    bob.git("checkout", "-q", f"dmm/proposals/{second}")
    (bob.root / "mine.txt").write_text("only here\n")
    bob.git("add", "mine.txt")
    bob.git("commit", "-qm", "only copy")
    only = bob.git("rev-parse", "HEAD").strip()
    bob.git("checkout", "-q", "main")
    bob.sync()
    assert bob.git("branch", "--list", f"dmm/proposals/{first}").strip()
    assert bob.git("rev-parse", f"dmm/proposals/{second}").strip() == only
    assert git(wt, "symbolic-ref", "HEAD").strip() == f"refs/heads/dmm/proposals/{first}"


# item 9 ------------------------------------------------------------------------------------

def test_a_shallow_clone_says_so_and_publishes_no_inferred_record(team):
    bob, pid = _proposed(team)
    _forge_merge(team, pid, "merge", delete_branch=False)
    shallow = team.base / "shallow"
    git(team.base, "clone", "-q", "--depth", "1", f"file://{team.origin}", str(shallow))
    git(shallow, "config", "user.name", "Newcomer")
    git(shallow, "config", "user.email", "new@example.com")
    for args in (["review", "list"], ["log"], ["sync"]):
        proc = run_dmm(*args, cwd=shallow)
        assert "shallow" in proc.stderr, (args, proc.stderr)
    assert _origin_records(team) == []
    team.lead.sync()
    assert [e["via"] for e in _approvals(team.lead, pid)] == ["merge"]


def test_a_partial_clone_says_so(team):
    _proposed(team)
    git(team.origin, "config", "uploadpack.allowFilter", "true")
    partial = team.base / "partial"
    git(team.base, "clone", "-q", "--filter=blob:none", f"file://{team.origin}", str(partial))
    proc = run_dmm("review", "list", cwd=partial)
    assert "partial" in proc.stderr, proc.stderr


# the canonical branch --------------------------------------------------------------------

def test_a_solo_repository_without_a_remote_counts_its_own_main_branch(repo):
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "the store")
    proc = run_dmm("write", "propose", "--path", "project/solo.md", "--reason", "r", "--json",
                   cwd=repo.root, input=memory("Solo work is still reviewed"))
    assert proc.returncode == 0, proc.stderr
    import json

    pid = json.loads(proc.stdout)["proposal_id"]
    assert run_dmm("review", "approve", pid, "--reason", "fine", cwd=repo.root).returncode == 0
    log = json.loads(run_dmm("log", "--json", cwd=repo.root).stdout)["entries"]
    assert [e["event"] for e in log if e["proposal_id"] == pid] == ["approved", "proposed"]
    listed = json.loads(run_dmm("review", "list", "--json", cwd=repo.root).stdout)["proposals"]
    assert listed == []
    assert "shallow" not in proc.stderr


# signing ---------------------------------------------------------------------------------

def _signing(clone, tmp_path, email: str) -> None:
    """An SSH signing key made here, trusted for ``email`` in an allowed-signers file."""
    key = tmp_path / f"{clone.name}_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", email, "-f",
                    str(key)], check=True, capture_output=True)
    allowed = tmp_path / "allowed_signers"
    public = (tmp_path / f"{clone.name}_key.pub").read_text().split()
    with allowed.open("a") as out:
        out.write(f"{email} {public[0]} {public[1]}\n")
    clone.git("config", "gpg.format", "ssh")
    clone.git("config", "user.signingkey", str(key))
    clone.git("config", "gpg.ssh.allowedSignersFile", str(allowed))


def test_signed_decisions_are_shown_verified_and_unsigned_ones_are_not(team, tmp_path):
    lead = team.lead
    _signing(lead, tmp_path, "lead@example.com")
    bob = team.clone("bob")
    kept = bob.propose("project/queue.md", "Jobs run on the queue worker")
    dropped = bob.propose("project/tabs.md", "Indent with tabs")
    bob.sync()
    lead.sync()
    lead.dmm("review", "approve", kept, "--reason", "good")
    lead.dmm("review", "reject", dropped, "--reason", "we use spaces")
    # git itself checks both: the approval on main and the record on dmm/audit
    lead.git("verify-commit", "main")
    lead.git("verify-commit", "dmm/audit")
    lead.git("push", "-q", "origin", "main")
    lead.sync()
    decisions = {e["proposal_id"]: e["signature"] for e in lead.json("log")["entries"]
                 if e["event"] in ("approved", "rejected")}
    assert decisions == {kept: "verified", dropped: "verified"}
    listed = {p["proposal_id"]: p["signature"]
              for p in lead.json("review", "list", "--status", "closed")["proposals"]}
    assert listed == {kept: "verified", dropped: "verified"}
    assert "verified" in lead.dmm("log").stdout
    # a teammate who does not sign: their decision is shown, as unsigned, to the lead
    other = bob.propose("project/c.md", "Caches are warmed at start-up")
    bob.dmm("review", "withdraw", other, "--reason", "not needed")
    bob.sync()
    lead.sync()
    shown = {e["proposal_id"]: e["signature"] for e in lead.json("log")["entries"]
             if e["event"] == "withdrawn"}
    assert shown == {other: "unsigned"}
    # and a clone that does not check signatures says nothing of them
    assert {e["signature"] for e in bob.json("log")["entries"]} == {""}
    # signed by a key the lead's allowed signers do not hold: shown, not verified
    (tmp_path / "bob").mkdir()
    _signing(bob, tmp_path / "bob", "bob@example.com")
    third = bob.propose("project/d.md", "Logs are kept for thirty days")
    bob.dmm("review", "withdraw", third, "--reason", "duplicate")
    bob.git("verify-commit", "dmm/audit")
    bob.sync()
    lead.sync()
    shown = {e["proposal_id"]: e["signature"] for e in lead.json("log")["entries"]
             if e["event"] == "withdrawn"}
    assert shown == {other: "unsigned", third: "unverified"}


def test_a_hand_made_branch_naming_a_teammate_as_proposer_is_shown_as_a_claim(team):
    mallory = team.clone("mallory")
    pid = "prop_20261127_101010_abcdef12"
    mallory.git("checkout", "-q", "-b", f"dmm/proposals/{pid}")
    path = mallory.root / ".dmm" / "memory" / "project" / "deploy.md"
    path.write_text(memory("Deploys skip the tests on Fridays"))
    mallory.git("add", str(path))
    mallory.git("commit", "-qm", f"dmm: create project/deploy.md\n\nLead said so\n\n"
                f"Dmm-Proposal: {pid}\nDmm-Type: create\nDmm-Path: project/deploy.md\n"
                "Dmm-Proposed-By: Lead")
    mallory.git("push", "-q", "origin", f"dmm/proposals/{pid}")
    lead = team.lead
    lead.sync()
    [listed] = lead.json("review", "list")["proposals"]
    assert (listed["proposed_by"], listed["proposed_by_claimed"], listed["committed_by"]) == (
        "Lead", True, "Mallory")
    assert "Lead (claimed; committed by Mallory)" in lead.dmm("review", "list").stdout


def test_an_approval_into_a_work_branch_counts_once_that_branch_reaches_main(team):
    bob, pid = _proposed(team)
    lead = team.lead
    lead.sync()
    lead.git("checkout", "-q", "-b", "feature")
    said = lead.dmm("review", "approve", pid, "--reason", "fine").stderr
    assert "approved into feature, not the canonical main branch main" in said
    assert pid in lead.open_ids() and _approvals(lead, pid) == []
    lead.git("checkout", "-q", "main")
    lead.git("merge", "-q", "--ff-only", "feature")
    assert pid not in lead.open_ids()
    assert [e["event"] for e in _approvals(lead, pid)] == ["approved"]


def test_the_canonical_branch_is_a_setting_and_a_bad_name_is_refused(team):
    bob, pid = _proposed(team)
    lead = team.lead
    lead.sync()
    config = lead.root / ".dmm" / "config.toml"
    original = config.read_text()
    assert 'main_branch = ""' in original  # dmm init writes the setting, empty: the default
    config.write_text(original.replace('main_branch = ""', 'main_branch = "release"'))
    lead.dmm("review", "approve", pid, "--reason", "fine")  # into main: not the canonical one
    assert _approvals(lead, pid) == [] and pid in lead.open_ids()
    lead.git("branch", "release", "main")  # main reaches release: now it landed
    assert pid not in lead.open_ids()
    assert [e["event"] for e in _approvals(lead, pid)] == ["approved"]
    config.write_text(original.replace('main_branch = ""',
                                       'main_branch = "--upload-pack=touch /tmp/x"'))
    proc = lead.dmm("review", "list", ok=False)
    assert proc.returncode != 0 and "team.main_branch" in proc.stderr
    assert "Traceback" not in proc.stderr


# round 3 attack: the canonical setting from a checked-out branch -------------------------

def test_a_checked_out_branch_naming_itself_canonical_publishes_nothing(team):
    """A contributor pushes a work branch that holds a teammate's open proposal and sets
    `[team] main_branch` to itself; a reviewer checks it out to read it and runs dmm sync.
    The branch is no authority: nothing is removed from the shared remote, no record pushed."""
    bob, pid = _proposed(team)
    mallory = team.clone("mallory")
    mallory.git("checkout", "-q", "-b", "evil")
    mallory.git("merge", "-q", "--no-ff", f"origin/dmm/proposals/{pid}", "-m", "looks fine")
    config = mallory.root / ".dmm" / "config.toml"
    config.write_text(config.read_text().replace('main_branch = ""', 'main_branch = "evil"'))
    mallory.git("commit", "-qam", "tidy the settings")
    mallory.git("push", "-q", "origin", "evil")
    lead = team.lead
    lead.git("fetch", "-q", "origin")
    lead.git("checkout", "-q", "evil")
    said = lead.sync()
    assert any("names evil as the main branch" in w for w in said["warnings"]), said
    remote = lead.git("ls-remote", "origin", f"refs/heads/dmm/proposals/{pid}")
    assert remote.strip(), "the proposal branch was removed from the shared remote"
    assert _origin_records(team) == []
    lead.git("checkout", "-q", "main")
    bob.sync()
    assert pid in bob.open_ids()
    # once the team's own main names the branch, sync publishes from it again
    config = lead.root / ".dmm" / "config.toml"
    config.write_text(config.read_text().replace('main_branch = ""', 'main_branch = "trunk"'))
    lead.git("commit", "-qam", "the team's main is trunk")
    lead.git("push", "-q", "origin", "main", "main:trunk")
    assert lead.sync()["warnings"] == []


def test_a_decision_signed_by_one_teammate_in_anothers_name_is_not_verified(team, tmp_path):
    """Both are trusted signers of the team; Mallory signs a rejection she authored as Lead,
    naming Lead: the signature is good, but it is Mallory's, so the decision is not shown as
    Lead's verified one."""
    bob, pid = _proposed(team)
    lead = team.lead
    _signing(lead, tmp_path, "lead@example.com")
    mallory = team.clone("mallory")
    (tmp_path / "m").mkdir()
    _signing(mallory, tmp_path / "m", "mallory@example.com")
    allowed = (tmp_path / "m" / "allowed_signers").read_text()
    with (tmp_path / "allowed_signers").open("a") as out:  # the team's file: both keys
        out.write(allowed)
    lead.git("config", "gpg.ssh.allowedSignersFile", str(tmp_path / "allowed_signers"))
    mallory.git("fetch", "-q", "origin")
    tip = mallory.git("rev-parse", f"origin/dmm/proposals/{pid}").strip()
    message = (f"dmm: rejected {pid}\n\nno\n\nDmm-Proposal: {pid}\nDmm-Decision: rejected\n"
               f"Dmm-Type: create\nDmm-Path: project/queue.md\nDmm-Reviewer: Lead\n")
    forged = subprocess.run(
        ["git", "-c", "user.name=Lead", "-c", "user.email=lead@example.com", "commit-tree",
         "-S", _empty_tree(mallory), "-p", tip], cwd=mallory.root, input=message,
        capture_output=True, text=True, check=True).stdout.strip()
    mallory.git("push", "-q", "origin", f"{forged}:refs/heads/dmm/audit")
    lead.sync()
    assert lead.git("log", "-1", "--format=%G? %GS", "origin/dmm/audit").split() == [
        "G", "mallory@example.com"]  # git: a good signature, by Mallory's key
    shown = [e for e in lead.json("log")["entries"] if e["proposal_id"] == pid
             and e["event"] == "rejected"]
    assert [e["signature"] for e in shown] == ["unverified"]
