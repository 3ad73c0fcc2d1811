"""The endpoints of `dmm serve`: one table, ``OPERATIONS``, says for every endpoint its method
and path, the core call it makes (dmm.agents.calls, shared with the MCP server), the models
that validate its query string and JSON body (dmm.agents.http_models), and whether it is a
person's decision. The app (dmm.agents.http_api) and the OpenAPI document
(dmm.agents.http_openapi) are both built from it, so they cannot drift apart.

Pure plumbing from a validated request to a core call; no protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from dmm.agents import calls
from dmm.agents.http_models import (ApproveBody, BatchBody, CheckBody, CheckContentBody,
                                    ConflictsParams, FlagBody, MemoriesParams, Model,
                                    ProcessBody, ProposalsParams, ProposeBody, QueryBody,
                                    ReasonBody, ResolveBody, ScanBody, ScansParams,
                                    UsageMemoriesParams, UsageQueriesParams)
from dmm.workspace import Workspace


@dataclass
class Call:
    """One request, as an operation sees it."""

    ws: Workspace
    who: str  # the token's name, or "agent" on a server without tokens
    token: Any  # the caller's Token (dmm.agents.http_api), None without tokens
    path: dict[str, str]
    params: Any
    body: Any


@dataclass
class Operation:
    method: str
    path: str
    run: Callable[[Call], Any]
    summary: str
    params: type[Model] | None = None
    body: type[Model] | None = None
    decides: bool | Callable[[Any], bool] = False  # a person's decision: needs their token
    created: bool = False  # 201 when the call made something
    reads: bool | None = None  # only reads the store (default: GET); see Readers

    @property
    def read_only(self) -> bool:
        return self.method == "GET" if self.reads is None else self.reads

    def needs_person(self, body: Any) -> bool:
        return self.decides(body) if callable(self.decides) else self.decides


def _propose(c: Call):
    data = c.body.model_dump()
    named = data.pop("proposed_by")
    out = calls.propose(c.ws, proposed_by=c.who if c.token else (named or c.who), **data)
    return out, (201 if out["success"] else 404 if out["not_found"] else 422)


def _resolve(c: Call):
    return calls.resolve(c.ws, c.body.request(c.path["conflict_id"], c.who),
                         propose=c.body.propose)


def _dismiss(c: Call):
    from dmm.conflicts.resolver import ResolutionRequest

    return calls.resolve(c.ws, ResolutionRequest(c.path["conflict_id"], "dismiss",
                                                 c.body.reason, resolved_by=c.who))


def _usage_of(c: Call):
    return calls.usage_of(c.ws, c.path["memory_id"])


def _health(c: Call):
    from dmm import __version__

    return {"status": "ok", "version": __version__}


OPERATIONS = [
    Operation("GET", "/health", _health, "Is the server up (and which dmm it is)."),
    # retrieval (dmm query, dmm show, memory lists)
    Operation("POST", "/query",
              lambda c: calls.query(c.ws, c.body.query, budget=c.body.budget,
                                    scopes=c.body.scopes, tags=c.body.tags,
                                    exclude_ephemeral=c.body.exclude_ephemeral),
              "The Memory Pack for a task: baseline memories, then the most relevant others "
              "within the budget, with conflict warnings.", body=QueryBody, reads=True),
    Operation("GET", "/memories",
              lambda c: calls.listing(c.ws, **c.params.model_dump()),
              "The memories of the store, without their text, filtered.",
              params=MemoriesParams),
    Operation("GET", "/memories/{memory:path}", lambda c: calls.show(c.ws, c.path["memory"]),
              "One memory, by id or by path under .dmm/memory/."),
    # PRD phase 2, 7.1
    Operation("POST", "/write/propose", _propose,
              "Propose a memory change: a proposal branch for the reviewer.", body=ProposeBody,
              created=True),
    Operation("GET", "/write/proposal/{proposal_id}",
              lambda c: calls.proposal_status(c.ws, c.path["proposal_id"]),
              "Where a proposal stands: open (pending, deferred) or decided."),
    Operation("GET", "/write/proposals",
              lambda c: calls.proposals(c.ws, **c.params.model_dump()),
              "Open proposals, oldest first, with the queue's counts.",
              params=ProposalsParams),
    # PRD phase 2, 7.2
    Operation("POST", "/review/process/{proposal_id}",
              lambda c: calls.process(c.ws, c.path["proposal_id"], c.body.force),
              "Run the automated reviewer on one proposal and carry out its decision.",
              body=ProcessBody, decides=True),
    Operation("POST", "/review/process-batch",
              lambda c: calls.process_batch(c.ws, c.body.limit, c.body.force),
              "Run the automated reviewer on every pending proposal.", body=BatchBody,
              decides=True),
    Operation("POST", "/review/approve/{proposal_id}",
              lambda c: calls.approve(c.ws, c.path["proposal_id"], reviewer=c.who,
                                      reason=c.body.reason,
                                      bypass_reviewer=c.body.bypass_reviewer,
                                      expect=c.body.expect),
              "Approve a proposal: merge it into the checked-out branch; with `expect`, only "
              "if it is at that commit (the one its details showed).", body=ApproveBody,
              decides=True),
    Operation("POST", "/review/reject/{proposal_id}",
              lambda c: calls.close(c.ws, c.path["proposal_id"], decision="rejected",
                                    reviewer=c.who, reason=c.body.reason),
              "Reject a proposal: its branch is closed, a record stays on dmm/audit.",
              body=ReasonBody, decides=True),
    Operation("GET", "/review/queue", lambda c: calls.review_queue(c.ws),
              "The proposals waiting for the reviewer, with the queue's counts."),
    # PRD phase 2, 7.3
    Operation("GET", "/usage/memory/{memory_id:path}", _usage_of,
              "How often queries returned one memory (id or path)."),
    Operation("GET", "/usage/memories",
              lambda c: calls.usage_memories(c.ws, **c.params.model_dump()),
              "Usage statistics of every memory a query returned.",
              params=UsageMemoriesParams),
    Operation("GET", "/usage/queries",
              lambda c: calls.usage_queries(c.ws, **c.params.model_dump()),
              "The most recent queries.", params=UsageQueriesParams),
    # PRD phase 3, 7.1 (the fixed paths before /conflicts/{conflict_id})
    Operation("GET", "/conflicts",
              lambda c: calls.conflicts(c.ws, status=c.params.status, type_=c.params.type,
                                        memory=c.params.memory_id,
                                        min_confidence=c.params.min_confidence,
                                        limit=c.params.limit),
              "Conflicts, most confident first, with counts.", params=ConflictsParams),
    Operation("GET", "/conflicts/stats", lambda c: calls.conflict_stats(c.ws),
              "Counts of conflicts by type, detection method and status; the last scans."),
    Operation("GET", "/conflicts/scans", lambda c: calls.scans(c.ws, c.params.limit),
              "The most recent scans.", params=ScansParams),
    Operation("GET", "/conflicts/memory/{memory_id:path}",
              lambda c: calls.conflicts_of(c.ws, c.path["memory_id"]),
              "Every conflict involving one memory (id or path)."),
    Operation("POST", "/conflicts/scan",
              lambda c: calls.scan(c.ws, **c.body.scan_args()),
              "Scan for conflicts (changed memories, one memory, or everything).",
              body=ScanBody),
    Operation("POST", "/conflicts/flag",
              lambda c: calls.flag(c.ws, c.body.memory_ids, c.body.description, c.body.type,
                                   who=c.who),
              "Record a conflict noticed by hand (committed under .dmm/conflicts/).",
              body=FlagBody, created=True),
    # PRD phase 3, 7.2
    Operation("POST", "/conflicts/check", lambda c: calls.check(c.ws, c.body.memory_ids),
              "Open conflicts involving any of these memories.", body=CheckBody, reads=True),
    Operation("POST", "/conflicts/check-content",
              lambda c: calls.check_content(c.ws, c.body.content, c.body.path),
              "For a draft memory: the conflicts it would bring and the most similar memories.",
              body=CheckContentBody, reads=True),
    Operation("GET", "/conflicts/{conflict_id}",
              lambda c: calls.conflict(c.ws, c.path["conflict_id"]),
              "One conflict: both memories, the evidence and any decision."),
    Operation("POST", "/conflicts/{conflict_id}/resolve", _resolve,
              "Resolve a conflict: one commit (or, with propose, a proposal for review).",
              body=ResolveBody, decides=lambda body: not body.propose),
    Operation("POST", "/conflicts/{conflict_id}/dismiss", _dismiss,
              "Dismiss a conflict as a false positive: never reported again.", body=ReasonBody,
              decides=True),
]
