"""What each endpoint of `dmm serve` accepts: the pydantic models of query strings and JSON
bodies (dmm.agents.http_routes names them per endpoint). Unknown fields are refused, except
where a PRD body carries fields dmm accepts and does not need (noted on the model).

Pure: no IO.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from dmm.agents import calls
from dmm.conflicts.model import STATUSES, TYPES
from dmm.conflicts.resolver import ACTIONS
from dmm.proposals.relations import MAX_NOTE_CHARS, MAX_RELATIONS, RELATIONS
from dmm.query.run import MAX_BUDGET


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")



class QueryBody(Model):
    query: str = Field(min_length=1, max_length=20_000, description="The task, in a sentence.")
    budget: int | None = Field(None, ge=1, le=MAX_BUDGET, description="Tokens for the pack.")
    scopes: list[str] = []
    tags: list[str] = []
    exclude_ephemeral: bool = False


class MemoriesParams(Model):
    scope: str | None = None
    tag: str | None = None
    status: Literal["active", "deprecated"] | None = None
    path_prefix: str | None = None
    older_than: int | None = Field(None, ge=0, description="days since `created`")
    newer_than: int | None = Field(None, ge=0, description="days since `created`")
    sort: Literal["path", "id", "created", "priority", "tokens", "title", "scope"] = "path"
    reverse: bool = False
    limit: int = Field(100, ge=1, le=1000)


class RelationItem(Model):
    memory_id: str = Field(min_length=1, max_length=300, description="The other memory's id.")
    relation: Literal[RELATIONS]
    note: str = Field("", max_length=MAX_NOTE_CHARS, description="Why, in a sentence.")


class ProposeBody(Model):
    type: Literal["create", "update", "deprecate", "promote"]
    path: str = Field(description="The memory file, relative to .dmm/memory/.")
    reason: str
    content: str | None = Field(None, description="create/update: the whole file.")
    patch: str | None = Field(None, description="update: a unified diff.")
    new_scope: str | None = Field(None, description="promote: the scope it moves to.")
    expires: str | None = Field(None, description=(
        "promote: what happens to the memory's `expires` date: keep, drop or a new YYYY-MM-DD "
        "(required when it has one)."))
    proposed_by: str | None = Field(None, max_length=100, description=(
        "Who proposes; ignored when the server has tokens (the token's name is used)."))
    relations: list[RelationItem] | None = Field(None, max_length=MAX_RELATIONS, description=(
        "create/update: how the new content relates to its nearest memories (the answer's "
        "`neighbours`): supersedes (that memory is retired when a person approves), "
        "contradicts, refines, duplicates or unrelated. A claim the reviewer shows; it "
        "approves nothing."))


class ProposalsParams(Model):
    status: Literal["pending", "deferred", "all", "approved", "modified", "rejected",
                    "withdrawn", "closed"] = "all"
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0)


class ProcessBody(Model):
    force: bool = Field(False, description="Approve what warnings alone would defer.")


class BatchBody(Model):
    limit: int | None = Field(None, ge=1, le=1_000_000)
    force: bool = False


class ApproveBody(Model):
    bypass_reviewer: bool = False
    reason: str = ""
    # the commit the person reviewed (`review show`'s "commit"): any other tip is refused
    expect: str | None = Field(default=None, max_length=64)


class ReasonBody(Model):
    reason: str = Field(min_length=1)


class UsageMemoriesParams(Model):
    sort_by: Literal[calls.USAGE_SORTS] = "total_retrievals"
    order: Literal["asc", "desc"] = "desc"
    limit: int = Field(20, ge=1, le=1000)


class UsageQueriesParams(Model):
    limit: int = Field(20, ge=1, le=1000)
    after: str | None = Field(None, description="ISO 8601 time, e.g. 2026-11-01.")


class ConflictsParams(Model):
    status: Literal[STATUSES + ("all",)] = "unresolved"
    type: Literal[TYPES] | None = None
    min_confidence: float = Field(0.0, ge=0, le=1)
    memory_id: str | None = Field(None, description="Only conflicts involving this memory.")
    limit: int = Field(50, ge=1, le=1000)


class ScansParams(Model):
    limit: int = Field(20, ge=1, le=1000)


class ScanBody(Model):
    """dmm's fields, or the PRD's ScanRequest (scan_type, target_memory_id, methods,
    include_rule_extraction)."""

    full: bool = False
    since: str | None = Field(None, description="Scan the memories changed since this commit.")
    memory_id: str | None = Field(None, description="Scan one memory against the store.")
    methods: list[str] | None = None
    scan_type: Literal["full", "incremental", "targeted"] | None = Field(None, description=(
        "PRD ScanRequest: full (everything), incremental (what changed) or targeted "
        "(target_memory_id against the store)."))
    target_memory_id: str | None = Field(None, description="PRD ScanRequest: targeted scan.")
    include_rule_extraction: bool | None = Field(None, description=(
        "PRD ScanRequest: also ask the judge, the language model the store's [judge] "
        "settings name, about each scanned memory and its nearest ones (their text goes to "
        "that model). Without a judge configured the rules' answer stands and `errors` says "
        "so. Default: as [judge] use_rule_extraction says."))

    def scan_args(self) -> dict:
        """The core scan's arguments, from either vocabulary."""
        from dmm.errors import InvalidInputError

        memory = self.memory_id or self.target_memory_id
        if self.scan_type == "targeted" and not memory:
            raise InvalidInputError("scan_type targeted needs target_memory_id")
        methods = [m for m in self.methods or [] if m not in ("rule_extraction", "manual",
                                                              "co_retrieval")] or None
        judge = self.include_rule_extraction
        if judge is None and "rule_extraction" in (self.methods or []):
            judge = True  # the PRD's method list naming the judge's analyzer asks for it
        return {"full": self.full or self.scan_type == "full", "since": self.since,
                "memory": memory, "methods": methods, "rule_extraction": judge}


class ResolveBody(Model):
    """dmm's fields, or the PRD's ResolutionRequest (conflict_id, target_memory_id,
    merged_content, clarification, dismiss_reason, resolved_by)."""

    action: Literal[ACTIONS]
    reason: str = Field("", description="Why (required; dismiss_reason counts as one).")
    target: str | None = Field(None, description="deprecate: the memory to retire.")
    content: str | None = Field(None, description="merge: the merged memory.")
    path: str | None = Field(None, description="merge: where the merged memory goes.")
    clarifications: dict[str, str] = Field({}, description="clarify: memory id -> text.")
    propose: bool = Field(False, description=(
        "Open a proposal branch for review instead of committing (no person's token needed)."))
    conflict_id: str | None = Field(None, description="PRD: the same id as in the path.")
    target_memory_id: str | None = Field(None, description=(
        "PRD: deprecate: the memory to retire; clarify: the memory the clarification is for."))
    merged_content: str | None = Field(None, description="PRD: merge: the merged memory.")
    clarification: str | None = Field(None, description=(
        "PRD: clarify: the condition to add to target_memory_id."))
    dismiss_reason: str | None = Field(None, description="PRD: dismiss: why.")
    resolved_by: str | None = Field(None, max_length=100, description=(
        "PRD: who resolves; the token's name is recorded instead (a person's token)."))

    def request(self, conflict_id: str, who: str):
        """The core's ResolutionRequest, from either vocabulary."""
        from dmm.conflicts.resolver import ResolutionRequest
        from dmm.errors import InvalidInputError

        if self.conflict_id and self.conflict_id != conflict_id:
            raise InvalidInputError(f"conflict_id {self.conflict_id} is not the conflict of "
                                    f"the path, {conflict_id}")
        reason = self.reason or self.dismiss_reason or ""
        if not reason.strip():
            raise InvalidInputError("reason is required: say why this resolves the conflict")
        clarifications = dict(self.clarifications)
        if self.clarification:
            if not self.target_memory_id:
                raise InvalidInputError("clarification needs target_memory_id: the memory "
                                        "it is for")
            clarifications[self.target_memory_id] = self.clarification
        target = self.target or (self.target_memory_id if self.action == "deprecate" else None)
        return ResolutionRequest(conflict_id, self.action, reason, target=target,
                                 content=self.content or self.merged_content, path=self.path,
                                 clarifications=clarifications, resolved_by=who)


class FlagBody(Model):
    memory_ids: list[str] = Field(min_length=2, max_length=2)
    description: str = Field(min_length=1)
    type: Literal[TYPES] = "contradictory"


class CheckBody(Model):
    memory_ids: list[str] = Field(min_length=1, max_length=1000)


class CheckContentBody(Model):
    content: str = Field(min_length=1, max_length=1_048_576)
    path: str | None = None
