"""`dmm agent setup` and `dmm agent hook`: files merged with what a team already has, and the
hook commands run exactly as the settings files say, with the JSON an agent sends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dmm.agents.mcp_tools import TOOLS

BIN = str(Path(sys.executable).parent)


def _run_hook(command: str, root: Path, payload: dict | str) -> subprocess.CompletedProcess:
    """Run a hook command as an agent does: a shell in the project, JSON on stdin."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(command, shell=True, cwd=root, input=text, capture_output=True,
                          text=True, env={**os.environ, "PATH": f"{BIN}{os.pathsep}"
                                                                f"{os.environ['PATH']}"},
                          timeout=60)


def test_claude_setup_merges_and_its_hooks_run_as_written(store):
    root = store.root
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                                                   "command": "echo team-hook"}]}]}}))
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "pgmcp"}}}))
    (root / "CLAUDE.md").write_text("# Team notes\n\nUse pnpm.\n")
    proc = store.dmm("agent", "setup", "claude", "--json")
    assert proc.returncode == 0, proc.stderr
    actions = {f["path"]: f["action"] for f in json.loads(proc.stdout)["files"]}
    assert {k: v for k, v in actions.items() if k != ".claude/settings.local.json"} == {
        ".mcp.json": "updated", ".claude/settings.json": "updated", "CLAUDE.md": "updated"}
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    # the team's rule kept, first; the read-only tools allowed, as their definitions say
    read_only = [f"mcp__dmm__{t['name']}" for t in TOOLS if t["annotations"]["readOnlyHint"]]
    assert settings["permissions"] == {"allow": ["Bash(npm test)", *read_only]}
    assert "mcp__dmm__memory_query" in read_only and not any(
        w in " ".join(read_only) for w in ("propose", "revise", "withdraw", "flag"))
    prompt_hooks = [h["command"] for g in settings["hooks"]["UserPromptSubmit"]
                    for h in g["hooks"]]
    assert prompt_hooks[0] == "echo team-hook" and len(prompt_hooks) == 2
    servers = json.loads((root / ".mcp.json").read_text())["mcpServers"]
    assert servers["db"] == {"command": "pgmcp"} and servers["dmm"]["args"] == ["mcp"]
    claude_md = (root / "CLAUDE.md").read_text()
    assert claude_md.startswith("# Team notes\n\nUse pnpm.\n") and ".dmm/BOOT.md" in claude_md
    again = json.loads(store.dmm("agent", "setup", "claude", "--json").stdout)
    assert {f["action"] for f in again["files"]} == {"unchanged"}

    command = prompt_hooks[1]
    out = _run_hook(command, root, {"session_id": "s1", "hook_event_name": "UserPromptSubmit",
                                    "cwd": str(root), "prompt": "what is the upload size "
                                                                "ceiling of the gateway?"})
    assert out.returncode == 0, out.stderr
    assert "Upload size ceiling" in out.stdout and len(out.stdout) <= 9500
    start = [h["command"] for g in settings["hooks"]["SessionStart"] for h in g["hooks"]][0]
    first = _run_hook(start, root, {"hook_event_name": "SessionStart", "source": "startup"})
    assert first.returncode == 0 and first.stdout == ""  # this store has no baseline memory


def test_claude_setup_adds_only_the_allowed_tools_missing_and_keeps_the_users_bytes(store):
    settings = store.root / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = ('{\n    "permissions": {\n        "allow": ["mcp__dmm__memory_show",'
            ' "Bash(make test)"],\n        "deny": ["Read(.env)"]\n    }\n}\n')
    settings.write_text(mine)
    assert store.dmm("agent", "setup", "claude").returncode == 0
    text = settings.read_text()
    assert text.startswith('{\n    "permissions": {\n        "allow": ["mcp__dmm__memory_show",'
                           ' "Bash(make test)",')
    allow = json.loads(text)["permissions"]["allow"]
    assert allow.count("mcp__dmm__memory_show") == 1 and "mcp__dmm__memory_query" in allow
    assert json.loads(text)["permissions"]["deny"] == ["Read(.env)"]
    settings.write_text('{"permissions": {"allow": "everything"}}')
    refused = store.dmm("agent", "setup", "claude")
    assert refused.returncode != 0 and "permissions.allow is not a list" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_failing_hook_never_blocks_the_agent(store, tmp_path):
    command = "dmm agent hook user-prompt-submit"
    for cwd, payload in ((tmp_path, {"prompt": "gateway", "cwd": str(tmp_path)}),
                         (store.root, "not json at all"), (store.root, {})):
        out = _run_hook(command, cwd, payload)
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stdout + out.stderr
    broken = _run_hook(command, tmp_path, {"prompt": "gateway", "cwd": str(tmp_path)})
    assert broken.stdout.startswith("(dmm: no memory pack this time:")
    assert len(broken.stdout.strip().splitlines()) == 1


def test_a_long_pack_is_cut_to_what_the_agent_accepts(store):
    config = store.root / ".dmm" / "config.toml"
    config.write_text(config.read_text().replace("hook_max_chars = 9500",
                                                 "hook_max_chars = 400"))
    out = _run_hook("dmm agent hook user-prompt-submit", store.root,
                    {"prompt": "upload size ceiling of the gateway"})
    assert out.returncode == 0 and len(out.stdout) <= 400
    assert "cut to fit" in out.stdout


@pytest.mark.parametrize("agent, files", [
    ("codex", {".codex/config.toml": "[mcp_servers.dmm]", "AGENTS.md": ".dmm/BOOT.md"}),
    ("cursor", {".cursor/mcp.json": '"dmm"', ".cursor/rules/dmm.mdc": "alwaysApply: true"}),
])
def test_codex_and_cursor_setup(store, agent, files):
    (store.root / "AGENTS.md").write_text("# Agents\n\nRun make test.\n")
    proc = store.dmm("agent", "setup", agent)
    assert proc.returncode == 0, proc.stderr
    for rel, needle in files.items():
        assert needle in (store.root / rel).read_text(), rel
    if agent == "codex":
        import tomllib

        table = tomllib.loads((store.root / ".codex" / "config.toml").read_text())
        server = table["mcp_servers"]["dmm"]
        # a teammate without dmm still gets Codex: the server is not `required`
        assert server["command"].endswith("dmm") and server["args"] == ["mcp"]
        assert "required" not in server
        assert server["tools"]["memory_query"] == {"approval_mode": "approve"}
        assert "memory_propose" not in server["tools"]  # a write still asks
        hooks = json.loads((store.root / ".codex" / "hooks.json").read_text())["hooks"]
        assert set(hooks) == {"SessionStart", "UserPromptSubmit"}
        assert (store.root / "AGENTS.md").read_text().startswith("# Agents\n\nRun make test.")
    assert "unchanged" in store.dmm("agent", "setup", agent).stdout


def test_generic_writes_nothing_and_a_broken_settings_file_is_never_overwritten(store):
    before = sorted(p.name for p in store.root.iterdir())
    proc = store.dmm("agent", "setup", "generic")
    assert proc.returncode == 0 and "dmm mcp" in proc.stderr
    assert sorted(p.name for p in store.root.iterdir()) == before
    (store.root / ".mcp.json").write_text("{not json")
    proc = store.dmm("agent", "setup", "claude")
    assert proc.returncode != 0 and "will not overwrite" in proc.stderr
    assert (store.root / ".mcp.json").read_text() == "{not json"


def test_the_hook_never_imports_the_server_libraries(store):
    from tests.agents.test_mcp import server_libraries_imported

    assert server_libraries_imported(["agent", "hook", "user-prompt-submit"], store.root,
                                     json.dumps({"prompt": "gateway ceiling"})) == []
