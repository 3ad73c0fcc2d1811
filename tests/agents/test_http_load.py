"""Many clients at once against one `dmm serve`: bursts of concurrent queries, proposals and
decisions to 127.0.0.1. Every answer is checked, then the repository: no proposal lost, no
decision lost, `git fsck` clean, the user's files untouched."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.agents.server import Server
from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT
from tests.conftest import git

pytestmark = pytest.mark.slow

CLIENTS = 16
TOPICS = ["invoices", "webhooks", "backups", "migrations", "caching", "logging", "retries",
          "fixtures", "payments", "search", "exports", "emails", "sessions", "uploads",
          "metrics", "tracing", "flags", "queues", "locales", "reports"]
TASKS = ["upload size ceiling of the gateway", "which queue do background jobs use",
         "node version for the frontend build", "the job queue of the workers"]


def memory(topic: str, n: int) -> str:
    return (f"---\ntags: [{topic}]\npriority: 0.5\nconfidence: active\n---\n\n"
            f"# Rule {n} about {topic}\n\nWhen you touch {topic}, read the {topic} runbook "
            f"first; rule number {n} of the load test.\n")


def propose(server: Server, i: int) -> tuple[int, dict]:
    topic = TOPICS[i % len(TOPICS)]
    return server.post("/write/propose", {
        "type": "create", "path": f"project/load/{topic}_{i}.md", "reason": f"load test {i}",
        "content": memory(topic, i)}, token="bot")


def query(server: Server, i: int) -> tuple[int, dict]:
    return server.post("/query", {"query": TASKS[i % len(TASKS)], "budget": 600}, token="bot")


def test_bursts_of_concurrent_queries_proposals_and_decisions_lose_nothing(store):
    user_file = (store.root / "notes.txt").read_text()
    with Server(store.root, "--token", "alice", "--agent-token", "bot") as server, \
            ThreadPoolExecutor(CLIENTS) as pool:
        # burst 1: 32 queries and 16 proposals, interleaved
        jobs = [pool.submit(propose if i % 3 == 0 else query, server, i) for i in range(48)]
        results = [(i, job.result()) for i, job in enumerate(jobs)]
        made = {}
        for i, (status, data) in results:
            if i % 3 == 0:
                assert status == 201 and data["success"], data
                made[data["proposal_id"]] = f"project/load/{TOPICS[i % len(TOPICS)]}_{i}.md"
            else:
                assert status == 200, data
                assert data["stats"]["budget"] == 600 and data["retrieved"], data
        assert len(made) == 16  # 16 distinct ids: none lost, none given twice
        branches = git(store.root, "for-each-ref", "--format=%(refname:lstrip=4)",
                       "refs/heads/dmm/proposals/").split()
        assert sorted(branches) == sorted(made)
        for pid, path in made.items():
            assert "load test" in git(store.root, "show",
                                      f"dmm/proposals/{pid}:.dmm/memory/{path}")

        # burst 2: 8 approvals, 4 rejections, 4 new proposals and 16 queries at once
        ids = sorted(made)
        approve, reject = ids[:8], ids[8:12]
        jobs = ([pool.submit(server.post, f"/review/approve/{pid}",
                             {"bypass_reviewer": True, "reason": "load"}, token="alice")
                 for pid in approve]
                + [pool.submit(server.post, f"/review/reject/{pid}", {"reason": "load"},
                               token="alice") for pid in reject]
                + [pool.submit(propose, server, 100 + i) for i in range(4)]
                + [pool.submit(query, server, i) for i in range(16)])
        outcomes = [job.result() for job in jobs]
        for status, data in outcomes[:12]:
            assert status == 200 and data["success"], data
        for status, data in outcomes[12:16]:
            assert status == 201 and data["success"], data
        for status, data in outcomes[16:]:
            assert status == 200 and data["retrieved"], data

        status, state = server.get(f"/write/proposal/{approve[0]}", token="bot")
        assert state["status"] == "approved"
        status, queue = server.get("/write/proposals?limit=1000", token="bot")
        assert queue["total"] == 16 - 12 + 4
        status, pack = server.post("/query", {"query": "upload size ceiling"}, token="bot")
        assert {OLD_LIMIT, NEW_LIMIT} <= {m["memory_id"] for m in pack["retrieved"]}

    for pid in approve:  # every approval is on the checked-out branch, with its file
        assert git(store.root, "log", "--format=%H", "--grep", f"Dmm-Proposal: {pid}", "HEAD")
        assert (store.memory / made[pid]).is_file()
    for pid in reject:
        assert not (store.memory / made[pid]).exists()
        assert git(store.root, "log", "--format=%H", "--grep", f"Dmm-Proposal: {pid}",
                   "dmm/audit")
    fsck = git(store.root, "fsck", "--strict", "--no-progress")
    assert "error" not in fsck and "missing" not in fsck
    assert git(store.root, "status", "--porcelain") == ""
    assert (store.root / "notes.txt").read_text() == user_file
