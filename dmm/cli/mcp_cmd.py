"""`dmm mcp`."""

from __future__ import annotations

import click

from dmm.cli.common import workspace


@click.command("mcp")
@click.pass_context
def command(ctx: click.Context) -> int:
    """Serve this repository's memory to an agent over MCP (stdio).

    Agents query, show, list, check and propose through it; approving, rejecting, resolving
    and dismissing stay a person's decisions, so it offers no tool for them. An agent's MCP
    settings start it as `dmm mcp` (or `dmm -C /path/to/repo mcp`).

    \b
    Example (what an MCP client runs):
      dmm -C ~/src/shop mcp
    """
    from dmm.agents.mcp_stdio import serve
    from dmm.semantic import service

    ws = workspace(ctx)
    # a long-lived process: it ranks by meaning too (docs/semantic.md); the model loads once
    # the handshake is answered, never in the way of it
    service.serve(ws, delay=2.0)
    serve(ws)
    return 0
