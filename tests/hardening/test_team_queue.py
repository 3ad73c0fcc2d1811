"""`dmm review process --all` is a batch job a CI step can run: one branch it cannot process
(a name that is not a proposal id, a branch without a proposal, a proposal stale against the
branch) is reported with the reason and never stops the queue; the job fails only when
something needs a person."""

from __future__ import annotations

import json

from dmm.errors import ExitCode
from tests.conftest import git

OTHER = ("Every HTTP API error answers with an RFC 7807 problem document that names the "
         "error type, a title and the request id, so that clients can show a useful message.")
BODY = ("Background jobs run on the queue worker and never inside a web request, because a "
        "request that waits on a job times out behind the load balancer after thirty seconds.")


def _propose(store, path: str, title: str, body: str = BODY) -> str:
    text = ("---\ntags: [jobs]\npriority: 0.5\nconfidence: active\n---\n\n"
            f"# {title}\n\n{body}\n")
    proc = store.dmm("write", "propose", "--path", path, "--reason", "learned today",
                     input=text)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _hand_made_branch(store, name: str, trailers: str) -> None:
    """A branch made with plumbing, as an agent or a teammate could push one: it creates one
    memory file and its message carries whatever trailers its author wrote."""
    wt = store.root.parent / f"wt-{name.replace('/', '-')}"
    git(store.root, "worktree", "add", "-q", "-b", name, str(wt), "HEAD")
    (wt / ".dmm" / "memory" / "project" / "evil.md").write_text(
        "---\nid: mem_2026_01_01_777\ntags: [evil]\nscope: project\npriority: 0.5\n"
        "confidence: active\nstatus: active\n---\n\n# Evil\n\nSomething.\n")
    git(wt, "add", "-A")
    git(wt, "commit", "-qm", f"hand made\n\nsome text\n\n{trailers}")
    git(store.root, "worktree", "remove", "--force", str(wt))


def _process_all(store) -> tuple[int, dict]:
    proc = store.dmm("review", "process", "--all", "--json")
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_a_malformed_branch_name_is_reported_and_the_queue_goes_on(store):
    first = _propose(store, "project/jobs/worker.md", "Jobs run on the queue worker")
    _hand_made_branch(store, "dmm/proposals/evil",
                      "Dmm-Proposal: evil\nDmm-Type: create\nDmm-Path: project/evil.md")
    second = _propose(store, "project/api/errors.md", "API errors are problem documents", OTHER)
    listed = json.loads(store.dmm("review", "list", "--json").stdout)["proposals"]
    assert {p["proposal_id"] for p in listed} == {first, second}  # listing still works
    code, out = _process_all(store)
    assert code == ExitCode.PROBLEMS_FOUND  # the malformed branch needs a person
    decided = {r["proposal_id"]: r["decision"] for r in out["results"]}
    assert decided == {first: "approved", second: "approved"}, out
    [skipped] = out["skipped"]
    assert skipped["branch"] == "dmm/proposals/evil" and skipped["problem"] == "malformed"
    assert "not a proposal id" in skipped["reason"]
    assert (store.memory / "project" / "jobs" / "worker.md").exists()
    assert not (store.memory / "project" / "evil.md").exists()
    # the branch is left for a person, and the next run reports it again
    assert git(store.root, "branch", "--list", "dmm/proposals/evil").strip()
    code, out = _process_all(store)
    assert code == ExitCode.PROBLEMS_FOUND and out["processed"] == 0
    assert [s["branch"] for s in out["skipped"]] == ["dmm/proposals/evil"]


def test_a_branch_with_a_proposal_name_but_no_proposal_is_reported(store):
    _hand_made_branch(store, "dmm/proposals/prop_20260101_000000_abcd", "Signed-off-by: someone")
    good = _propose(store, "project/jobs/worker.md", "Jobs run on the queue worker")
    code, out = _process_all(store)
    assert code == ExitCode.PROBLEMS_FOUND
    assert [r["proposal_id"] for r in out["results"]] == [good]
    [skipped] = out["skipped"]
    assert skipped["problem"] == "unreadable" and "no proposal" in skipped["reason"]


def test_stale_proposals_are_reported_and_the_rest_processed(store):
    update = store.dmm("write", "update", "--path", "project/node18.md", "--reason", "newer LTS",
                       "--content", (store.memory / "project" / "node18.md").read_text()
                       .replace("Node.js 18 LTS", "Node.js 18.20 LTS"))
    assert update.returncode == 0, update.stderr
    stale_update = update.stdout.strip()
    stale_create = _propose(store, "project/jobs/worker.md", "Jobs run on the queue worker")
    fresh = _propose(store, "project/api/errors.md", "API errors are problem documents", OTHER)
    # meanwhile someone commits directly: the memory the update is about, and the file the
    # create wanted
    node = store.memory / "project" / "node18.md"
    node.write_text(node.read_text().replace("Install Node.js", "Always install Node.js"))
    (store.memory / "project" / "jobs" / "worker.md").write_text(
        (store.memory / "project" / "jobs" / "beanstalk.md").read_text()
        .replace("mem_", "mem_9").replace("id: mem_9", "id: mem_"))
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "edited by hand")
    head = git(store.root, "rev-parse", "HEAD")
    code, out = _process_all(store)
    assert code == ExitCode.PROBLEMS_FOUND
    assert [r["proposal_id"] for r in out["results"]] == [fresh]
    reasons = {s["proposal_id"]: (s["problem"], s["reason"]) for s in out["skipped"]}
    assert reasons[stale_update][0] == "stale" and "node18.md changed" in reasons[stale_update][1]
    assert reasons[stale_create][0] == "stale" and "was created" in reasons[stale_create][1]
    # the stale ones stay open for a person; the fresh one landed on top of the hand edit
    assert git(store.root, "rev-parse", "HEAD^1") == head
    listed = {p["proposal_id"] for p in json.loads(
        store.dmm("review", "list", "--json").stdout)["proposals"]}
    assert listed == {stale_update, stale_create}


def test_the_job_passes_when_nothing_needs_a_person(store):
    _propose(store, "project/jobs/worker.md", "Jobs run on the queue worker")
    code, out = _process_all(store)
    assert code == 0 and out["needs_person"] == 0 and out["skipped"] == []
    proc = store.dmm("review", "process", "--all")
    assert proc.returncode == 0 and "No pending proposals." in proc.stderr


def test_a_branch_declaring_a_path_outside_the_store_is_refused_and_the_queue_goes_on(store):
    """Issue 34, item 16: `Dmm-Path: ../../../../etc/passwd.md` once stopped the whole batch
    with git's "outside repository" (exit 8)."""
    first = _propose(store, "project/jobs/worker.md", "Jobs run on the queue worker")
    hostile = "prop_20260101_000000_abcdef01"
    _hand_made_branch(store, f"dmm/proposals/{hostile}",
                      f"Dmm-Proposal: {hostile}\nDmm-Type: create\n"
                      "Dmm-Path: ../../../../etc/passwd.md")
    code, out = _process_all(store)
    assert code == ExitCode.PROBLEMS_FOUND  # something was refused: a person must look
    assert {r["proposal_id"]: r["decision"] for r in out["results"]} == {first: "approved"}
    [skipped] = out["skipped"]
    assert skipped["proposal_id"] == hostile and skipped["problem"] == "refused"
    assert "unusable path" in skipped["reason"] and "'..'" in skipped["reason"]
    assert git(store.root, "rev-parse", "--verify", f"dmm/proposals/{hostile}")  # left alone
