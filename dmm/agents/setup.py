"""`dmm agent setup`: wire dmm into the agent a team uses, in files the team reviews and
commits. Existing settings are merged, never overwritten: a key dmm would set that already
holds something else is left alone and reported, and a file is changed only where dmm adds
something (dmm.agents.edits keeps the rest byte for byte). Files are reached only inside the
repository (dmm.agents.confined) and every write is atomic.

IO boundary: the files named in ``setup`` under the repository root; nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dmm.agents import confined, edits, mcp_tools
from dmm.agents.where import where
from dmm.errors import InvalidInputError
from dmm.workspace import Workspace

HOOK_TIMEOUT_S = 10
MARKER = "<!-- dmm: agent memory -->"
END_MARKER = "<!-- /dmm: agent memory -->"
POINTER = f"""{MARKER}
## Memory (dmm)

This repository keeps its agents' memory in `.dmm/` (rules, facts, decisions and procedures,
reviewed like code); `.dmm/BOOT.md` explains it. What agents do with it:

- query: before a task, `memory_query` of the `dmm` MCP server, or `dmm query "<task>"`
- propose: what the next session should know, or a fix to a memory that is wrong:
  `memory_propose`, or `dmm write propose`
- check: a draft with `conflicts_check_content`, the memories relied on with `conflicts_check`
  (`dmm conflicts check`)
- flag: two memories that disagree, with `conflict_flag` (`dmm conflicts flag`)
{{where}}
People review proposals and resolve conflicts; dmm refuses those decisions when an agent runs
it. Files under `.dmm/memory/` change only through reviewed proposals.
{END_MARKER}
"""


def pointer(dmm: str | None) -> str:
    """The section for CLAUDE.md, AGENTS.md and Cursor's rule, naming where dmm is."""
    from dmm.shellcmd import command as quoted

    where_it_is = (f"\nWhere `dmm` is not on the shell's PATH, run it as `{quoted(dmm)}` (where "
                   "`dmm agent setup` found it).\n") if dmm else ""
    return POINTER.replace("{where}", where_it_is)


CURSOR_RULE_HEAD = """---
description: How this repository's agent memory (dmm) is used
alwaysApply: true
---
"""
TARGETS = ("claude", "codex", "cursor", "generic")


def hook_command(event: str, dmm: str | None = None) -> str:
    """The shell command an agent's hook runs: ``$DMM_COMMAND`` when the user's local settings
    name their dmm, else ``dmm`` (the absolute path setup found) when it is there, else the dmm
    found on PATH; never a `dmm` inside this repository, whichever way it is reached (a branch
    can commit one, and git checks a committed file out over an ignored one in a virtualenv of
    the work tree; `.` or a relative entry in PATH would run it; a committed settings file can
    name one by its absolute path): the same guard as the git hook shim (hooks/dmm-hook.sh),
    on resolved folders, for both. Refused, it prints one line and never blocks the agent.
    What it starts is marked as an agent's (DMM_AGENT)."""
    from dmm.shellcmd import command as quoted

    outside = ('case "$d" in /*) ;; *) false ;; esac'
               ' && top=$(git rev-parse --show-toplevel 2>/dev/null || pwd)'
               ' && case "$(cd "${d%/*}" && pwd -P)/" in "$(cd "$top" && pwd -P)"/*) false ;;'
               ' esac')
    on_path = f'{{ d=$(command -v dmm) && {outside}; }} || d='
    found = (f'{{ d={quoted(dmm)} && [ -x "$d" ] && {outside}; }} || {on_path}'
             if dmm else on_path)
    return (f'd=$DMM_COMMAND; case "$d" in /*) ;; *) {found} ;; esac;'
            f' [ -n "$d" ] && DMM_AGENT=hook exec "$d" agent hook {event};'
            ' echo "(dmm: no memory pack: no dmm installed on PATH outside this repository)"')


def hooks(dmm: str | None) -> dict[str, str]:
    return {"SessionStart": hook_command("session-start", dmm),
            "UserPromptSubmit": hook_command("user-prompt-submit", dmm)}


def mcp_server(dmm: str | None, *args: str) -> dict:
    """An MCP client's entry for ``dmm mcp``, by the absolute path setup found."""
    return {"command": dmm or "dmm", "args": [*args, "mcp"]}


# Codex: the server has time to start before the first request (not `required`: a teammate
# without dmm would get no Codex at all), and its read-only tools run without asking (Codex
# asks for every MCP tool call otherwise, and `codex exec` cannot ask)
CODEX_STARTUP_S = 20
# what the tools declare of themselves (readOnlyHint), so a new tool is placed by its definition
READ_ONLY_TOOLS = tuple(t["name"] for t in mcp_tools.TOOLS if t["annotations"]["readOnlyHint"])
# Claude Code: the read-only tools run without asking (`claude -p` cannot ask, and refused every
# dmm tool); the writes stay with the client's normal asking
CLAUDE_ALLOW = tuple(f"mcp__dmm__{name}" for name in READ_ONLY_TOOLS)


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
    # the absolute path of the dmm found, in every file: an agent's shell may not have it on
    # PATH (Codex's is a login shell, which resets PATH; a project virtualenv is on none)
    dmm = where(root).executable
    section = _with_section(pointer(dmm))
    if target == "claude":
        return [_edit(root, ".mcp.json", _with_server(mcp_server(dmm))),
                _edit(root, ".claude/settings.json",
                      _chain(_with_hooks(hooks(dmm)), _with_allowed(CLAUDE_ALLOW))),
                _edit(root, "CLAUDE.md", section)]
    if target == "codex":
        return [_edit(root, ".codex/config.toml", _with_codex_server(mcp_server(dmm))),
                _edit(root, ".codex/hooks.json", _with_hooks(hooks(dmm))),
                _edit(root, "AGENTS.md", section)]
    if target == "cursor":
        return [_edit(root, ".cursor/mcp.json",
                      _with_server(mcp_server(dmm, "-C", "${workspaceFolder}"))),
                _edit(root, ".cursor/rules/dmm.mdc", _with_section(pointer(dmm),
                                                                   CURSOR_RULE_HEAD))]
    return []  # generic: nothing to write; the CLI prints what to configure


def mcp_command(ws: Workspace) -> list[str]:
    """The command line an MCP client runs for this repository's server (what `generic` says
    to configure): the absolute path of the dmm found, else a bare `dmm`."""
    dmm = where(ws.root).executable
    return [dmm or "dmm", "mcp"]


def advice(ws: Workspace, target: str) -> list[str]:
    """What a person must know about what setup wrote for ``target``: where dmm is named, what
    a teammate whose dmm is elsewhere does, and what the client must be told to trust."""
    from dmm.shellcmd import command as quoted

    dmm = where(ws.root).executable
    out = []
    if target != "generic":
        if dmm:
            out.append(f"The files name dmm by its absolute path, {dmm}: an agent's shell may "
                       "not find a bare `dmm` (Codex's is a login shell, which resets PATH; a "
                       "project virtualenv is on no agent's PATH).")
            out.append("A teammate whose dmm is elsewhere: the hooks fall back to the dmm on "
                       "their PATH; for the MCP server, " + _own_server(target))
        else:
            out.append("No dmm command outside this repository was found (this is `python -m "
                       "dmm`, or a dmm in a virtualenv inside the work tree, which a branch can "
                       "replace): the files call a bare `dmm`; install dmm on PATH (pipx "
                       "install dmm), or set DMM_COMMAND in your own environment.")
    if target == "codex":
        out.append("Codex runs project hooks only once you trust them: start `codex` here, "
                   "open /hooks and trust dmm's SessionStart and UserPromptSubmit hooks (again "
                   "whenever they change); automation that vets them passes "
                   "--dangerously-bypass-hook-trust to `codex exec`. Codex reads .codex/ only "
                   "in a trusted project (`codex --trust`, or its first-start prompt).")
    if target == "generic":
        out.append("Configure your agent's MCP client to start: " + quoted(*mcp_command(ws))
                   + "   (in this repository, or with -C <repository> before mcp)")
        out.append("and point its instructions at .dmm/BOOT.md.")
    return out


def _own_server(target: str) -> str:
    if target == "claude":
        return ("they run once `claude mcp add --scope local dmm -- /path/to/their/dmm mcp` "
                "(their local scope wins over .mcp.json).")
    if target == "codex":
        return ("they set `command = \"/path/to/their/dmm\"` under [mcp_servers.dmm] in their "
                "own ~/.codex/config.toml.")
    return "they declare the dmm server in their own ~/.cursor/mcp.json."


# An edit: (the file's text, its name) -> (the new text, what was done or kept)
Edit = Callable[[str, str], "tuple[str, str]"]


def _chain(*changes: Edit) -> Edit:
    """One edit made of several, one after the other, saying what each did."""
    def change(text: str, rel: str) -> tuple[str, str]:
        said = []
        for one in changes:
            text, detail = one(text, rel)
            said += [detail] if detail else []
        return text, "; ".join(said)
    return change


def _edit(root: Path, rel: str, change: Edit) -> Written:
    path = confined.real_path(root, rel)
    current = confined.read_text(path, rel)
    text, detail = change(current or "", rel)
    if text == (current or ""):
        return Written(rel, "kept" if detail else "unchanged", detail)
    confined.write_text(path, rel, text)
    return Written(rel, "updated" if current is not None else "created", detail)


# --- JSON settings ----------------------------------------------------------------------------

def _with_server(server: dict) -> Edit:
    def change(text: str, rel: str) -> tuple[str, str]:
        data = edits.load_json(text, rel)
        servers = data.get("mcpServers")
        if servers is None:
            return edits.add_member(text, (), "mcpServers", {"dmm": server}), \
                "added the dmm MCP server"
        if not isinstance(servers, dict):
            raise InvalidInputError(f"{rel}: mcpServers is not an object: fix the file by hand")
        if "dmm" in servers:
            return text, ("" if servers["dmm"] == server
                          else _kept("mcpServers.dmm", servers["dmm"]))
        return edits.add_member(text, ("mcpServers",), "dmm", server), \
            "added the dmm MCP server"
    return change


def _with_allowed(rules: tuple[str, ...]) -> Edit:
    """Claude Code's settings: ``permissions.allow`` holds ``rules`` (the user's own rules,
    and the order they wrote them in, kept)."""
    def change(text: str, rel: str) -> tuple[str, str]:
        data = edits.load_json(text, rel)
        permissions = data.get("permissions")
        if permissions is None:
            return edits.add_member(text, (), "permissions", {"allow": list(rules)}), \
                _allowed(rules)
        if not isinstance(permissions, dict):
            raise InvalidInputError(f"{rel}: permissions is not an object: fix the file by hand")
        allow = permissions.get("allow")
        if allow is None:
            return edits.add_member(text, ("permissions",), "allow", list(rules)), \
                _allowed(rules)
        if not isinstance(allow, list):
            raise InvalidInputError(f"{rel}: permissions.allow is not a list: fix the file by "
                                    "hand")
        missing = [r for r in rules if r not in allow]
        for rule in missing:
            text = edits.append_item(text, ("permissions", "allow"), rule)
        return text, (_allowed(tuple(missing)) if missing else "")
    return change


def _allowed(rules: tuple[str, ...]) -> str:
    return f"allowed the read-only tools: {', '.join(r.rsplit('__', 1)[1] for r in rules)}"


def _kept(key: str, entry: object) -> str:
    """What setup says of a server entry it leaves alone: the command it runs, in full. A
    committed entry is a teammate's (or a branch's) text, and the agent's client runs it, not
    the dmm found here: the person reads what that is."""
    from dmm.shellcmd import command as quoted

    if isinstance(entry, dict) and isinstance(entry.get("command"), str):
        args = entry.get("args") if isinstance(entry.get("args"), list) else []
        runs = quoted(entry["command"], *(str(a) for a in args))
    else:
        runs = f"no command dmm can read ({type(entry).__name__})"
    return f"kept the existing {key}, which runs {runs}: check it is dmm"


def _with_hooks(commands: dict[str, str]) -> Edit:
    return lambda text, rel: _hooks_added(text, rel, commands)


def _hooks_added(text: str, rel: str, commands: dict[str, str]) -> tuple[str, str]:
    data = edits.load_json(text, rel)
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InvalidInputError(f"{rel}: hooks is not an object: fix the file by hand")
    added, kept = [], []
    for event, command in commands.items():
        group = {"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]}
        if hooks is None:
            text = edits.add_member(text, (), "hooks", {event: [group]})
            hooks = {event: [group]}
        elif event not in hooks:
            text = edits.add_member(text, ("hooks",), event, [group])
        elif not isinstance(hooks[event], list):
            raise InvalidInputError(f"{rel}: hooks.{event} is not a list: fix the file by hand")
        elif not _has_dmm_hook(hooks[event], event):
            text = edits.append_item(text, ("hooks", event), group)
        else:  # a hook that mentions dmm's: kept, and what it runs is said unless it is ours
            kept += [f"kept the existing {event} hook, which runs {c!r}: check it is dmm"
                     for c in _dmm_hooks(hooks[event], event) if c != command]
            continue
        added.append(event)
    return text, "; ".join(([f"added hooks: {', '.join(added)}"] if added else []) + kept)


def _has_dmm_hook(groups: list, event: str) -> bool:
    """Whether a hook group already runs dmm's hook for ``event`` (this command or an older
    spelling of it)."""
    return bool(_dmm_hooks(groups, event))


def _dmm_hooks(groups: list, event: str) -> list[str]:
    """The commands of ``groups`` that mention dmm's hook for ``event``."""
    wanted = f"agent hook {'session-start' if event == 'SessionStart' else 'user-prompt-submit'}"
    return [str(h.get("command", "")) for g in groups
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"] if isinstance(h, dict) and wanted in str(h.get("command", ""))]


# --- Codex's TOML -----------------------------------------------------------------------------

def _with_codex_server(server: dict) -> Edit:
    return lambda text, rel: _codex_server_added(text, rel, server)


def _codex_server_added(text: str, rel: str, server: dict) -> tuple[str, str]:
    data = edits.load_toml(text, rel)
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise InvalidInputError(f"{rel}: mcp_servers is not a table: fix the file by hand")
    if "dmm" in servers:
        have = servers["dmm"]
        if not isinstance(have, dict) or {k: have.get(k) for k in server} != server:
            return text, _kept("mcp_servers.dmm", have)
        return text, ""
    from tomlkit.exceptions import TOMLKitError

    for way in (_codex_table_appended, _codex_table_edited):  # the user's bytes first
        try:
            out = way(text, server)
            if edits.load_toml(out, rel).get("mcp_servers", {}).get("dmm", {}).get(
                    "command") == server["command"]:
                break
        except (InvalidInputError, TOMLKitError):
            continue
    else:
        raise InvalidInputError(f"{rel}: dmm could not add its server without changing "
                                "what the file says", hint="add [mcp_servers.dmm] by hand")
    return out, "added the dmm MCP server"


def _codex_table_edited(text: str, server: dict) -> str:
    """tomlkit's edit: the server's table under the existing [mcp_servers] (comments kept)."""
    import tomlkit

    doc = tomlkit.parse(text)
    table = tomlkit.table()
    table.update({**server, "startup_timeout_sec": CODEX_STARTUP_S})
    tools = tomlkit.table(is_super_table=True)
    for name in READ_ONLY_TOOLS:
        tools[name] = {"approval_mode": "approve"}
    table["tools"] = tools
    if "mcp_servers" in doc:
        doc["mcp_servers"]["dmm"] = table
    else:
        outer = tomlkit.table(is_super_table=True)
        outer["dmm"] = table
        doc["mcp_servers"] = outer
    return tomlkit.dumps(doc)


def _codex_table_appended(text: str, server: dict) -> str:
    """A [mcp_servers.dmm] table at the end: every byte of the file stays where it is. (Not
    possible where mcp_servers is an inline table; tomlkit edits that one.)"""
    body = _codex_table_edited("", server)
    return text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + body


# --- markdown instructions --------------------------------------------------------------------

def _with_section(section: str, head: str = "") -> Edit:
    def change(text: str, rel: str) -> tuple[str, str]:
        base = text or head
        out = edits.put_section(base, section, MARKER, END_MARKER)
        return out, ("added the dmm section" if edits.find_section(text, MARKER, END_MARKER)
                     is None else "updated the dmm section" if out != text else "")
    return change
