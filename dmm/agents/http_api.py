"""`dmm serve`: the HTTP API of the PRDs (phase 2 and phase 3, section 7) as a Starlette app.

One table, ``OPERATIONS``, says for every endpoint its method and path, the core call it makes
(dmm.agents.calls, shared with the MCP server), the pydantic models that validate its query
string and JSON body, and whether it is a person's decision. The app and the OpenAPI document
are both built from that table, so they cannot drift apart.

Access (docs/api.md): with no token the server answers only on a loopback address, only to
requests whose Host is a loopback name (a web page cannot reach it through DNS rebinding), and
serves no decision. With tokens every request needs ``Authorization: Bearer <secret>``; a
person's token may also decide (approve, reject, process, resolve, dismiss) and its name is
recorded as the reviewer. Every POST must be ``application/json``, which a browser cannot send
to another origin without asking first (and this server answers no such question).

Core calls are blocking (git processes, SQLite), so they run in threads: reads one at a time
(``Readers``), writes in Starlette's thread pool. The core's locks (dmm.lock, git's
index.lock, the cache's write lock) are flocks taken per open file, so they serialise threads
as they serialise processes.
"""

from __future__ import annotations

import hmac
import logging
import re
from dataclasses import dataclass
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dmm.agents import calls, inputs
from dmm.conflicts.model import STATUSES, TYPES
from dmm.conflicts.resolver import ACTIONS
from dmm.errors import AlreadyDecidedError, DmmError, ExitCode
from dmm.query.run import MAX_BUDGET
from dmm.workspace import Workspace

LOG = logging.getLogger("dmm.serve")
MAX_BODY = 2 * 1_048_576  # bytes: a memory is at most 1 MiB, plus the JSON around it
STATUS_OF = {ExitCode.NOT_FOUND: 404, ExitCode.INVALID_INPUT: 400, ExitCode.BUSY: 503,
             ExitCode.GIT_FAILED: 500, ExitCode.IO_FAILED: 507,
             ExitCode.NOT_INITIALIZED: 500, ExitCode.NOT_A_REPOSITORY: 500}


@dataclass(frozen=True)
class Token:
    name: str
    secret: str
    decides: bool  # a person's token; an agent's token may read and propose only


@dataclass(frozen=True)
class Access:
    tokens: tuple[Token, ...] = ()
    loopback: bool = True  # bound to a loopback address: check the Host header

    def holder(self, header: str | None) -> Token | None:
        """The token an ``Authorization`` header carries, compared in constant time."""
        scheme, _, given_text = (header or "").strip().partition(" ")
        if scheme.lower() != "bearer":  # the scheme is case-insensitive (RFC 9110, 11.1)
            return None
        given = given_text.strip().encode()
        found = None
        for token in self.tokens:
            if hmac.compare_digest(given, token.secret.encode()):
                found = token
        return found


class Problem(Exception):
    """An HTTP error with dmm's error shape: message, hint, exit code."""

    def __init__(self, status: int, message: str, hint: str | None = None,
                 exit_code: int = ExitCode.INVALID_INPUT):
        super().__init__(message)
        self.status, self.message, self.hint, self.exit_code = status, message, hint, exit_code

    def body(self) -> dict:
        return {"error": self.message, "hint": self.hint, "exit_code": int(self.exit_code),
                "status": self.status}


# --- what each endpoint accepts ----------------------------------------------------------------

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
    full: bool = False
    since: str | None = Field(None, description="Scan the memories changed since this commit.")
    memory_id: str | None = Field(None, description="Scan one memory against the store.")
    methods: list[str] | None = None


class ResolveBody(Model):
    action: Literal[ACTIONS]
    reason: str = Field(min_length=1)
    target: str | None = Field(None, description="deprecate: the memory to retire.")
    content: str | None = Field(None, description="merge: the merged memory.")
    path: str | None = Field(None, description="merge: where the merged memory goes.")
    clarifications: dict[str, str] = Field({}, description="clarify: memory id -> text.")
    propose: bool = Field(False, description=(
        "Open a proposal branch for review instead of committing (no person's token needed)."))


class FlagBody(Model):
    memory_ids: list[str] = Field(min_length=2, max_length=2)
    description: str = Field(min_length=1)
    type: Literal[TYPES] = "contradictory"


class CheckBody(Model):
    memory_ids: list[str] = Field(min_length=1, max_length=1000)


class CheckContentBody(Model):
    content: str = Field(min_length=1, max_length=1_048_576)
    path: str | None = None


# --- the endpoints ------------------------------------------------------------------------------

@dataclass
class Call:
    """One request, as an operation sees it."""

    ws: Workspace
    who: str  # the token's name, or "agent" on a server without tokens
    token: Token | None
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
    from dmm.conflicts.resolver import ResolutionRequest

    b = c.body
    request = ResolutionRequest(c.path["conflict_id"], b.action, b.reason, target=b.target,
                                content=b.content, path=b.path,
                                clarifications=dict(b.clarifications), resolved_by=c.who)
    return calls.resolve(c.ws, request, propose=b.propose)


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
                                      bypass_reviewer=c.body.bypass_reviewer),
              "Approve a proposal: merge it into the checked-out branch.", body=ApproveBody,
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
              lambda c: calls.scan(c.ws, full=c.body.full, since=c.body.since,
                                   memory=c.body.memory_id, methods=c.body.methods),
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


# --- the app -----------------------------------------------------------------------------------

def _validated(model: type[Model] | None, data: Any, where: str) -> Any:
    if model is None:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or where}: {e['msg']}"
                           for e in exc.errors()[:5])
        raise Problem(400, f"bad {where}: {detail}") from None


async def _json_body(request) -> Any:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise Problem(415, "send the request body as JSON (Content-Type: application/json)")
    import anyio

    from dmm.agents.http_server import BODY_TIMEOUT

    raw = bytearray()
    try:
        with anyio.fail_after(BODY_TIMEOUT):
            async for chunk in request.stream():
                raw += chunk
                if len(raw) > MAX_BODY:
                    raise Problem(413, f"the request body is larger than {MAX_BODY} bytes")
    except TimeoutError:
        raise Problem(408, f"the request body did not arrive within {BODY_TIMEOUT:.0f} s") \
            from None
    if not raw.strip():
        return {}
    return inputs.parse_json(bytes(raw))


def _host(header: str) -> str:
    """The name in a Host header, without the port."""
    return header.split("]")[0] + "]" if header.startswith("[") else header.rsplit(":", 1)[0]


def _loopback_name(host: str) -> bool:
    """A Host naming this machine: localhost or a loopback address literal (an IPv4-mapped
    one too). Never another name, which DNS could point anywhere."""
    if host.lower() == "localhost":
        return True
    return is_loopback_address(host.strip("[]"))


def is_loopback_address(text: str) -> bool:
    """Whether ``text`` is a loopback IP address (127.0.0.0/8, ::1, ::ffff:127.x.y.z)."""
    import ipaddress

    try:
        address = ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return False
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _caller(access: Access, request) -> Token | None:
    """Who makes this request: their token (None on a server without tokens)."""
    host = _host(request.headers.get("host", ""))
    if access.loopback and not _loopback_name(host):
        raise Problem(403, f"this server answers on loopback names only, not {host!r}")
    token = access.holder(request.headers.get("authorization"))
    if access.tokens and token is None:
        raise Problem(401, "this server needs a token: send 'Authorization: Bearer <token>'",
                      hint="the token was printed when `dmm serve` started")
    return token


def _check_decision(access: Access, op: Operation, body: Any, token: Token | None) -> None:
    if op.needs_person(body) and not (token and token.decides):
        raise Problem(403, "approving, rejecting, resolving and dismissing are a person's "
                           "decisions: they need a person's token",
                      hint="start the server with `dmm serve --token NAME` and send that "
                           "token" if not access.tokens else "this token may not decide")


def _path_params(request) -> dict[str, str]:
    return {k: str(v) for k, v in request.path_params.items()}


def _json_response(data: Any, status: int = 200):
    """JSON the way the CLI's --json prints it (dates as ISO 8601)."""
    from starlette.responses import Response

    from dmm.render import to_json

    return Response(to_json(data), status, media_type="application/json")


class Readers:
    """Reads (ranking, the freshness scan, JSON) are Python work that holds the GIL: run side
    by side in threads they only take turns, and lose time to it (measured on 2 cores, 8
    clients at 1,000 memories: 40 queries a second in threads, 85 one at a time). So they run
    one at a time, in their own lane; writes, which wait on git processes and locks, keep
    Starlette's thread pool and never queue behind them."""

    def __init__(self) -> None:
        self._limiter = None

    async def run(self, fn: Callable, *args: Any) -> Any:
        import anyio

        if self._limiter is None:  # made inside the event loop that uses it
            self._limiter = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)


def _endpoint(ws: Workspace, access: Access, op: Operation, readers: Readers):
    from starlette.concurrency import run_in_threadpool

    async def handle(request):
        try:
            token = _caller(access, request)
            inputs.check(_path_params(request), "path", name=True)
            inputs.check(dict(request.query_params), "query string")
            params = _validated(op.params, dict(request.query_params), "query string") \
                if op.params else None
            if not op.params and request.query_params:
                raise Problem(400, f"{op.path} takes no query string")
            body = _validated(op.body, await _json_body(request), "body") \
                if op.method == "POST" else None
            _check_decision(access, op, body, token)
            call = Call(ws, token.name if token else "agent", token, _path_params(request),
                        params, body)
            out = await (readers.run(op.run, call) if op.read_only
                         else run_in_threadpool(op.run, call))
        except Problem as exc:
            return _json_response(exc.body(), exc.status)
        except DmmError as exc:
            problem = Problem(_status(exc), exc.message, exc.hint, exc.exit_code)
            return _json_response(problem.body(), problem.status)
        except Exception as exc:  # noqa: BLE001 - one bad request never stops the server
            LOG.exception("internal error in %s %s", op.method, op.path)
            problem = Problem(500, f"internal error: {type(exc).__name__}: {exc}",
                              exit_code=70)
            return _json_response(problem.body(), 500)
        status = 201 if op.created else 200
        if isinstance(out, tuple):
            out, status = out
        return _json_response(out, status)

    handle.__name__ = getattr(op.run, "__name__", "handle")
    return handle


def _status(exc: DmmError) -> int:
    from dmm.proposals.decide import ConflictError

    if isinstance(exc, (AlreadyDecidedError, ConflictError)):
        return 409
    return STATUS_OF.get(exc.exit_code, 500)


def build_app(ws: Workspace, access: Access):
    """The Starlette app serving ``ws``: every operation, and the OpenAPI document."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    document = openapi()

    async def openapi_json(request):
        try:
            _caller(access, request)
        except Problem as exc:
            return _json_response(exc.body(), exc.status)
        return _json_response(document)

    async def not_found(request, exc):
        status = getattr(exc, "status_code", 404)
        text = "no such endpoint (GET /openapi.json lists them)" if status == 404 else \
            "this endpoint does not take that method (GET /openapi.json lists them)"
        return _json_response(Problem(status, text, exit_code=ExitCode.USAGE).body(), status)

    readers = Readers()
    routes = [Route(op.path, _endpoint(ws, access, op, readers), methods=[op.method])
              for op in OPERATIONS]
    routes.append(Route("/openapi.json", openapi_json, methods=["GET"]))
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})


# --- the OpenAPI document -----------------------------------------------------------------------

ERROR_SCHEMA = {"type": "object", "required": ["error", "exit_code", "status"], "properties": {
    "error": {"type": "string"}, "hint": {"type": ["string", "null"]},
    "exit_code": {"type": "integer", "description": "dmm's exit code (docs/exit_codes.md)"},
    "status": {"type": "integer"}}}


def openapi() -> dict:
    """The OpenAPI 3.1 document of ``OPERATIONS`` (served at /openapi.json; docs/openapi.json
    is a copy, kept equal by a test)."""
    from dmm import __version__

    paths: dict[str, dict] = {}
    schemas: dict[str, dict] = {"Error": ERROR_SCHEMA}
    for op in OPERATIONS:
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", op.path)
        item: dict[str, Any] = {"summary": op.summary, "operationId": _operation_id(op)}
        parameters = [{"name": name, "in": "path", "required": True,
                       "schema": {"type": "string"}} for name in re.findall(r"\{(\w+)", path)]
        if op.params:
            schema = op.params.model_json_schema()
            parameters += [{"name": name, "in": "query",
                            "required": name in schema.get("required", ()),
                            "schema": {k: v for k, v in prop.items() if k != "title"}}
                           for name, prop in schema["properties"].items()]
        if parameters:
            item["parameters"] = parameters
        if op.body:
            schemas[op.body.__name__] = op.body.model_json_schema()
            item["requestBody"] = {"required": True, "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{op.body.__name__}"}}}}
        ok = "201" if op.created else "200"
        item["responses"] = {ok: {"description": "the result, as `--json` of the matching "
                                                 "dmm command prints it (docs/api.md)",
                                  "content": {"application/json": {"schema": {
                                      "type": "object"}}}}}
        for status, why in _errors(op):
            item["responses"][status] = {"description": why, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Error"}}}}
        if op.decides:
            item["description"] = ("A person's decision: needs a person's token "
                                   "(`dmm serve --token NAME`); the token's name is recorded "
                                   "as the reviewer." + (" Not with `propose: true`."
                                                         if callable(op.decides) else ""))
        paths.setdefault(path, {})[op.method.lower()] = item
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "dmm", "version": __version__,
                 "description": "The HTTP API of dmm's memory store (`dmm serve`). "
                                "See docs/api.md."},
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": {
            "token": {"type": "http", "scheme": "bearer",
                      "description": "A token given to `dmm serve --token/--agent-token`."}}},
    }
    doc["security"] = [{"token": []}, {}]  # a token only when the server was given some
    return doc


def _operation_id(op: Operation) -> str:
    words = re.sub(r"\{[^}]+\}", "one", op.path).strip("/").replace("-", "/").split("/")
    return op.method.lower() + "_" + "_".join(w for w in words if w)


def _errors(op: Operation) -> list[tuple[str, str]]:
    out = [("400", "bad input"), ("401", "a token is needed and was not sent")]
    if op.decides:
        out.append(("403", "a person's token is needed"))
    if "{" in op.path:
        out.append(("404", "no such memory, proposal or conflict"))
    if op.method == "POST":
        out += [("409", "already decided, or no longer merges"),
                ("415", "the body is not application/json")]
    return out
