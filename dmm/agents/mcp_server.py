"""`dmm mcp`: the Model Context Protocol server, on the official `mcp` SDK's low-level server,
built from the tool table of dmm.agents.mcp_tools (dmm.agents.mcp_stdio starts it).

IO boundary: JSON-RPC through the SDK's stdio transport (given its streams by mcp_stdio), so
nothing else may print to stdout. One workspace per server; every call opens the cache fresh
(cheap when nothing changed), so the server sees commits made while it runs.

Every call's arguments are checked against the tool's schema and by dmm.agents.inputs before
any core call. A DmmError becomes a tool error with the CLI's message and hint; an unexpected
exception becomes a tool error too and never stops the server. A result is both
``structuredContent`` (validated by clients against the tool's ``outputSchema``) and text for
the model: the Memory Pack as compact markdown (its budget counts that text), any other
result as the same JSON, compact. An unknown memory in
``dmm://memory/{id}`` is a resource-not-found error with dmm's message.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from dmm.agents import inputs, mcp_calls, mcp_tools
from dmm.errors import DmmError
from dmm.workspace import Workspace

# the decisions no agent tool may make (asserted by the tests); withdrawing one's own proposal
# is not among them: it decides nothing about memory
DECISIONS = ("approve", "reject", "resolve", "dismiss", "defer")
RESOURCE_NOT_FOUND = -32002


class ToolFailure(Exception):
    """What a tool reports when it cannot do its job: the CLI's message and hint."""


def compact(data: Any) -> str:
    """JSON as a model should receive it: no indentation, no spaces, dates as ISO 8601."""
    from dmm.render import to_json

    return json.dumps(json.loads(to_json(data)), ensure_ascii=False, separators=(",", ":"))


def handlers(ws: Workspace, who: Callable[[], str]) -> dict[str, Callable[..., Any]]:
    """Each tool's call; ``who`` names the agent (agent:<client>), read at call time."""
    def propose(type="create", **kw):  # the CLI's default: a new memory
        return calls_propose(ws, who(), type=type, **kw)

    return {
        "memory_query": lambda **kw: mcp_calls.query(ws, **kw),
        "memory_show": lambda memory: _show(ws, memory),
        "memory_list": lambda **kw: mcp_calls.listing(ws, **kw),
        "memory_propose": propose,
        "proposal_status": lambda proposal_id: _status(ws, proposal_id),
        "proposal_list": lambda: mcp_calls.mine(ws, who()),
        "proposal_revise": lambda proposal_id, reason, **kw: mcp_calls.revise(
            ws, proposal_id, reason, who=who(), **kw),
        "proposal_withdraw": lambda proposal_id, reason: mcp_calls.withdraw(
            ws, proposal_id, reason, who=who()),
        "conflicts_check": lambda memories: mcp_calls.check(ws, memories),
        "conflicts_check_content": lambda content, path=None: _check_content(ws, content,
                                                                             path),
        "conflict_flag": lambda memories, description, type="contradictory": mcp_calls.flag(
            ws, memories, description, type, who=who()),
    }


def calls_propose(ws: Workspace, who: str, **kw) -> dict:
    from dmm.agents import calls

    return calls.propose(ws, proposed_by=who, **kw)


def _show(ws: Workspace, memory: str) -> dict:
    from dmm.agents import calls

    return calls.show(ws, memory)


def _status(ws: Workspace, proposal_id: str) -> dict:
    from dmm.agents import calls

    return calls.proposal_status(ws, proposal_id)


def _check_content(ws: Workspace, content: str, path: str | None) -> dict:
    from dmm.agents import calls

    return calls.check_content(ws, content, path)


def tool_result(result: Any) -> dict:
    """The CallToolResult of a tool's ``result``: its text for the model and its data."""
    if isinstance(result, mcp_calls.WithText):
        return {"content": [{"type": "text", "text": result.text}],
                "structuredContent": json.loads(compact(result.data)), "isError": False}
    text = compact(result)
    return {"content": [{"type": "text", "text": text}], "structuredContent": json.loads(text),
            "isError": False}


def error_result(error: str) -> dict:
    """The CallToolResult of a tool that reports ``error``."""
    return {"content": [{"type": "text", "text": error}], "isError": True}


def run_tool(table: dict[str, Callable[..., Any]], name: str, arguments: dict | None
             ) -> tuple[dict | None, str | None]:
    """(result, None) or (None, the error a tool reports)."""
    arguments = arguments or {}
    try:
        inputs.check(arguments, "")
        mcp_tools.check_arguments(name, arguments)
        return table[name](**arguments), None
    except DmmError as exc:
        return None, exc.message + (f" (hint: {exc.hint})" if exc.hint else "")
    except Exception as exc:  # noqa: BLE001 - a bad argument never kills the server
        return None, f"internal error: {type(exc).__name__}: {exc}"


def read_resource(ws: Workspace, uri: str) -> str:
    """The text of ``dmm://boot`` or ``dmm://memory/{id}``; ToolFailure for an unknown one."""
    from dmm.agents import calls

    try:
        if uri == "dmm://boot":
            return calls.boot(ws)  # the regular file only, never what a link points to
        if uri.startswith("dmm://memory/"):
            key = uri.removeprefix("dmm://memory/")
            inputs.check(key, "memory_id", name=True)
            return calls.memory_text(ws, key)
    except DmmError as exc:
        raise ToolFailure(exc.message + (f" (hint: {exc.hint})" if exc.hint else "")) from None
    raise ToolFailure(f"no resource {uri}: dmm serves dmm://boot and dmm://memory/{{id}}")


def build_server(ws: Workspace, who: Callable[[], str]):
    """The SDK's low-level server for ``ws``, from the tool table."""
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from dmm import __version__

    table = handlers(ws, who)
    tools = types.ListToolsResult.model_validate(mcp_tools.tools_list())

    async def list_tools(ctx, params):
        return tools

    async def call_tool(ctx, params):
        import anyio

        result, error = await anyio.to_thread.run_sync(run_tool, table, params.name,
                                                       params.arguments)
        return types.CallToolResult.model_validate(
            tool_result(result) if error is None else error_result(error))

    async def list_resources(ctx, params):
        return types.ListResourcesResult.model_validate(mcp_tools.resources_list())

    async def list_templates(ctx, params):
        return types.ListResourceTemplatesResult.model_validate(mcp_tools.templates_list())

    async def read(ctx, params):
        import anyio

        try:
            text = await anyio.to_thread.run_sync(read_resource, ws, str(params.uri))
        except ToolFailure as exc:
            raise MCPError(RESOURCE_NOT_FOUND, str(exc), {"uri": str(params.uri)}) from None
        return types.ReadResourceResult.model_validate({"contents": [
            {"uri": str(params.uri), "mimeType": "text/markdown", "text": text}]})

    return Server(mcp_tools.NAME, version=__version__, instructions=mcp_tools.INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read)
