"""Write-back end to end in real repositories: propose -> review -> decide, and the audit log."""

from __future__ import annotations

import json
import subprocess

import pytest

from dmm.errors import ExitCode
from tests.conftest import git

LONG_BODY = """Every error response of the public API is a problem details document with the media
type application/problem+json and the members type, title, status and detail. Validation
failures add an errors array with one entry per invalid field, each naming the JSON pointer of
the field and a human readable message. The type member is a stable URL under
https://errors.example.com that documents the problem for integrators.

Why: our clients parse one format for every failure. Before this rule the mobile app carried
three different error parsers, and a change in one endpoint's error shape broke offline sync for
a week. Problem details is an IETF standard (RFC 9457), so generic HTTP tooling and our API
gateway understand it without custom code, and the same document works for synchronous
endpoints and for webhook delivery failures. """ * 2


TOPICS = ["caching with redis keys and expiry", "queue workers and retry backoff",
          "feature flags and gradual rollout", "database indexes and slow queries",
          "mobile releases and store review", "invoices and tax rounding"]


def distinct_body(i: int) -> str:
    """A body about its own topic, so that proposals are not duplicates of each other."""
    topic = TOPICS[i % len(TOPICS)]
    words = topic.split()
    return (f"This memory records our rule for {topic}. " + " ".join(
        f"{w}{j} matters for {words[j % len(words)]} number {i}." for j, w in
        enumerate(words * 12)) + f"\n\nWhy: {topic} went wrong before, because of case {i}.")


def new_memory(title: str, body: str = LONG_BODY, tags: str = "[api, errors]",
               extra: str = "") -> str:
    return (f"---\ntags: {tags}\npriority: 0.7\nconfidence: active\n{extra}---\n\n# {title}\n\n"
            f"{body.strip()}\n")


@pytest.fixture
def committed(repo):
    repo.add("project/db/migrations.md", "mem_2026_01_02_001",
             "Database migrations are written with Alembic",
             "Every schema change is an Alembic migration reviewed with the code. " * 20,
             tags="[database, migrations]")
    repo.add("baseline/safety.md", "mem_2026_01_01_001", "Never push to main directly",
             "Always open a pull request. " * 30, scope="baseline")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "memory store")
    return repo


def propose(repo, *args, content: str | None = None) -> dict:
    proc = repo.dmm("write", *args, "--json", input=content)
    data = json.loads(proc.stdout)
    assert (proc.returncode == 0) == data["success"], proc.stderr
    return data


def status_snapshot(root) -> tuple[str, str, str]:
    """Everything `git status` knows: porcelain status, staged diff, unstaged diff."""
    return (git(root, "status", "--porcelain=v2", "--untracked-files=all"),
            git(root, "diff", "--cached"), git(root, "diff"))


def test_create_process_approve(committed):
    result = propose(committed, "propose", "--path", "project/api/errors.md", "--reason",
                     "agreed in the API review", content=new_memory("API errors use problem details"))
    pid = result["proposal_id"]
    assert pid.startswith("prop_") and result["branch"] == f"dmm/proposals/{pid}"
    assert not (committed.memory / "project/api/errors.md").exists()  # not written directly
    listed = json.loads(committed.dmm("review", "list", "--json").stdout)
    assert [p["proposal_id"] for p in listed["proposals"]] == [pid]
    shown = json.loads(committed.dmm("review", "show", pid, "--json").stdout)
    assert "+# API errors use problem details" in shown["diff"]
    processed = json.loads(committed.dmm("review", "process", pid, "--json").stdout)
    assert processed["decision"] == "approved", processed
    assert (committed.memory / "project/api/errors.md").exists()
    assert git(committed.root, "status", "--porcelain") == ""
    assert git(committed.root, "branch", "--list", f"dmm/proposals/{pid}") == ""
    head = git(committed.root, "log", "-1", "--format=%P%n%B")
    assert len(head.split("\n")[0].split()) == 2  # a merge commit
    assert f"Dmm-Proposal: {pid}" in head and "Dmm-Decision: approved" in head
    assert "Dmm-Reviewer: dmm-reviewer" in head
    # the cache is fresh right after: the new memory is found
    found = json.loads(committed.dmm("query", "problem details for API errors", "--json").stdout)
    assert found["retrieved"][0]["path"] == "project/api/errors.md"


def test_the_users_work_is_untouched(committed):
    root = committed.root
    (root / "src.py").write_text("print(1)\n")
    git(root, "add", "src.py")
    git(root, "commit", "-qm", "code")
    (root / "src.py").write_text("print(2)\n")          # unstaged
    (root / "staged.txt").write_text("staged\n")
    git(root, "add", "staged.txt")                      # staged
    (root / "scratch.txt").write_text("untracked\n")    # untracked
    before = status_snapshot(root)
    pid = propose(committed, "propose", "--path", "project/api/errors.md", "--reason", "r",
                  content=new_memory("API errors use problem details"))["proposal_id"]
    assert status_snapshot(root) == before
    committed.dmm("review", "process", "--id", pid)
    after = status_snapshot(root)
    assert after[1:] == before[1:]  # staged and unstaged diffs byte for byte
    assert "staged.txt" in after[0] and "scratch.txt" in after[0] and "src.py" in after[0]
    assert ".dmm" not in after[0]
    assert (root / "staged.txt").read_text() == "staged\n"


def test_update_with_a_patch_deprecate_and_promote_move_files(committed):
    path = "project/db/migrations.md"
    original = (committed.memory / path).read_text()
    lines = original.splitlines()
    line_no = lines.index("# Database migrations are written with Alembic") + 1
    patch = (f"--- a/{path}\n+++ b/{path}\n@@ -{line_no},1 +{line_no},1 @@\n"
             f"-# Database migrations are written with Alembic\n"
             f"+# Database migrations are written with Alembic autogenerate\n")
    pid = propose(committed, "update", "--path", path, "--patch", patch, "--reason",
                  "we autogenerate now")["proposal_id"]
    committed.dmm("review", "approve", pid)
    assert "Alembic autogenerate" in (committed.memory / path).read_text()

    pid = propose(committed, "promote", "--path", path, "--new-scope", "global", "--reason",
                  "true for all our services")["proposal_id"]
    committed.dmm("review", "approve", pid)
    moved = committed.memory / "global/db/migrations.md"
    assert moved.exists() and not (committed.memory / path).exists()
    assert "scope: global" in moved.read_text()

    pid = propose(committed, "deprecate", "--path", "global/db/migrations.md", "--reason",
                  "we stopped using Alembic")["proposal_id"]
    committed.dmm("review", "approve", pid)
    retired = committed.memory / "deprecated/global/db/migrations.md"
    assert "status: deprecated" in retired.read_text()
    history = json.loads(committed.dmm("history", "deprecated/global/db/migrations.md",
                                       "--json").stdout)["history"]
    paths = [h["path"] for h in history]
    assert paths[0] == "deprecated/global/db/migrations.md"
    assert "project/db/migrations.md" in paths  # followed through both moves
    assert {h["decision"] for h in history if h["event"] == "proposed"} == {"approved"}


def test_reject_defer_withdraw_are_recorded_on_the_audit_branch(committed):
    root = committed.root
    p1 = propose(committed, "propose", "--path", "project/a.md", "--reason", "r",
                 content=new_memory("First proposal about errors"))["proposal_id"]
    p2 = propose(committed, "propose", "--path", "project/b.md", "--reason", "r",
                 content=new_memory("Second proposal about retries", distinct_body(1),
                                    tags="[retries]"))["proposal_id"]
    p3 = propose(committed, "propose", "--path", "project/c.md", "--reason", "r",
                 content=new_memory("Third proposal about timeouts", distinct_body(2),
                                    tags="[timeouts]"))["proposal_id"]
    assert committed.dmm("review", "reject", p1, "--reason", "not true").returncode == 0
    assert committed.dmm("review", "defer", p2, "--reason", "ask Dana").returncode == 0
    assert committed.dmm("review", "withdraw", p3, "--reason", "wrong").returncode == 0
    branches = git(root, "branch", "--list", "dmm/*")
    assert p1 not in branches and p3 not in branches and p2 in branches
    audit = git(root, "log", "--format=%B", "dmm/audit")
    for pid, decision in ((p1, "rejected"), (p2, "deferred"), (p3, "withdrawn")):
        assert f"Dmm-Proposal: {pid}\nDmm-Decision: {decision}" in audit
    # rejected proposal commits stay reachable (through dmm/audit) for gc, pushes and clones
    assert git(root, "branch", "--contains", git(root, "rev-list", "-1", "dmm/audit^2").strip()).strip()
    # the audit records' empty tree is a stored object: fsck (and a push) find everything
    fsck = subprocess.run(["git", "fsck", "--strict", "--no-progress"], cwd=root,
                          capture_output=True, text=True)
    assert fsck.returncode == 0 and "missing" not in fsck.stdout + fsck.stderr, fsck.stdout
    listed = json.loads(committed.dmm("review", "list", "--json").stdout)["proposals"]
    assert [(p["proposal_id"], p["status"]) for p in listed] == [(p2, "deferred")]
    again = committed.dmm("review", "approve", p1)
    assert again.returncode == ExitCode.INVALID_INPUT and "already rejected" in again.stderr
    log = json.loads(committed.dmm("log", "--json").stdout)["entries"]
    assert {(e["proposal_id"], e["event"]) for e in log} >= {
        (p1, "rejected"), (p2, "deferred"), (p3, "withdrawn"), (p1, "proposed")}


def test_reviewer_decisions(committed):
    # modified: fixable whitespace and tag spelling
    sloppy = new_memory("Retries use exponential backoff", tags="[Retries, HTTP, retries]")
    sloppy = sloppy.replace(" document with", " document with   \n").replace(
        "application/problem+json and", "application/problem+json and")
    pid = propose(committed, "propose", "--path", "project/retries.md", "--reason", "r",
                  content=sloppy)["proposal_id"]
    result = json.loads(committed.dmm("review", "process", pid, "--json").stdout)
    assert result["decision"] == "modified"
    text = (committed.memory / "project/retries.md").read_text()
    assert "tags: [retries, http]" in text and "document with   " not in text
    assert "Dmm-Fix: auto" in git(committed.root, "log", "--format=%B", "-n", "3")
    fixed = [e for e in json.loads(committed.dmm("log", "--json").stdout)["entries"]
             if e["event"] == "fixed"]
    assert [e["who"] for e in fixed] == ["dmm-reviewer"]  # the reviewer's, not the git user's
    # deferred: touches baseline
    pid = propose(committed, "propose", "--path", "baseline/tone.md", "--reason", "r",
                  content=new_memory("Answer in a friendly and direct tone", distinct_body(3),
                                     tags="[tone]"))
    assert any("baseline" in w for w in pid["precheck_warnings"])
    result = json.loads(committed.dmm("review", "process", "--id", pid["proposal_id"],
                                      "--json").stdout)
    assert result["decision"] == "deferred"
    assert not (committed.memory / "baseline/tone.md").exists()
    # rejected: a duplicate of an existing memory
    same = (committed.memory / "project/db/migrations.md").read_text()
    body = same.split("\n# ", 1)[1]
    pid = propose(committed, "propose", "--path", "project/db/alembic.md", "--reason", "r",
                  content=new_memory(body.split("\n", 1)[0], body.split("\n", 1)[1],
                                     tags="[database]"))["proposal_id"]
    proc = committed.dmm("review", "process", pid, "--json")
    assert proc.returncode == ExitCode.PROBLEMS_FOUND, proc.stderr  # a rejection: scripts notice
    result = json.loads(proc.stdout)
    assert result["decision"] == "rejected"
    assert any(i["category"] == "duplicate" and i["severity"] == "error"
               for i in result["issues"])
    assert result["similar_memories"][0]["path"] == "project/db/migrations.md"


@pytest.mark.parametrize("args, content, message", [
    (["propose", "--path", "../outside.md"], "x", "'..' part"),
    (["propose", "--path", "/etc/x.md"], "x", "must be relative"),
    (["propose", "--path", "project/notes.txt"], "x", "ending in .md"),
    (["propose", "--path", "project/db/migrations.md"], None, "already exists"),
    (["propose", "--path", "project/new.md"], "no frontmatter here", "must start with YAML"),
    (["propose", "--path", "project/new.md"], "---\ntags: x\n---\n# T\n", "must be a YAML list"),
    (["propose", "--path", "global/new.md"],
     "---\nid: mem_2026_01_02_001\ntags: [a]\npriority: 0.5\nconfidence: active\n---\n# T\n",
     "already used by project/db/migrations.md"),
    (["update", "--path", "project/missing.md"], "x", "does not exist"),
    (["update", "--path", "project/db/migrations.md", "--patch", "@@ -1,1 +1,1 @@\n-nope\n+x\n"],
     None, "does not apply"),
    (["deprecate", "--path", "project/missing.md"], None, "does not exist"),
    (["promote", "--path", "project/db/migrations.md", "--new-scope", "project"], None,
     "already in scope project"),
])
def test_every_precheck_failure_is_clear(committed, args, content, message):
    if args[0] == "propose" and content is None:
        content = new_memory("Duplicate path")
    proc = committed.dmm("write", *args, "--reason", "r", "--json", input=content)
    data = json.loads(proc.stdout)
    wanted = ExitCode.NOT_FOUND if message == "does not exist" else ExitCode.INVALID_INPUT
    assert proc.returncode == wanted and not data["success"]
    assert data["not_found"] == (message == "does not exist")
    assert any(message in e for e in data["precheck_errors"]), data
    assert git(committed.root, "branch", "--list", "dmm/*") == ""


def test_a_second_proposal_for_the_same_path_is_refused(committed):
    propose(committed, "deprecate", "--path", "project/db/migrations.md", "--reason", "r")
    proc = committed.dmm("write", "update", "--path", "project/db/migrations.md", "--reason", "r",
                         "--content", "x")
    assert proc.returncode == ExitCode.INVALID_INPUT and "already open" in proc.stderr


def test_a_symlink_escape_is_refused(committed, tmp_path):
    (committed.memory / "project" / "link").symlink_to(tmp_path)
    proc = committed.dmm("write", "propose", "--path", "project/link/x.md", "--reason", "r",
                         "--content", new_memory("Escaping through a link"))
    assert proc.returncode == ExitCode.INVALID_INPUT and "symbolic link" in proc.stderr


def test_textual_conflict_between_two_proposals(committed):
    path = "project/db/migrations.md"
    text = (committed.memory / path).read_text()
    p1 = propose(committed, "update", "--path", path, "--reason", "r", "--content",
                 text.replace("Alembic migration", "Alembic revision"))["proposal_id"]
    committed.dmm("review", "reject", p1, "--reason", "make room")  # frees the path
    p2 = propose(committed, "update", "--path", path, "--reason", "r", "--content",
                 text.replace("Alembic migration", "Alembic script"))["proposal_id"]
    # p1 is closed; recreate a competing change on the branch directly
    (committed.memory / path).write_text(text.replace("Alembic migration", "Alembic change"))
    git(committed.root, "commit", "-qam", "edit by hand")
    head = git(committed.root, "rev-parse", "HEAD")
    before = status_snapshot(committed.root)
    proc = committed.dmm("review", "approve", p2)
    assert proc.returncode == ExitCode.INVALID_INPUT and "conflicts with main" in proc.stderr
    assert git(committed.root, "rev-parse", "HEAD") == head
    assert status_snapshot(committed.root) == before
    assert "<<<<<<<" not in (committed.memory / path).read_text()


def test_a_dirty_file_in_the_way_refuses_and_changes_nothing(committed):
    path = "project/db/migrations.md"
    text = (committed.memory / path).read_text()
    pid = propose(committed, "update", "--path", path, "--reason", "r", "--content",
                  text.replace("Alembic migration", "Alembic revision"))["proposal_id"]
    (committed.memory / path).write_text(text + "\nlocal edit\n")
    head = git(committed.root, "rev-parse", "HEAD")
    proc = committed.dmm("review", "approve", pid)
    assert proc.returncode == ExitCode.INVALID_INPUT and "in the way" in proc.stderr
    assert git(committed.root, "rev-parse", "HEAD") == head
    assert (committed.memory / path).read_text().endswith("local edit\n")
    assert pid in git(committed.root, "branch", "--list", "dmm/*")


def test_detached_head_and_merge_in_progress_are_refused(committed):
    pid = propose(committed, "propose", "--path", "project/x.md", "--reason", "r",
                  content=new_memory("Detached head proposal"))["proposal_id"]
    git(committed.root, "checkout", "-q", "--detach")
    proc = committed.dmm("review", "approve", pid)
    assert proc.returncode == ExitCode.INVALID_INPUT and "detached" in proc.stderr
    git(committed.root, "checkout", "-q", "main")
    (committed.root / ".git" / "MERGE_HEAD").write_text(git(committed.root, "rev-parse", "HEAD"))
    proc = committed.dmm("review", "approve", pid)
    assert proc.returncode == ExitCode.INVALID_INPUT and "merge is in progress" in proc.stderr


def test_missing_identity_is_explained(committed, tmp_path):
    pid = propose(committed, "propose", "--path", "project/x.md", "--reason", "r",
                  content=new_memory("Identity proposal"))["proposal_id"]
    git(committed.root, "config", "--unset", "user.name")
    git(committed.root, "config", "--unset", "user.email")
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1",
           "EMAIL": ""}
    proc = committed.dmm("review", "approve", pid, env=env)
    assert proc.returncode != 0 and "does not know who you are" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_concurrent_approvals_lose_nothing(committed):
    import sys

    ids = [propose(committed, "propose", "--path", f"project/c{i}.md", "--reason", "r",
                   content=new_memory(f"Concurrent proposal number {i}", distinct_body(i),
                                      tags=f"[topic{i}]"))["proposal_id"] for i in range(4)]
    targets = ids + ids[:2]  # two of them approved twice, at the same time
    procs = []
    for pid in targets:
        procs.append(subprocess.Popen([sys.executable, "-m", "dmm", "review", "approve", pid],
                                      cwd=committed.root, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    ok = sum(code == 0 for code, _ in results)
    assert ok == 4, "\n".join(f"exit {code}: {err}" for code, err in results if code)
    for code, err in results:
        assert code == 0 or "already approved" in err, err
    for i in range(4):
        assert (committed.memory / f"project/c{i}.md").exists()
    assert git(committed.root, "status", "--porcelain") == ""  # no staged reverts left behind
    merges = git(committed.root, "log", "--first-parent", "--merges", "--format=%B")
    assert sum(f"Dmm-Proposal: {pid}" in merges for pid in ids) == 4


def test_first_parent_log_and_dmm_log_tell_the_same_story(committed):
    ids = []
    for i, title in enumerate(["Alpha rule about caching", "Beta rule about queues",
                               "Gamma rule about retries", "Delta rule about logging"]):
        pid = propose(committed, "propose", "--path", f"project/s{i}.md", "--reason", "r",
                      content=new_memory(title, distinct_body(i), tags=f"[t{i}]"))["proposal_id"]
        # both approvals in one second of git's clock: the log still follows the branch
        same_second = {"GIT_COMMITTER_DATE": "2026-05-01T12:00:00Z"}
        assert committed.dmm("review", "approve", pid, "--force", env=same_second).returncode == 0
        ids.append(pid)
    first_parent = [line for line in git(committed.root, "log", "--first-parent",
                                         "--format=%H %s").splitlines() if "dmm: approved" in line]
    dmm_log = [e for e in json.loads(committed.dmm("log", "--json").stdout)["entries"]
               if e["event"] == "approved"]
    assert [l.split()[0] for l in first_parent] == [e["commit"] for e in dmm_log]
    assert [e["proposal_id"] for e in dmm_log] == list(reversed(ids))
    filtered = json.loads(committed.dmm("log", "--path", "project/s0.md", "--json").stdout)
    assert {e["proposal_id"] for e in filtered["entries"]} == {ids[0]}


def test_usage_is_logged_per_query(committed):
    committed.dmm("query", "alembic database migrations")
    committed.dmm("query", "alembic migrations", "--json")
    top = json.loads(committed.dmm("usage", "top", "--json").stdout)["memories"]
    by_path = {m["path"]: m for m in top}
    assert by_path["project/db/migrations.md"]["total_retrievals"] == 2
    assert by_path["baseline/safety.md"]["total_inclusions"] == 2
    queries = json.loads(committed.dmm("usage", "queries", "--json").stdout)["queries"]
    assert [q["query_text"] for q in queries] == ["alembic migrations",
                                                  "alembic database migrations"]
    stale = json.loads(committed.dmm("usage", "stale", "--days", "0", "--json").stdout)
    assert "project/db/migrations.md" in {m["path"] for m in stale["memories"]}
    assert git(committed.root, "status", "--porcelain", "--untracked-files=all") == ""
