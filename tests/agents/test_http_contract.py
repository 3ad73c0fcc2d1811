"""The PRDs' HTTP API as the PRDs wrote it (issue 28, section 5): the PRD's request bodies are
accepted (ScanRequest, ResolutionRequest) and every endpoint answers with the PRD's fields
(extra fields are dmm's own). The shapes below are the PRDs' (phase 2, sections 3 and 7;
phase 3, sections 3 and 7 of /work/shared/seeds/), as JSON types."""

from __future__ import annotations

import json

import pytest

from tests.agents.server import Server
from tests.agents.test_only_people_decide import GOOD
from tests.conflicts.test_resolution import NEW_LIMIT, OLD_LIMIT

S, I, B, N, L, D, F = "string", "integer", "boolean", "null", "array", "object", "number"
WRITE_PROPOSAL = {"proposal_id": S, "type": S, "target_path": S, "reason": S,
                  "content": (S, N), "patch": (S, N), "new_scope": (S, N), "proposed_by": S,
                  "proposed_at": S, "status": S, "status_updated_at": (S, N),
                  "review_result": (D, N), "reviewer_id": (S, N), "reviewed_at": (S, N),
                  "committed_at": (S, N), "commit_error": (S, N), "precheck_passed": B,
                  "precheck_warnings": L}
QUEUE_STATS = {"pending": I, "in_review": I, "approved": I, "committed": I, "rejected": I,
               "deferred": I, "failed": I, "total": I, "oldest_pending": (S, N)}
COMMIT_RESULT = {"success": B, "proposal_id": S, "action_taken": S, "file_path": (S, N),
                 "error": (S, N), "indexed": B}
PROPOSE_RESULT = {"success": B, "proposal_id": (S, N), "precheck_passed": B,
                  "precheck_warnings": L, "precheck_errors": L, "message": S}
PROCESS_RESULT = {"proposal_id": S, "decision": S, "result": D, "committed": B,
                  "commit_result": (D, N)}
CONFLICT_STATS = {"total": I, "unresolved": I, "in_progress": I, "resolved": I,
                  "dismissed": I, "by_type": D, "by_method": D, "avg_confidence": (F, I),
                  "oldest_unresolved": (S, N)}
SCAN_RESULT = {"scan_id": S, "scan_type": S, "started_at": S, "completed_at": S,
               "duration_ms": I, "memories_scanned": I, "methods_used": L,
               "conflicts_detected": I, "conflicts_new": I, "conflicts_existing": I,
               "by_type": D, "by_method": D, "errors": L}
RESOLUTION_RESULT = {"success": B, "conflict_id": S, "action_taken": S,
                     "memories_modified": L, "memories_deprecated": L, "memories_created": L,
                     "error": (S, N)}
TYPES = {S: str, I: int, B: bool, N: type(None), L: list, D: dict, F: float}


def shaped(data: dict, shape: dict, where: str) -> None:
    for field, kinds in shape.items():
        assert field in data, f"{where}: no {field} in {sorted(data)}"
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        assert isinstance(data[field], tuple(TYPES[k] for k in kinds)) and not (
            isinstance(data[field], bool) and B not in kinds), (where, field, data[field])


@pytest.fixture
def served(store):
    with Server(store.root, "--token", "alice") as server:
        yield server


def propose(server) -> dict:
    status, made = server.post("/write/propose", {"type": "create", "path": "project/scan.md",
                                                  "reason": "learned", "content": GOOD},
                               token="alice")
    assert status == 201, made
    shaped(made, PROPOSE_RESULT, "POST /write/propose")
    return made


def test_write_and_review_endpoints_answer_in_the_prd_shapes(served):
    made = propose(served)
    pid = made["proposal_id"]
    status, proposal = served.get(f"/write/proposal/{pid}", token="alice")
    assert status == 200
    shaped(proposal, WRITE_PROPOSAL, "GET /write/proposal")
    assert proposal["status"] == "pending" and "# Uploads are scanned" in proposal["content"]
    for path, key in (("/write/proposals", "proposals"), ("/review/queue", "pending")):
        status, page = served.get(path, token="alice")
        assert status == 200
        shaped(page["stats"], QUEUE_STATS, path)
        assert page["stats"]["pending"] == 1 and page["stats"]["oldest_pending"]
        assert page[key][0]["target_path"] == "project/scan.md"
    status, done = served.post(f"/review/approve/{pid}", {"reason": "agreed"}, token="alice")
    assert status == 200, done
    shaped(done, COMMIT_RESULT, "POST /review/approve")
    assert done["file_path"] == "project/scan.md"
    status, decided = served.get(f"/write/proposal/{pid}", token="alice")
    shaped(decided, WRITE_PROPOSAL, "GET /write/proposal (decided)")
    assert decided["status"] == "approved" and decided["reviewer_id"] == "alice"
    assert decided["committed_at"]
    other = served.post("/write/propose", {"type": "create", "path": "project/other.md",
                                           "reason": "r", "content": GOOD.replace(
                                               "scanned", "checked")}, token="alice")[1]
    status, processed = served.post(f"/review/process/{other['proposal_id']}", {},
                                    token="alice")
    assert status == 200
    shaped(processed, PROCESS_RESULT, "POST /review/process")
    status, rejected = served.post("/review/reject/prop_20260101_000000_abcd",
                                   {"reason": "x"}, token="alice")
    assert status == 404


def test_conflict_endpoints_take_the_prd_bodies_and_answer_in_its_shapes(served):
    status, scan = served.post("/conflicts/scan", {"scan_type": "full",
                                                   "include_rule_extraction": True,
                                                   "methods": ["tag_overlap",
                                                               "semantic_similarity",
                                                               "supersession_chain"]},
                               token="alice")
    assert status == 200, scan
    shaped(scan, SCAN_RESULT, "POST /conflicts/scan (ScanRequest)")
    status, targeted = served.post("/conflicts/scan", {"scan_type": "targeted",
                                                       "target_memory_id": OLD_LIMIT},
                                   token="alice")
    assert status == 200, targeted
    status, stats = served.get("/conflicts/stats", token="alice")
    shaped(stats, CONFLICT_STATS, "GET /conflicts/stats")
    assert stats["unresolved"] >= 1 and stats["oldest_unresolved"]
    conflict = next(c for c in served.get(f"/conflicts/memory/{OLD_LIMIT}", token="alice")[1][
        "conflicts"] if {m["memory_id"] for m in c["memories"]} == {OLD_LIMIT, NEW_LIMIT})
    cid = conflict["conflict_id"]
    body = {"conflict_id": cid, "action": "deprecate", "target_memory_id": OLD_LIMIT,
            "merged_content": None, "clarification": None, "resolved_by": "agent",
            "reason": "50,000,000 bytes replaced 8 MB"}
    status, wrong = served.post(f"/conflicts/{cid}/resolve", {**body, "conflict_id":
                                                              "conflict_000000000000"},
                                token="alice")
    assert status == 400 and "not the conflict of the path" in wrong["error"]
    status, resolved = served.post(f"/conflicts/{cid}/resolve", body, token="alice")
    assert status == 200, resolved
    shaped(resolved, RESOLUTION_RESULT, "POST /conflicts/{id}/resolve (ResolutionRequest)")
    assert resolved["memories_deprecated"] == [OLD_LIMIT]
    assert resolved["resolved_by"] if "resolved_by" in resolved else True
    status, again = served.get(f"/conflicts/{cid}", token="alice")
    assert again["decision"]["by"] == "alice"  # the token's name, not the body's resolved_by


def test_the_openapi_document_describes_the_prd_fields(served):
    status, doc = served.get("/openapi.json", token="alice")
    schemas = doc["components"]["schemas"]
    assert {"scan_type", "target_memory_id", "include_rule_extraction"} <= set(
        schemas["ScanBody"]["properties"])
    assert {"conflict_id", "target_memory_id", "merged_content", "clarification",
            "dismiss_reason", "resolved_by"} <= set(schemas["ResolveBody"]["properties"])
    assert json.dumps(doc)  # serialisable


CONFLICT = {"conflict_id": S, "memories": L, "type": S, "detection_method": S,
            "confidence": (F, I), "description": S, "evidence": S, "status": S,
            "detected_at": S, "resolved_at": (S, N), "resolution_action": (S, N),
            "resolution_target": (S, N), "resolution_reason": (S, N), "resolved_by": (S, N),
            "scan_id": (S, N)}
MEMORY_STATS = {"memory_id": S, "path": S, "total_retrievals": I, "total_inclusions": I,
                "inclusion_rate": (F, I), "avg_relevance_score": (F, I),
                "last_retrieved_at": (S, N), "days_since_last_retrieval": (I, N)}
QUERY_RECORD = {"query_id": (S, I), "query_text": S, "timestamp": S, "budget": I,
                "tokens_used": I, "memories_returned": I, "baseline_count": I,
                "retrieved_count": I, "duration_ms": I}


def test_every_other_prd_endpoint_answers_in_its_shape(served):
    assert served.post("/conflicts/scan", {"scan_type": "full"}, token="alice")[0] == 200
    status, listed = served.get("/conflicts", token="alice")
    assert status == 200 and listed["total"] >= 1
    shaped(listed["stats"], CONFLICT_STATS, "GET /conflicts stats")
    for c in listed["conflicts"]:
        shaped(c, CONFLICT, "GET /conflicts")
    cid = listed["conflicts"][0]["conflict_id"]
    shaped(served.get(f"/conflicts/{cid}", token="alice")[1], CONFLICT, "GET /conflicts/{id}")
    status, of = served.get(f"/conflicts/memory/{OLD_LIMIT}", token="alice")
    assert status == 200 and isinstance(of["total"], int)
    status, checked = served.post("/conflicts/check", {"memory_ids": [OLD_LIMIT]},
                                  token="alice")
    assert checked["has_conflicts"] is True
    shaped(checked["conflicts"][0], CONFLICT, "POST /conflicts/check")
    status, draft = served.post("/conflicts/check-content", {"content": GOOD,
                                                             "path": "project/x.md"},
                                token="alice")
    assert status == 200 and isinstance(draft["potential_conflicts"], list)
    assert all({"path", "similarity"} <= set(s) for s in draft["similar_memories"])
    status, scans = served.get("/conflicts/scans", token="alice")
    assert isinstance(scans["total"], int)
    for scan in scans["scans"]:
        shaped(scan, SCAN_RESULT, "GET /conflicts/scans")
    status, flagged = served.post("/conflicts/flag", {"memory_ids": [OLD_LIMIT, NEW_LIMIT],
                                                      "description": "two ceilings"},
                                  token="alice")
    assert status in (200, 201) and isinstance(flagged["created"], bool), flagged
    status, dismissed = served.post(f"/conflicts/{flagged['conflict_id']}/dismiss",
                                    {"reason": "two services"}, token="alice")
    assert status == 200, dismissed
    shaped(dismissed, RESOLUTION_RESULT, "POST /conflicts/{id}/dismiss")
    # usage: a query first, so that there is something to count
    assert served.post("/query", {"query": "upload size ceiling"}, token="alice")[0] == 200
    status, usage = served.get(f"/usage/memory/{NEW_LIMIT}", token="alice")
    assert status == 200, usage
    shaped(usage, MEMORY_STATS, "GET /usage/memory")
    status, memories = served.get("/usage/memories", token="alice")
    shaped(memories["memories"][0], MEMORY_STATS, "GET /usage/memories")
    status, queries = served.get("/usage/queries", token="alice")
    shaped(queries["queries"][0], QUERY_RECORD, "GET /usage/queries")
    status, batch = served.post("/review/process-batch", {}, token="alice")
    assert status == 200 and isinstance(batch["processed"], int)
