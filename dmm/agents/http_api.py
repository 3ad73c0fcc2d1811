"""`dmm serve`: the HTTP API of the PRDs (phase 2 and phase 3, section 7) as a Starlette app:
who may call (tokens, loopback names), how a request becomes a call of the endpoint table
(dmm.agents.http_routes, models in dmm.agents.http_models) and how errors answer; the OpenAPI
document is dmm.agents.http_openapi, connection limits dmm.agents.http_server.

Access (docs/api.md): with no token the server answers only on a loopback address, only to
requests whose Host is a loopback name (a web page cannot reach it through DNS rebinding), and
serves no decision. With tokens every request needs ``Authorization: Bearer <secret>``; a
person's token may also decide (approve, reject, process, resolve, dismiss) and its name is
recorded as the reviewer. Every POST must be ``application/json``, which a browser cannot send
to another origin without asking first (and this server answers no such question).

Core calls are blocking (git processes, SQLite), so they run in threads: reads in their own
lane, one per core (``Readers``), writes in Starlette's thread pool. The core's locks (dmm.lock, git's
index.lock, the cache's write lock) are flocks taken per open file, so they serialise threads
as they serialise processes.
"""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import ValidationError

from dmm.agents import inputs
from dmm.agents.http_models import Model
from dmm.agents.http_openapi import openapi
from dmm.agents.http_routes import OPERATIONS, Call, Operation
from dmm.errors import AlreadyDecidedError, DmmError, ExitCode
from dmm.workspace import Workspace

__all__ = ["OPERATIONS", "Access", "Token", "build_app", "is_loopback_address", "openapi"]

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
    """Reads run in their own lane of threads, as many at once as the machine has cores (or
    ``DMM_SERVE_READERS``); writes, which wait on git processes and locks, keep Starlette's
    thread pool and never queue behind them. A read used to be Python work that held the GIL
    all along (a walk of every memory file, a row per matching memory), so two side by side
    only took turns (40 queries a second at 1,000 memories in threads, 85 one at a time). Now
    the freshness check is a watch, the ranking a few vector operations and the model's work
    runs outside the GIL: docs/performance.md has the throughput of 1 and 8 clients."""

    def __init__(self, lanes: int | None = None) -> None:
        import os

        self.lanes = lanes or int(os.environ.get("DMM_SERVE_READERS") or 0) \
            or os.cpu_count() or 1
        self._limiter = None

    async def run(self, fn: Callable, *args: Any) -> Any:
        import anyio

        if self._limiter is None:  # made inside the event loop that uses it
            self._limiter = anyio.CapacityLimiter(self.lanes)
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
