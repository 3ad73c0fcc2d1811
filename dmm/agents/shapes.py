"""dmm's answers in the shapes the PRDs give the HTTP API (phase 2, 3.1 WriteProposal, 5.x
QueueStats and CommitResult; phase 3, ConflictStats): every PRD field is there, with dmm's own
fields beside them. What dmm has no counterpart for is answered with the PRD's empty value
(``in_review`` and ``failed`` are 0: dmm has no review in progress or failed commit states; a
proposal's ``patch`` is null: dmm records the proposed file itself, in ``content``).

Pure shaping of records the core returns; reads git only through the Git it is given.
"""

from __future__ import annotations

from typing import Any

from dmm.gitrepo import Git

MEMORY_ROOT = ".dmm/memory/"


def write_proposal(git: Git, status: dict) -> dict:
    """A proposal as the PRD's WriteProposal, from `proposal_status` (open or decided)."""
    from dmm.proposals.decided import closed_proposals

    pid = status["proposal_id"]
    record: dict[str, Any] = status.get("proposal") or next(
        (p for p in closed_proposals(git) if p["proposal_id"] == pid), {})
    path = record.get("path", "")
    new_path = record.get("new_path") or path
    content = None
    if record.get("commit") and record.get("type") in ("create", "update"):
        blob = git.show_blob(record["commit"], MEMORY_ROOT + new_path)
        content = blob.decode("utf-8", "replace") if blob is not None else None
    decided_at = record.get("decided_at")
    out = {
        "proposal_id": pid, "type": record.get("type"), "target_path": path,
        "reason": record.get("proposal_reason", record.get("reason", "")),
        "content": content, "patch": None,
        "new_scope": new_path.split("/", 1)[0] if record.get("type") == "promote" else None,
        "proposed_by": record.get("proposed_by", ""), "proposed_at": record.get("proposed_at"),
        "status": status["status"], "status_updated_at": decided_at or record.get("proposed_at"),
        "review_result": None, "reviewer_id": record.get("decided_by"),
        "reviewed_at": decided_at,
        "committed_at": decided_at if status["status"] in ("approved", "modified") else None,
        "commit_error": None, "precheck_passed": True, "precheck_warnings": [],
        # dmm's own: the proposal's commit, what an approval's `expect` names
        "commit": record.get("commit"),
    }
    return {**status, **out}


def queue_stats(stats: dict, pending: list[dict]) -> dict:
    """The queue's counts as the PRD's QueueStats, dmm's own counts kept beside them."""
    decisions = stats.get("decisions", {})
    approved = decisions.get("approved", 0) + decisions.get("modified", 0)
    oldest = min((p.get("proposed_at") for p in pending if p.get("proposed_at")), default=None)
    out = {"pending": stats["pending"], "in_review": 0, "approved": approved,
           "committed": approved, "rejected": decisions.get("rejected", 0),
           "deferred": stats["deferred"], "failed": 0, "oldest_pending": oldest}
    out["total"] = out["pending"] + out["deferred"] + approved + out["rejected"] + \
        decisions.get("withdrawn", 0)
    return {**stats, **out}


def commit_result(decision: dict) -> dict:
    """A person's approval as the PRD's CommitResult."""
    paths = [p.removeprefix(MEMORY_ROOT) for p in decision.get("changed_paths", [])
             if p.startswith(MEMORY_ROOT)]
    return {**decision, "success": True, "proposal_id": decision["proposal_id"],
            "action_taken": decision.get("decision", "approved"),
            "file_path": paths[0] if paths else None, "error": None, "indexed": True}


def conflict_stats(stats: dict) -> dict:
    """Conflict counts as the PRD's ConflictStats; `oldest_unresolved` as the core judged it
    (service.resolution_figures: a decision record's forged date does not count)."""
    by_status = stats.get("by_status", {})
    return {**stats, "unresolved": by_status.get("unresolved", 0),
            "in_progress": by_status.get("in_progress", 0),
            "resolved": by_status.get("resolved", 0),
            "dismissed": by_status.get("dismissed", 0),
            "avg_confidence": stats.get("average_confidence", 0.0),
            "oldest_unresolved": stats.get("oldest_unresolved")}


def conflict(data: dict) -> dict:
    """A conflict as the PRD's Conflict: its resolution fields from the committed decision."""
    decision = data.get("decision") or {}
    decided = data.get("status") in ("resolved", "dismissed", "deferred")
    return {**data, "resolved_at": decision.get("at") if decided else None,
            "resolution_action": decision.get("action") or (
                "dismiss" if data.get("status") == "dismissed" else None),
            "resolution_target": decision.get("target"),
            "resolution_reason": decision.get("reason"),
            "resolved_by": decision.get("by"), "scan_id": data.get("scan_id"),
            "suppressed_until": decision.get("suppressed_until") if data.get("status") ==
            "deferred" else None}
