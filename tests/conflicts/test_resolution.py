"""Resolving conflicts: every action, undo, --propose and --auto, on real repositories through
the real command line; failure injection in tests/conflicts/test_resolution_safety.py."""

from __future__ import annotations

import json

import pytest

from dmm.errors import ExitCode
from tests.conftest import git

UPLOAD = ("Uploads through the public gateway are refused above the size ceiling, answered with "
          "status 413. The ceiling covers multipart and JSON bodies alike.")
OLD_LIMIT, NEW_LIMIT = "mem_2025_01_10_001", "mem_2025_06_10_001"
BEANSTALK, SQS = "mem_2025_02_01_001", "mem_2026_01_10_001"
NODE18, NODE22 = "mem_2025_05_06_001", "mem_2026_02_11_002"


def _add(repo, path, mem_id, title, body, **kw):
    repo.add(path, mem_id, title, body, extra=f"created: {mem_id[4:14].replace('_', '-')}\n"
             + kw.pop("extra", ""), **kw)


@pytest.fixture
def store(repo):
    _add(repo, "project/limit_old.md", OLD_LIMIT, "Upload size ceiling on the gateway",
         f"The ceiling is 8 MB. {UPLOAD}", tags="[uploads, limits]")
    _add(repo, "project/limit_new.md", NEW_LIMIT, "Upload size ceiling of the gateway",
         f"The ceiling is 50,000,000 bytes. {UPLOAD}", tags="[uploads, limits]")
    _add(repo, "project/jobs/beanstalk.md", BEANSTALK, "Jobs are queued in Beanstalkd",
         "Background jobs are queued in Beanstalkd and picked up by the worker pool.",
         tags="[jobs, queue]")
    _add(repo, "project/jobs/sqs.md", SQS, "Background jobs moved to SQS",
         "In January we migrated the job queue from Beanstalkd to SQS; the workers now poll SQS.",
         tags="[jobs, queue]")
    _add(repo, "project/node18.md", NODE18, "The frontend build requires Node.js 18",
         "Install Node.js 18 LTS to build the web client.", tags="[node, frontend]")
    _add(repo, "project/node22.md", NODE22, "Node.js 22 is the required runtime",
         "The web client now builds with Node.js 22.", tags="[node, frontend]",
         extra=f"supersedes: [{NODE18}]\n")
    repo.root.joinpath("notes.txt").write_text("the user's own file\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "memories")
    return repo


def conflicts(repo, *args) -> dict[frozenset, dict]:
    proc = repo.dmm("conflicts", "list", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return {frozenset(m["memory_id"] for m in c["memories"]): c
            for c in json.loads(proc.stdout)["conflicts"]}


def cid(repo, a, b) -> str:
    return conflicts(repo, "--status", "all")[frozenset((a, b))]["conflict_id"]


def resolve(repo, *args) -> dict:
    proc = repo.dmm("conflicts", "resolve", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def snapshot(repo) -> dict:
    """Everything a resolution might touch: refs, work tree files, index entries."""
    files = {p.relative_to(repo.root).as_posix(): p.read_bytes()
             for p in repo.root.rglob("*") if p.is_file() and ".git" not in p.parts
             and "index" not in p.relative_to(repo.root).parts[:2]}
    return {"refs": git(repo.root, "for-each-ref"), "head": git(repo.root, "rev-parse", "HEAD"),
            "files": files, "index": git(repo.root, "ls-files", "-s"),
            "status": git(repo.root, "status", "--porcelain")}


def frontmatter(path) -> str:
    return path.read_text().split("---")[1]


def test_deprecate_moves_the_target_links_the_survivor_and_commits_once(store):
    # the user's own work, staged and unstaged, must come through untouched
    store.root.joinpath("notes.txt").write_text("edited, not staged\n")
    store.root.joinpath("staged.txt").write_text("staged\n")
    git(store.root, "add", "staged.txt")
    before = git(store.root, "rev-parse", "HEAD").strip()
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    result = resolve(store, conflict, "--action", "deprecate", "--target", OLD_LIMIT,
                     "--reason", "the gateway limit was raised in June")
    assert result["success"] and result["action_taken"] == "deprecate"
    assert result["memories_deprecated"] == [OLD_LIMIT]
    assert result["memories_modified"] == [NEW_LIMIT]
    assert git(store.root, "rev-parse", "HEAD~1").strip() == before  # one commit
    assert not store.memory.joinpath("project/limit_old.md").exists()
    moved = store.memory / "deprecated/project/limit_old.md"
    assert "status: deprecated" in frontmatter(moved)
    assert f"supersedes: [{OLD_LIMIT}]" in frontmatter(store.memory / "project/limit_new.md")
    message = git(store.root, "log", "-1", "--format=%B")
    for trailer in (f"Dmm-Conflict: {conflict}", "Dmm-Resolution: deprecate",
                    "Dmm-Reason: the gateway limit was raised in June", "Dmm-Resolved-By: Test User"):
        assert trailer in message
    changed = git(store.root, "show", "--name-only", "--format=", "HEAD").split()
    assert all(p.startswith(".dmm/") for p in changed)
    assert store.root.joinpath("notes.txt").read_text() == "edited, not staged\n"
    assert "A  staged.txt" in git(store.root, "status", "--porcelain")
    # the old content stays in git
    assert "8 MB" in git(store.root, "show", f"{before}:.dmm/memory/project/limit_old.md")
    listed = conflicts(store, "--status", "all")[frozenset((OLD_LIMIT, NEW_LIMIT))]
    assert listed["status"] == "resolved" and listed["decision"]["action"] == "deprecate"
    assert frozenset((OLD_LIMIT, NEW_LIMIT)) not in conflicts(store)
    log = json.loads(store.dmm("log", "--json").stdout)
    assert any(e["event"] == "resolved:deprecate" for e in log["entries"])


def test_deprecate_by_path_and_a_target_outside_the_conflict(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    bad = store.dmm("conflicts", "resolve", conflict, "--action", "deprecate", "--target", SQS,
                    "--reason", "x")
    assert bad.returncode == ExitCode.INVALID_INPUT and "not one of" in bad.stderr
    result = resolve(store, conflict, "--action", "deprecate", "--target",
                     "project/limit_old.md", "--reason", "raised")
    assert result["memories_deprecated"] == [OLD_LIMIT]


def test_merge_with_a_body_builds_a_memory_that_supersedes_both(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    body = ("# Upload ceiling of the public gateway\n\nThe gateway refuses uploads above 50 MB "
            "with 413, for multipart and JSON bodies alike; larger documents use pre-signed "
            "uploads.\n")
    result = resolve(store, conflict, "--action", "merge", "--content", body,
                     "--reason", "one memory for one limit")
    new_id = result["memories_created"][0]
    assert sorted(result["memories_deprecated"]) == sorted([OLD_LIMIT, NEW_LIMIT])
    path = store.memory / "project/upload_ceiling_public_gateway.md"
    meta = frontmatter(path)
    assert f"id: {new_id}" in meta and "scope: project" in meta
    assert f"supersedes: [{OLD_LIMIT}, {NEW_LIMIT}]" in meta and "tags: [uploads, limits]" in meta
    for old in ("limit_old.md", "limit_new.md"):
        assert "status: deprecated" in frontmatter(store.memory / "deprecated/project" / old)
    show = json.loads(store.dmm("show", new_id, "--json").stdout)
    assert show["memories"][0]["status"] == "active" if "memories" in show else True
    assert json.loads(store.dmm("validate", "--json").stdout)["errors"] == 0


def test_merge_with_a_whole_file_and_a_path(store, tmp_path):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    merged = tmp_path / "merged.md"
    merged.write_text("---\ntags: [uploads]\nscope: project\npriority: 0.9\nconfidence: stable\n"
                      "---\n\n# Gateway upload ceiling\n\n50 MB, answered with 413 above it.\n")
    result = resolve(store, conflict, "--action", "merge", "--file", str(merged),
                     "--path", "project/api/upload_ceiling.md", "--reason", "merged")
    meta = frontmatter(store.memory / "project/api/upload_ceiling.md")
    assert "priority: 0.9" in meta and f"id: {result['memories_created'][0]}" in meta
    assert "supersedes:" in meta and "status: active" in meta


def test_merge_without_content_off_a_terminal_is_refused(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    proc = store.dmm("conflicts", "resolve", conflict, "--action", "merge", "--reason", "x")
    assert proc.returncode == ExitCode.INVALID_INPUT and "--content" in proc.stderr
    bad = store.dmm("conflicts", "resolve", conflict, "--action", "merge", "--reason", "x",
                    "--content", "---\ntags: [a]\n---\n\nno title, no priority\n")
    assert bad.returncode == ExitCode.INVALID_INPUT and "not valid" in bad.stderr


def test_clarify_adds_scope_text_and_the_pair_stays_quiet(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    result = resolve(store, conflict, "--action", "clarify",
                     "--clarify", f"{OLD_LIMIT}=the internal gateway only",
                     "--clarify", f"{NEW_LIMIT}=the public gateway", "--reason", "two gateways")
    assert sorted(result["memories_modified"]) == sorted([OLD_LIMIT, NEW_LIMIT])
    text = store.memory.joinpath("project/limit_old.md").read_text()
    assert "# Upload size ceiling on the gateway\n\n**Scope:** the internal gateway only\n" in text
    assert frozenset((OLD_LIMIT, NEW_LIMIT)) not in conflicts(store)
    assert conflicts(store, "--status", "resolved")[frozenset((OLD_LIMIT, NEW_LIMIT))]
    bad = store.dmm("conflicts", "resolve", cid(store, BEANSTALK, SQS), "--action", "clarify",
                    "--clarify", "no equals sign", "--reason", "x")
    assert bad.returncode == ExitCode.INVALID_INPUT and "MEMORY_ID=TEXT" in bad.stderr


def test_dismiss_and_defer_change_no_memory(store):
    memories = {p: p.read_bytes() for p in store.memory.rglob("*.md")}
    limit, jobs = cid(store, OLD_LIMIT, NEW_LIMIT), cid(store, BEANSTALK, SQS)
    resolve(store, limit, "--action", "dismiss", "--reason", "different gateways")
    resolve(store, jobs, "--action", "defer", "--reason", "ask the platform team")
    assert {p: p.read_bytes() for p in store.memory.rglob("*.md")} == memories
    assert set(conflicts(store)) == {frozenset((NODE18, NODE22))}
    assert set(conflicts(store, "--status", "deferred")) == {frozenset((BEANSTALK, SQS))}
    # a deferred conflict can be resolved later; a dismissed one needs an undo first
    resolve(store, jobs, "--action", "deprecate", "--target", BEANSTALK, "--reason", "moved")
    again = store.dmm("conflicts", "resolve", limit, "--action", "defer", "--reason", "x")
    assert again.returncode == ExitCode.INVALID_INPUT and "undo" in again.stderr
    proposed = store.dmm("conflicts", "resolve", jobs, "--action", "dismiss", "--reason", "x",
                         "--propose")
    assert proposed.returncode == ExitCode.INVALID_INPUT


@pytest.mark.parametrize("action", ["deprecate", "merge", "clarify", "dismiss", "defer"])
def test_undo_restores_every_file_and_reopens_the_conflict(store, action):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    before = snapshot(store)
    extra = {"deprecate": ["--target", NEW_LIMIT],
             "merge": ["--content", "# Gateway ceiling\n\nIt is 50 MB; 413 above it.\n"],
             "clarify": ["--clarify", f"{NEW_LIMIT}=public gateway"]}.get(action, [])
    resolve(store, conflict, "--action", action, "--reason", "first try", *extra)
    assert snapshot(store)["head"] != before["head"]
    undone = store.dmm("conflicts", "undo", conflict, "--reason", "wrong call", "--json")
    assert undone.returncode == 0, undone.stderr
    after = snapshot(store)
    assert after["files"] == before["files"] and after["index"] == before["index"]
    assert after["status"] == before["status"] == ""
    assert "Dmm-Resolution: undo" in git(store.root, "log", "-1", "--format=%B")
    assert conflicts(store)[frozenset((OLD_LIMIT, NEW_LIMIT))]["status"] == "unresolved"
    twice = store.dmm("conflicts", "undo", conflict, "--reason", "again")
    assert twice.returncode == ExitCode.INVALID_INPUT and "already undone" in twice.stderr


def test_undo_refuses_to_lose_a_later_change(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    resolve(store, conflict, "--action", "clarify", "--clarify", f"{NEW_LIMIT}=public gateway",
            "--reason", "r")
    path = store.memory / "project/limit_new.md"
    path.write_text(path.read_text() + "\nA later edit by someone.\n")
    git(store.root, "commit", "-qam", "later edit")
    head = snapshot(store)
    proc = store.dmm("conflicts", "undo", conflict, "--reason", "r")
    assert proc.returncode == ExitCode.INVALID_INPUT and "limit_new.md" in proc.stderr
    assert snapshot(store) == head
    missing = store.dmm("conflicts", "undo", cid(store, BEANSTALK, SQS), "--reason", "r")
    assert missing.returncode == ExitCode.NOT_FOUND


def test_refusals_leave_everything_as_it_was(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    # a local edit to a file the resolution changes
    path = store.memory / "project/limit_new.md"
    path.write_text(path.read_text() + "\nuncommitted thought\n")
    before = snapshot(store)
    proc = store.dmm("conflicts", "resolve", conflict, "--action", "deprecate", "--target",
                     OLD_LIMIT, "--reason", "r")
    assert proc.returncode == ExitCode.INVALID_INPUT and "local change" in proc.stderr
    assert snapshot(store) == before
    git(store.root, "checkout", "-q", "--", ".")
    # detached HEAD
    git(store.root, "checkout", "-q", "--detach")
    proc = store.dmm("conflicts", "resolve", conflict, "--action", "dismiss", "--reason", "r")
    assert proc.returncode == ExitCode.INVALID_INPUT and "detached" in proc.stderr
    git(store.root, "checkout", "-q", "main")
    for args, needle in ((["--action", "deprecate", "--reason", "r"], "--target"),
                         (["--action", "dismiss"], "--reason"),
                         (["--reason", "r"], "--action")):
        proc = store.dmm("conflicts", "resolve", conflict, *args)
        assert proc.returncode == ExitCode.INVALID_INPUT and needle in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    proc = store.dmm("conflicts", "resolve", "conflict_000000000000", "--action", "dismiss",
                     "--reason", "r")
    assert proc.returncode == ExitCode.NOT_FOUND
    proc = store.dmm("conflicts", "resolve", conflict, "--auto", "--action", "dismiss")
    assert proc.returncode == ExitCode.INVALID_INPUT and "one of" in proc.stderr


def test_propose_goes_through_review_and_lands_as_a_merge(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    head = git(store.root, "rev-parse", "HEAD")
    result = resolve(store, conflict, "--action", "deprecate", "--target", OLD_LIMIT,
                     "--reason", "raised in June", "--propose")
    assert result["proposal_id"] and git(store.root, "rev-parse", "HEAD") == head
    assert store.memory.joinpath("project/limit_old.md").exists()  # nothing landed yet
    queue = json.loads(store.dmm("review", "list", "--json").stdout)
    assert [p["type"] for p in queue["proposals"]] == ["resolve"]
    reviewed = json.loads(store.dmm("review", "process", "--id", result["proposal_id"],
                                    "--json").stdout)
    assert reviewed["decision"] in ("approved", "modified"), reviewed
    assert not store.memory.joinpath("project/limit_old.md").exists()
    assert conflicts(store, "--status", "resolved")[frozenset((OLD_LIMIT, NEW_LIMIT))]
    message = git(store.root, "log", "-1", "--format=%B")
    assert f"Dmm-Conflict: {conflict}" in message and "Dmm-Resolution: deprecate" in message
    undone = store.dmm("conflicts", "undo", conflict, "--reason", "undo the approved one")
    assert undone.returncode == 0, undone.stderr
    assert store.memory.joinpath("project/limit_old.md").exists()


def test_auto_dry_run_plans_and_changes_nothing(store):
    store.add("global/tests.md", "mem_2025_01_10_002", "Run the full test suite before pushing",
              "Run the whole test suite locally before every push, so that the main branch stays "
              "green and reviewers never chase failures that a local run would have caught.",
              scope="global", tags="[testing, workflow]")
    store.add("project/tests.md", "mem_2025_05_10_002", "Run all tests before pushing",
              "Run the complete test suite locally before every push, so that the main branch "
              "stays green and reviewers never chase failures that a local run would have "
              "caught.", tags="[testing, workflow]")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "scope overlap")
    before = snapshot(store)
    proc = store.dmm("conflicts", "resolve", "--auto", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert snapshot(store) == before
    chosen = {frozenset(s["memories"]): (s["keep"], s["deprecate"]) for s in plan["resolved"]}
    assert chosen == {frozenset((OLD_LIMIT, NEW_LIMIT)): (NEW_LIMIT, OLD_LIMIT),
                      frozenset((BEANSTALK, SQS)): (SQS, BEANSTALK),
                      frozenset((NODE18, NODE22)): (NODE22, NODE18)}
    assert all(s["why"] for s in plan["resolved"] + plan["left_for_a_person"])
    left = {frozenset(s["memories"]) for s in plan["left_for_a_person"]}
    assert left == {frozenset(("mem_2025_01_10_002", "mem_2025_05_10_002"))}
    # then for real: one commit per resolution, each saying why
    proc = store.dmm("conflicts", "resolve", "--auto", "--json")
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout)["resolved"]
    assert all(s["result"]["success"] for s in done) and len(done) == 3
    reasons = git(store.root, "log", "-3", "--format=%(trailers:key=Dmm-Reason,valueonly)")
    assert "newer" in reasons and "supersedes" in reasons
    assert set(conflicts(store)) == left


def test_auto_leaves_close_calls_baselines_and_low_confidence_alone(store):
    # a contradiction between memories a week apart with the same confidence: a person decides
    store.add("project/limit_new.md", NEW_LIMIT, "Upload size ceiling of the gateway",
              f"The ceiling is 50,000,000 bytes. {UPLOAD}", tags="[uploads, limits]",
              extra="created: 2025-01-17\n")
    # the newer job memory is a baseline rule's rival: a baseline is never retired automatically
    store.add("baseline/jobs.md", BEANSTALK, "Jobs are queued in Beanstalkd",
              "Background jobs are queued in Beanstalkd and picked up by the worker pool.",
              scope="baseline", tags="[jobs, queue]", extra="created: 2025-02-01\n")
    store.memory.joinpath("project/jobs/beanstalk.md").unlink()
    store.add("baseline/jobs.md", BEANSTALK, "Jobs are queued in Beanstalkd",
              "Background jobs are queued in Beanstalkd and picked up by the worker pool.",
              scope="baseline", tags="[jobs, queue]", extra="created: 2025-02-01\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "changes")
    plan = json.loads(store.dmm("conflicts", "resolve", "--auto", "--dry-run", "--json").stdout)
    left = {frozenset(s["memories"]): s["why"] for s in plan["left_for_a_person"]}
    assert "similar confidence" in left[frozenset((OLD_LIMIT, NEW_LIMIT))]
    jobs = [s for s in plan["left_for_a_person"] + plan["resolved"]
            if set(s["memories"]) == {BEANSTALK, SQS}]
    assert all(s["deprecate"] != BEANSTALK for s in jobs)
    strict = json.loads(store.dmm("conflicts", "resolve", "--auto", "--dry-run",
                                  "--min-confidence", "1", "--json").stdout)
    assert strict["resolved"] == []


def test_auto_leaves_a_circle_of_three_supersessions_to_a_person(repo):
    ids = ("mem_2025_09_01_001", "mem_2025_09_02_001", "mem_2025_09_03_001")
    for n, (mid, day) in enumerate(zip(ids, ("Tuesdays", "Thursdays", "Fridays"))):
        _add(repo, f"project/deploy{n}.md", mid, f"Deploys go out on {day}",
             f"Production deploys go out on {day}.", tags="[deploy]",
             extra=f"supersedes: [{ids[(n + 1) % 3]}]\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "a circle")
    proc = repo.dmm("conflicts", "resolve", "--auto", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["resolved"] == []
    circular = [s for s in plan["left_for_a_person"] if s["type"] == "supersession"]
    assert len(circular) == 1 and "circular" in circular[0]["why"]


def test_undo_says_it_restored_the_files_it_put_back(store):
    conflict = cid(store, OLD_LIMIT, NEW_LIMIT)
    resolve(store, conflict, "--action", "clarify", "--reason", "first try",
            "--clarify", f"{NEW_LIMIT}=public gateway")
    undone = store.dmm("conflicts", "undo", conflict, "--reason", "wrong call")
    assert undone.returncode == 0, undone.stderr
    assert "restored: .dmm/memory/project/limit_new.md" in undone.stderr
    assert "modified:" not in undone.stderr
