"""Who runs this dmm: a person, or an agent. Only people decide (approve, reject, process,
defer, resolve, dismiss, undo); an agent proposes, checks and flags, and what it proposes is
recorded as the agent's, never as a person's (docs/guarantees.md, "Only people decide").

Agents announce themselves in the environment of the shells they run commands in, and dmm
marks the processes it starts for an agent:

| variable | set by |
| --- | --- |
| `CLAUDECODE=1`, `CLAUDE_CODE_ENTRYPOINT`, `AI_AGENT=claude-code_...` | Claude Code, in its Bash tool and its hooks |
| `CODEX_THREAD_ID`, `CODEX_SESSION_ID`, `CODEX_CI`, `CODEX_SANDBOX` | the Codex CLI, in its shell tool |
| `CURSOR_AGENT`, `CURSOR_EXTENSION_HOST_ROLE=agent-exec` | Cursor's agent (editor and CLI) |
| `AI_AGENT` | any agent following that convention |
| `DMM_AGENT` | dmm itself: `dmm mcp` and the agent hooks, for everything they start |

(measured for Claude Code 2.1.197 and Codex 0.169 by running `env` through their own shell
tools; Cursor's from its documentation.) The limit: an agent that clears its environment, or
a person who exports one of these, is not seen as it is. Pure: reads the environment only.
"""

from __future__ import annotations

import os
from typing import Mapping

# the markers, and the environment without them, live below every layer: the boundary of
# the background process (dmm/background/client.py) starts it without them
from dmm.markers import MARKERS, without_markers  # noqa: F401 - re-exported


def agent_shell(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(the agent, the variable that says so) when this process runs for an agent."""
    env = os.environ if environ is None else environ
    for variable, wanted, agent in MARKERS:
        value = env.get(variable, "")
        if value and (wanted is None or value == wanted):
            if variable == "DMM_AGENT" and ":" in value:
                agent = value.split(":", 1)[1] + " (through dmm mcp)"
            return agent, variable
    return None


def agent_name(environ: Mapping[str, str] | None = None) -> str | None:
    """The name a proposal from this agent is recorded under (agent:claude-code), or None
    for a person."""
    found = agent_shell(environ)
    if found is None:
        return None
    agent, variable = found
    env = os.environ if environ is None else environ
    if variable == "DMM_AGENT":
        value = env[variable]
        return "agent:" + value.split(":", 1)[1] if ":" in value else "agent"
    slug = "".join(c if c.isalnum() else "-" for c in agent.lower()).strip("-")
    return "agent:" + "-".join(p for p in slug.split("-") if p)
