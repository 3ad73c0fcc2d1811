"""`dmm agent setup`: wire dmm into the agent a team uses, in files the team reviews and
commits. Existing settings are merged, never overwritten: a key dmm would set that already
holds something else is left alone and reported. Every write is atomic.

IO boundary: the files named in ``TARGETS`` under the repository root; nothing else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dmm.errors import InvalidInputError
from dmm.fsutil import write_atomic
from dmm.workspace import Workspace

MCP_SERVER = {"command": "dmm", "args": ["mcp"]}
HOOKS = {"SessionStart": "dmm agent hook session-start",
         "UserPromptSubmit": "dmm agent hook user-prompt-submit"}
HOOK_TIMEOUT_S = 10
MARKER = "<!-- dmm: agent memory -->"
POINTER = f"""{MARKER}
## Memory (dmm)

This repository keeps its agents' memory in `.dmm/` (rules, facts, decisions and procedures,
reviewed like code). Read `.dmm/BOOT.md` once. Before a task, get the memories it needs with
the `memory_query` tool of the `dmm` MCP server (or `dmm query "<task>"`); to record something
the next session should know, propose it with `memory_propose` (or `dmm write propose`): a
person decides. Never edit `.dmm/memory/` directly.
"""
CURSOR_RULE = f"""---
description: How this repository's agent memory (dmm) is used
alwaysApply: true
---
{POINTER}"""
CODEX_TABLE = '[mcp_servers.dmm]\ncommand = "dmm"\nargs = ["mcp"]\n'
TARGETS = ("claude", "codex", "cursor", "generic")


@dataclass
class Written:
    path: str  # relative to the repository root
    action: str  # created | updated | unchanged | kept (a different value was already there)
    detail: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def setup(ws: Workspace, target: str) -> list[Written]:
    if target not in TARGETS:
        raise InvalidInputError(f"unknown agent {target!r}: one of {', '.join(TARGETS)}")
    root = ws.root
    if target == "claude":
        return [_merge_json(root, ".mcp.json", _with_server),
                _merge_json(root, ".claude/settings.json", _with_hooks),
                _append(root, "CLAUDE.md", POINTER)]
    if target == "codex":
        return [_append(root, ".codex/config.toml", CODEX_TABLE, marker="[mcp_servers.dmm]"),
                _append(root, "AGENTS.md", POINTER)]
    if target == "cursor":
        return [_merge_json(root, ".cursor/mcp.json", _with_server),
                _append(root, ".cursor/rules/dmm.mdc", CURSOR_RULE)]
    return []  # generic: nothing to write; the CLI prints what to configure


# --- merging into what exists -------------------------------------------------------------------

def _with_server(data: dict) -> str:
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InvalidInputError("mcpServers is not an object: fix the file by hand")
    if "dmm" in servers:
        return "" if servers["dmm"] == MCP_SERVER else "kept the existing mcpServers.dmm"
    servers["dmm"] = MCP_SERVER
    return "added the dmm MCP server"


def _with_hooks(data: dict) -> str:
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInputError("hooks is not an object: fix the file by hand")
    added = []
    for event, command in HOOKS.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidInputError(f"hooks.{event} is not a list: fix the file by hand")
        present = any(isinstance(g, dict) and any(
            isinstance(h, dict) and h.get("command") == command for h in g.get("hooks", []))
            for g in groups)
        if not present:
            groups.append({"hooks": [{"type": "command", "command": command,
                                      "timeout": HOOK_TIMEOUT_S}]})
            added.append(event)
    return f"added hooks: {', '.join(added)}" if added else ""


def _merge_json(root: Path, rel: str, change) -> Written:
    path = root / rel
    existed = path.exists()
    data: dict = {}
    if existed:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InvalidInputError(f"{rel} cannot be read as JSON ({exc}): dmm will not "
                                    "overwrite it", hint="fix it by hand, then run again")
        if not isinstance(data, dict):
            raise InvalidInputError(f"{rel} is not a JSON object: dmm will not overwrite it")
    before = json.dumps(data, sort_keys=True)
    detail = change(data)
    if json.dumps(data, sort_keys=True) == before:
        return Written(rel, "kept" if detail else "unchanged", detail)
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return Written(rel, "updated" if existed else "created", detail)


def _append(root: Path, rel: str, text: str, marker: str = MARKER) -> Written:
    path = root / rel
    existed = path.exists()
    current = path.read_text(encoding="utf-8") if existed else ""
    if marker in current:
        return Written(rel, "unchanged")
    joined = current + ("\n" if current and not current.endswith("\n") else "") + \
        ("\n" if current else "") + text
    write_atomic(path, joined)
    return Written(rel, "updated" if existed else "created", "added the dmm section")
