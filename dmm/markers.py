"""The environment variables by which agents announce themselves (the table and what they
mean are in dmm/agents/identity.py, which reads them), and an environment without them: for a
process dmm starts that must not pass for an agent's. Pure: reads the environment only, and
imports nothing of dmm, so that every layer may use it."""

from __future__ import annotations

import os
from typing import Mapping

# (variable, the value it must have or None for any non-empty value, the agent)
MARKERS: tuple[tuple[str, str | None, str], ...] = (
    ("DMM_AGENT", None, "an agent dmm serves"),
    ("CLAUDECODE", None, "Claude Code"),
    ("CLAUDE_CODE_ENTRYPOINT", None, "Claude Code"),
    ("CODEX_THREAD_ID", None, "Codex"),
    ("CODEX_SESSION_ID", None, "Codex"),
    ("CODEX_CI", None, "Codex"),
    ("CODEX_SANDBOX", None, "Codex"),
    ("CURSOR_AGENT", None, "Cursor"),
    ("CURSOR_EXTENSION_HOST_ROLE", "agent-exec", "Cursor"),
    ("AI_AGENT", None, "an AI agent"),
)


def without_markers(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` without the agents' markers: for a process dmm starts that outlives the
    command that started it (the background process serves people and agents alike, and
    what it starts must not pass for an agent's, or be refused a person's decision)."""
    env = os.environ if environ is None else environ
    names = {variable for variable, _, _ in MARKERS}
    return {k: v for k, v in env.items() if k not in names}
