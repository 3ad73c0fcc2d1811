"""The ways agents reach dmm besides the command line: the MCP server (mcp_server.py), the
files that wire dmm into an agent (setup.py) and the prompt hooks (hook.py).

Each tool is a thin call into the same core functions the CLI uses and returns the shapes of
the CLI's --json. Agents query, show, list, check and propose; approving, rejecting, resolving
and dismissing are a person's decisions, so no agent tool makes them (docs/agents.md).
"""
