"""`dmm serve`: the real server in a real repository, spoken to over HTTP on 127.0.0.1."""

from __future__ import annotations

import json

from tests.agents.server import Server
from tests.agents.test_mcp import DRAFT
from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT
from tests.conftest import git, run_dmm

NEW_MEMORY = ("---\ntags: [billing, invoices]\npriority: 0.6\nconfidence: active\n---\n\n"
              "# Invoices are numbered per tax year\n\nInvoice numbers restart at 1 on the first "
              "of April, the start of the tax year, and carry the year as a prefix.\n")
DECISIONS = [("/review/approve/prop_20260101_000000_abcd", {}),
             ("/review/reject/prop_20260101_000000_abcd", {"reason": "no"}),
             ("/review/process/prop_20260101_000000_abcd", {}),
             ("/review/process-batch", {}),
             ("/conflicts/conflict_000000000000/dismiss", {"reason": "no"}),
             ("/conflicts/conflict_000000000000/resolve", {"action": "defer", "reason": "no"})]


def refs(root) -> str:
    return git(root, "for-each-ref", "--format=%(refname) %(objectname)")


def the_conflict(server, token: str | None = None) -> str:
    status, data = server.get(f"/conflicts/memory/{OLD_LIMIT}", token=token)
    assert status == 200, data
    found = [c for c in data["conflicts"]
             if {m["memory_id"] for m in c["memories"]} == {OLD_LIMIT, NEW_LIMIT}]
    assert found, data
    return found[0]["conflict_id"]


def test_without_a_token_agents_read_check_and_propose_and_nobody_decides(store):
    assert store.dmm("conflicts", "scan").returncode == 0  # the pack warns from the last scan
    before = refs(store.root)
    with Server(store.root) as server:
        status, pack = server.post("/query", {"query": "upload size ceiling of the gateway",
                                              "budget": 800})
        assert status == 200
        assert {m["memory_id"] for m in pack["retrieved"]} >= {OLD_LIMIT, NEW_LIMIT}
        assert pack["conflicts"] and any("conflict" in w for w in pack["warnings"])

        status, listed = server.get("/memories?path_prefix=project/jobs")
        assert status == 200 and listed["total"] == 2
        status, newest = server.get("/memories?sort=created&reverse=true&older_than=30&limit=2")
        created = [m["created"] for m in newest["memories"]]
        assert status == 200 and created == sorted(created, reverse=True) and len(created) == 2
        status, shown = server.get("/memories/project/limit_old.md")
        assert status == 200 and shown["memory_id"] == OLD_LIMIT and "8 MB" in shown["content"]
        assert server.get(f"/memories/{NEW_LIMIT}")[1]["path"] == "project/limit_new.md"

        for status, _ in [server.post(path, body) for path, body in DECISIONS]:
            assert status == 403
        assert refs(store.root) == before  # a refused decision changed nothing

        status, checked = server.post("/conflicts/check", {"memory_ids": [OLD_LIMIT]})
        assert status == 200 and checked["has_conflicts"]
        status, draft = server.post("/conflicts/check-content", {"content": DRAFT})
        assert status == 200
        assert {m["memory_id"] for m in draft["similar_memories"]} >= {OLD_LIMIT, NEW_LIMIT}

        status, listed = server.get("/conflicts?type=contradictory")
        assert status == 200 and listed["total"] >= 1 and "by_type" in listed["stats"]
        cid = the_conflict(server)
        status, one = server.get(f"/conflicts/{cid}")
        assert status == 200 and one["conflict_id"] == cid
        assert server.get("/conflicts/stats")[1]["total"] >= 1
        assert server.get("/conflicts/scans?limit=5")[1]["total"] >= 1
        status, scanned = server.post("/conflicts/scan", {"full": True})
        assert status == 200 and scanned["scan_type"] == "full"

        status, made = server.post("/write/propose", {
            "type": "create", "path": "project/billing/invoices.md",
            "reason": "learnt while fixing the invoice export", "content": NEW_MEMORY,
            "proposed_by": "claude"})
        assert status == 201 and made["success"], made
        pid = made["proposal_id"]
        branch = f"refs/heads/dmm/proposals/{pid}"
        assert "Invoices are numbered" in git(
            store.root, "show", f"{branch}:.dmm/memory/project/billing/invoices.md")
        assert "Dmm-Proposed-By: claude" in git(store.root, "log", "-1", "--format=%B", branch)
        status, state = server.get(f"/write/proposal/{pid}")
        assert status == 200 and state["status"] == "pending" and state["open"]
        status, queue = server.get("/write/proposals?status=pending")
        assert [p["proposal_id"] for p in queue["proposals"]] == [pid]
        assert queue["stats"]["pending"] == 1
        assert server.get("/review/queue")[1]["pending"][0]["proposal_id"] == pid

        status, refused = server.post("/write/propose", {
            "type": "create", "path": "../outside.md", "reason": "x", "content": NEW_MEMORY})
        assert status in (400, 422) and not refused.get("success")

        status, flagged = server.post("/conflicts/flag", {
            "memory_ids": ["mem_2025_02_01_001", "mem_2025_05_06_001"],
            "description": "the worker pool needs Node 18 but the queue moved"})
        assert status == 201 and flagged["created"]
        assert "Dmm-Resolved-By: agent" in git(store.root, "log", "-1", "--format=%B")

        status, usage = server.get(f"/usage/memory/{OLD_LIMIT}")
        assert status == 200 and usage["total_retrievals"] >= 1
        assert server.get("/usage/memory/project/limit_old.md")[1]["memory_id"] == OLD_LIMIT
        status, top = server.get("/usage/memories?sort_by=total_retrievals&order=desc&limit=3")
        assert status == 200 and top["memories"][0]["total_retrievals"] >= 1
        status, queries = server.get("/usage/queries?limit=5")
        assert status == 200 and queries["queries"][0]["query_text"].startswith("upload size")
        assert server.get("/health")[1]["status"] == "ok"
    assert git(store.root, "status", "--porcelain") == ""


def test_a_persons_token_decides_and_is_recorded_as_the_reviewer(store):
    with Server(store.root, "--token", "alice", "--agent-token", "bot") as server:
        assert server.get("/health")[0] == 401
        assert server.get("/health", token="not-a-token-at-all")[0] == 401
        assert server.get("/openapi.json")[0] == 401
        ids = []
        for name in ("one", "two"):
            status, made = server.post("/write/propose", {
                "type": "create", "path": f"project/billing/{name}.md", "reason": "learnt",
                "content": NEW_MEMORY.replace("per tax year", f"per tax year ({name})"),
                "proposed_by": "somebody-else"}, token="bot")
            assert status == 201, made
            ids.append(made["proposal_id"])
        log = git(store.root, "log", "-1", "--format=%B", f"dmm/proposals/{ids[0]}")
        assert "Dmm-Proposed-By: bot" in log  # the token's name, not what the body claims

        status, refused = server.post(f"/review/approve/{ids[0]}", {}, token="bot")
        assert status == 403 and "person" in refused["error"]

        status, done = server.post(f"/review/approve/{ids[0]}", {"reason": "right"},
                                   token="alice")
        assert status == 200 and done["decision"] == "approved", done
        head = git(store.root, "log", "-1", "--format=%B")
        assert f"Dmm-Proposal: {ids[0]}" in head and "Dmm-Reviewer: alice" in head
        assert (store.memory / "project/billing/one.md").is_file()
        status, again = server.post(f"/review/approve/{ids[0]}", {}, token="alice")
        assert status == 409 and "already approved" in again["error"]

        status, rejected = server.post(f"/review/reject/{ids[1]}", {"reason": "duplicate"},
                                       token="alice")
        assert status == 200 and rejected["success"] and rejected["decision"] == "rejected"
        assert "Dmm-Reviewer: alice" in git(store.root, "log", "-1", "--format=%B", "dmm/audit")
        assert server.get(f"/write/proposal/{ids[1]}", token="bot")[1]["status"] == "rejected"
        status, closed = server.get("/write/proposals?status=rejected", token="bot")
        assert status == 200 and [p["proposal_id"] for p in closed["proposals"]] == [ids[1]]
        assert closed["proposals"][0]["decided_by"] == "alice"

        cid = the_conflict(server, token="bot")
        body = {"action": "deprecate", "target": OLD_LIMIT, "reason": "the June figure holds"}
        assert server.post(f"/conflicts/{cid}/resolve", body, token="bot")[0] == 403
        status, proposed = server.post(f"/conflicts/{cid}/resolve", {**body, "propose": True},
                                       token="bot")
        assert status == 200 and proposed["proposal_id"], proposed  # agents may propose one
        status, resolved = server.post(f"/conflicts/{cid}/resolve", body, token="alice")
        assert status == 200 and resolved["success"], resolved
        head = git(store.root, "log", "-1", "--format=%B")
        assert f"Dmm-Conflict: {cid}" in head and "Dmm-Resolved-By: alice" in head
        assert (store.memory / "deprecated/project/limit_old.md").is_file()
    assert git(store.root, "status", "--porcelain") == ""


def test_bad_requests_get_a_clear_json_error_and_the_server_keeps_serving(store):
    with Server(store.root) as server:
        cases = [
            (server.post("/query", raw=b"{not json"), 400, "not valid JSON"),
            (server.post("/query", {"query": "x", "budget": 0}), 400, "budget"),
            (server.post("/query", {"query": "x", "bogus": 1}), 400, "bogus"),
            (server.post("/query", {}), 400, "query"),
            (server.post("/query", {"query": "x"}, headers={"Content-Type": "text/plain"}),
             415, "JSON"),
            (server.post("/query", raw=b"{" + b" " * (3 * 1024 * 1024) + b"}"), 413, "larger"),
            (server.get("/conflicts?limit=zero"), 400, "limit"),
            (server.get("/conflicts/stats?x=1"), 400, "no query string"),
            (server.get("/write/proposal/not-an-id"), 400, "not a proposal id"),
            (server.get("/write/proposal/prop_20260101_000000_abcd"), 404, "no proposal"),
            (server.get("/conflicts/conflict_000000000000"), 404, "no conflict"),
            (server.get("/memories/mem_1999_01_01_001"), 404, "no memory"),
            (server.get("/nowhere"), 404, "no such endpoint"),
            (server.request("DELETE", "/query"), 405, "method"),
            (server.get("/health", headers={"Host": "attacker.example:8765"}), 403, "loopback"),
            (server.post("/conflicts/flag", {"memory_ids": [OLD_LIMIT], "description": "x"}),
             400, "memory_ids"),
            (server.get("/write/proposals?limit=0"), 400, "bad query string"),
            (server.get("/usage/memories?sort_by=x"), 400, "sort_by"),
            (server.get("/memories?sort=colour"), 400, "sort"),
            (server.get("/conflicts?status=nonsense"), 400, "status"),
            (server.get("/conflicts?min_confidence=2"), 400, "min_confidence"),
        ]
        for (status, data), want_status, words in cases:
            assert status == want_status, (want_status, data)
            assert words in data["error"] and data["exit_code"] > 0 and "status" in data
        status, pack = server.post("/query", {"query": "gateway upload ceiling"})
        assert status == 200 and pack["retrieved"]
    # no traceback reached the log for bad input
    assert "Traceback" not in server.stop()


def test_a_non_loopback_address_needs_a_token(store):
    proc = run_dmm("serve", "--host", "0.0.0.0", "--port", "0", cwd=store.root)
    assert proc.returncode == 6 and "needs a token" in proc.stderr
    assert "Traceback" not in proc.stderr
    short = run_dmm("serve", "--token", "alice=short", cwd=store.root)
    assert short.returncode == 6 and "shorter than" in short.stderr
    with Server(store.root, "--host", "0.0.0.0", "--token", "alice=" + "s" * 20) as server:
        server.host = "127.0.0.1"
        status, _ = server.get("/health", token="s" * 20,
                               headers={"Host": "memory.example.org"})
        assert status == 200  # any name reaches it, with the token


def test_the_openapi_document_is_served_and_its_copy_in_docs_is_current(store):
    from dmm.agents.http_api import OPERATIONS
    from tests.test_docs import ROOT

    printed = json.loads(run_dmm("serve", "--openapi", cwd=store.root).stdout)
    with Server(store.root) as server:
        status, served = server.get("/openapi.json")
    assert status == 200 and served == printed
    assert json.loads((ROOT / "docs" / "openapi.json").read_text()) == printed, \
        "docs/openapi.json is stale: dmm serve --openapi > docs/openapi.json"
    for op in OPERATIONS:
        path = op.path.replace(":path", "")
        item = printed["paths"][path][op.method.lower()]
        assert item["summary"] and ("403" in item["responses"]) == bool(op.decides)
