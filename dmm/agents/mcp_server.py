"""`dmm mcp`: the Model Context Protocol server over stdio, on the official `mcp` SDK.

IO boundary: stdin/stdout carry JSON-RPC (the SDK's), so nothing else may print to stdout.
One workspace per server; every call opens the cache fresh (cheap when nothing changed), so
the server sees commits made while it runs. A DmmError becomes a tool error with the CLI's
message and hint; an unexpected exception becomes a tool error too and never stops the server.
"""

from __future__ import annotations

from typing import Any

from dmm.agents import calls
from dmm.errors import DmmError
from dmm.workspace import Workspace

INSTRUCTIONS = """\
dmm is this repository's memory: rules, facts, decisions and procedures kept as markdown under
.dmm/memory/ and reviewed like code. Before a task, call memory_query with the task in a
sentence and follow what the Memory Pack says (baseline memories always apply). When you learn
something the next session should know, or find a memory wrong, call memory_propose: it creates
a proposal branch that a person or the automated reviewer decides. You cannot approve, reject,
resolve or dismiss anything: those are a person's decisions. Check a draft with
conflicts_check_content before proposing, and the memories you rely on with conflicts_check."""

# the decisions no agent tool may make (asserted by the tests)
DECISIONS = ("approve", "reject", "resolve", "dismiss", "withdraw", "defer")


class ToolFailure(Exception):
    """What a tool reports when it cannot do its job: the CLI's message and hint."""


def _call(fn, *args, **kw) -> Any:
    try:
        return fn(*args, **kw)
    except DmmError as exc:
        raise ToolFailure(exc.message + (f" (hint: {exc.hint})" if exc.hint else "")) from None
    except Exception as exc:  # noqa: BLE001 - a bad argument never kills the server
        raise ToolFailure(f"internal error: {type(exc).__name__}: {exc}") from None


def build_server(ws: Workspace):
    """The MCP server for ``ws``: tools, the BOOT.md resource and one resource per memory."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from dmm import __version__

    server = MCPServer("dmm", instructions=INSTRUCTIONS, version=__version__)

    def run(fn, *args, **kw):
        try:
            return _call(fn, *args, **kw)
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    def memory_query(task: str, budget: int | None = None, scopes: list[str] | None = None,
                     tags: list[str] | None = None, exclude_ephemeral: bool = False) -> dict:
        """The Memory Pack for a task: every baseline memory, then the most relevant others
        within the token budget, with warnings about conflicts among them. Call it before
        starting a task, with the task in a sentence."""
        return run(calls.query, ws, task, budget=budget, scopes=scopes, tags=tags,
                   exclude_ephemeral=exclude_ephemeral)

    @server.tool()
    def memory_show(memory: str) -> dict:
        """One memory, by its id (mem_2026_03_14_007) or its path under .dmm/memory/."""
        return run(calls.show, ws, memory)

    @server.tool()
    def memory_list(scope: str | None = None, tag: str | None = None,
                    status: str | None = None, path_prefix: str | None = None,
                    older_than: int | None = None, newer_than: int | None = None,
                    sort: str = "path", reverse: bool = False, limit: int = 100) -> dict:
        """The memories of the store (without their text), as `dmm list` chooses them: by
        scope, tag, status (active, deprecated), folder (path_prefix, e.g. "project/api") and
        age in days since `created` (older_than, newer_than); sorted by path, id, created,
        priority, tokens, title or scope (reverse: largest, newest or last first); at most
        `limit` (1-1000) of them."""
        return run(calls.listing, ws, scope=scope, tag=tag, status=status,
                   path_prefix=path_prefix, older_than=older_than, newer_than=newer_than,
                   sort=sort, reverse=reverse, limit=limit)

    @server.tool()
    def memory_propose(type: str, path: str, reason: str, content: str | None = None,
                       patch: str | None = None, new_scope: str | None = None,
                       expires: str | None = None) -> dict:
        """Propose a memory change (type: create, update, deprecate or promote) for the file
        `path` under .dmm/memory/ (e.g. project/api/errors.md), with the reason. create and
        update take the whole file as `content` (YAML frontmatter with tags, priority,
        confidence, then a '# Title' and the text) or update takes a unified diff as `patch`;
        promote takes `new_scope`, and `expires` (keep, drop or a new YYYY-MM-DD) when the
        memory has an expiry date. The result is a proposal branch that a person or the
        automated reviewer decides; it lists what the reviewer will check."""
        return run(calls.propose, ws, proposed_by="agent", type=type, path=path,
                   reason=reason, content=content, patch=patch, new_scope=new_scope,
                   expires=expires)

    @server.tool()
    def proposal_status(proposal_id: str) -> dict:
        """Where a proposal stands: pending or deferred (open), or approved, modified,
        rejected, withdrawn."""
        return run(calls.proposal_status, ws, proposal_id)

    @server.tool()
    def conflicts_check(memory_ids: list[str]) -> dict:
        """Open conflicts (contradictions, duplicates, stale facts ...) that involve any of
        these memories: check the memories you are about to rely on."""
        return run(calls.check, ws, memory_ids)

    @server.tool()
    def conflicts_check_content(content: str, path: str | None = None) -> dict:
        """For a draft memory (the whole file, as memory_propose takes it): the memories it
        would conflict with and the most similar ones, before you propose it."""
        return run(calls.check_content, ws, content, path)

    @server.tool()
    def conflict_flag(memory_ids: list[str], description: str,
                      type: str = "contradictory") -> dict:
        """Record a conflict you noticed between two memories (committed under
        .dmm/conflicts/ for a person to resolve). type: contradictory, duplicate,
        supersession, scope_overlap or stale."""
        return run(calls.flag, ws, memory_ids, description, type, who="agent")

    @server.resource("dmm://boot", name="BOOT.md", mime_type="text/markdown",
                     description="How agents use this repository's memory")
    def boot() -> str:
        try:
            return _call(calls.boot, ws)
        except ToolFailure as exc:
            raise ValueError(str(exc)) from None

    @server.resource("dmm://memory/{memory_id}", name="memory", mime_type="text/markdown",
                     description="One memory file, by id")
    def memory_resource(memory_id: str) -> str:
        try:
            return _call(calls.memory_text, ws, memory_id)
        except ToolFailure as exc:
            raise ValueError(str(exc)) from None

    return server
