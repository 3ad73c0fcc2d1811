"""The real Claude Code and Codex CLIs (from the npm registry) drive a whole session against a
repository set up by `dmm agent setup`, their model replaced by a scripted stand-in on
127.0.0.1 (tests/agents/standin.py): what the clients parse, inject and execute is real.

Each session queries, checks, proposes and flags through dmm's MCP tools, tries a decision
from the agent's own shell (refused: only people decide), and receives the hooks' packs. The
tests skip when the clients are not installed (CI installs only the Python project): set
DMM_AGENT_CLIENTS to the folder holding `claude` and `codex` (default: /work/clients/
node_modules/.bin). DMM_TRANSCRIPTS names a folder to keep each session's transcript in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agents.standin import StandIn
from tests.conflicts.test_resolution import NEW_LIMIT, NODE18, OLD_LIMIT
from tests.conftest import git

CLIENTS = Path(os.environ.get("DMM_AGENT_CLIENTS", "/work/clients/node_modules/.bin"))
BIN = Path(sys.executable).parent
DRAFT = ("---\ntags: [uploads, limits]\npriority: 0.6\nconfidence: active\n---\n\n# Uploads "
         "above the ceiling are answered with 413\n\nThe public gateway answers an upload above "
         "its size ceiling with status 413 and a problem document naming the ceiling. Why: "
         "clients retry other errors, and a retried oversized upload only wastes bandwidth.\n")
DECIDE = (f"{BIN}/dmm review approve $(git for-each-ref --format='%(refname:lstrip=4)' "
          "refs/heads/dmm/proposals | head -1) --reason looks-fine")


def client(name: str) -> Path:
    path = CLIENTS / name
    if not path.exists() and shutil.which(name) is None:
        pytest.skip(f"{name} is not installed (set DMM_AGENT_CLIENTS)")
    return path if path.exists() else Path(shutil.which(name))


def script(shell_tool: str, shell_input: dict) -> list[dict]:
    """query, check, check a draft, propose, flag, try to decide, answer."""
    return [
        {"tool": "memory_query", "input": {"task": "raise the upload size ceiling of the gateway"}},
        {"tool": "conflicts_check", "input": {"memories": [OLD_LIMIT, "project/limit_new.md"]}},
        {"tool": "conflicts_check_content", "input": {"content": DRAFT}},
        {"tool": "memory_propose", "input": {"type": "create", "path": "project/uploads_413.md",
                                             "reason": "learned while raising the ceiling",
                                             "content": DRAFT}},
        {"tool": "conflict_flag", "input": {"memories": [NEW_LIMIT, NODE18],
                                            "description": "the ceiling note and the Node "
                                                           "note name different owners"}},
        {"tool": shell_tool, "input": shell_input},
        {"text": "The ceiling is 50,000,000 bytes now; the 8 MB memory is older and in "
                 "conflict with it. I proposed the 413 rule and flagged a doubt; approving is "
                 "yours to do."},
    ]


def keep(name: str, standin: StandIn, proc: subprocess.CompletedProcess) -> None:
    folder = os.environ.get("DMM_TRANSCRIPTS")
    if not folder:
        return
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# {name}: a session driven by the stand-in model", "",
             f"exit code {proc.returncode}", "", "## What the client printed", "",
             proc.stdout[-6000:], "", "## Tool results the client sent back to the model", ""]
    for n, result in enumerate(standin.tool_results(), 1):
        lines += [f"### {n}", "", result[:3000], ""]
    lines += ["## What the hooks injected (the client's own messages to the model)", ""]
    for text in injected(standin):
        lines += [text[:3000], ""]
    (out / f"{name}.md").write_text("\n".join(lines), encoding="utf-8")
    (out / f"{name}.requests.json").write_text(json.dumps(standin.requests, indent=1))


def injected(standin: StandIn) -> list[str]:
    """Texts that carry dmm's hook output, as the model received them."""
    found = []
    for body in standin.requests[-1:]:
        for message in body.get("messages", []) + (body.get("input") or []):
            content = message.get("content") if isinstance(message, dict) else None
            blocks = content if isinstance(content, list) else [{"text": content}]
            for block in blocks:
                text = block.get("text") if isinstance(block, dict) else None
                if isinstance(text, str) and text.find("dmm: ") >= 0:
                    found.append(text[text.find("dmm: "):])
    return found


def check_session(store, standin: StandIn, proc: subprocess.CompletedProcess, agent: str):
    results = standin.tool_results()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(results) >= 6, (results, proc.stdout[-2000:], proc.stderr[-2000:])
    joined = "\n".join(results)
    assert "Upload size ceiling" in results[0]  # memory_query
    assert "has_conflicts" in results[1] and "true" in results[1]  # conflicts_check
    assert "potential_conflicts" in results[2]
    assert "prop_" in results[3]  # memory_propose
    assert "conflict_" in results[4]  # conflict_flag
    assert "a person's decision" in results[5]  # the decision from its shell: refused
    branches = git(store.root, "for-each-ref", "--format=%(refname)", "refs/heads/dmm/proposals")
    assert len(branches.split()) == 1, branches  # proposed, not approved
    tip = branches.split()[0]
    assert f"Dmm-Proposed-By: agent:{agent}" in git(store.root, "log", "-1", "--format=%B", tip)
    assert not (store.memory / "project" / "uploads_413.md").exists()
    assert "flag conflict" in git(store.root, "log", "--format=%s")
    packs = injected(standin)
    assert any("Upload size ceiling" in p for p in packs), packs
    assert "internal error" not in joined


def claude_session(store, tmp_path, steps: list[dict], *allowed: str, approved: bool = True
                   ) -> tuple[StandIn, subprocess.CompletedProcess]:
    """`claude -p` in ``store`` set up by `dmm agent setup claude` (and its server approved
    as a person would, unless not ``approved``), driven by ``steps``; ``allowed``: what the
    command line allows besides."""
    claude = client("claude")
    home = tmp_path / "home"
    home.mkdir()
    path = f"{BIN}{os.pathsep}/usr/bin:/bin"
    env = {**os.environ, "HOME": str(home), "PATH": path}
    assert subprocess.run([str(BIN / "dmm"), "agent", "setup", "claude"], cwd=store.root,
                          env=env, capture_output=True).returncode == 0
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "dmm agent setup claude")
    # what a person's approvals leave: the folder trusted, the project's MCP server approved
    (home / ".claude.json").write_text(json.dumps({"projects": {str(store.root): {
        "hasTrustDialogAccepted": True}}}))
    if approved:
        (store.root / ".claude" / "settings.local.json").write_text(json.dumps(
            {"enabledMcpjsonServers": ["dmm"]}))
    with StandIn(steps) as standin:
        proc = subprocess.run(
            [str(claude), "-p", "Raise the upload size ceiling of the gateway to 100 MB",
             *(["--allowedTools", *allowed] if allowed else [])],
            cwd=store.root, capture_output=True, text=True, timeout=240,
            stdin=subprocess.DEVNULL,
            env={**env, "ANTHROPIC_BASE_URL": standin.url, "ANTHROPIC_API_KEY": "sk-standin",
                 "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
    return standin, proc


def test_claude_code_uses_dmm_end_to_end(store, tmp_path):
    store.add("baseline/identity.md", "mem_2026_11_04_001", "This is the shop's upload gateway",
              "This repository holds the shop's public upload gateway and its limits.",
              scope="baseline", tags="[identity]")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "baseline")
    standin, proc = claude_session(
        store, tmp_path, script("Bash", {"command": DECIDE, "description": "approve it"}),
        "mcp__dmm", "Bash")
    keep("claude-code-session", standin, proc)
    check_session(store, standin, proc, "claude-code")
    assert any("shop's public upload gateway" in p for p in injected(standin))  # SessionStart
    # the model's first turn already had dmm's tools (issue 36, item 1)
    first = next(r for r in standin.requests if r.get("tools"))
    assert any(t.get("name", "").startswith("mcp__dmm__") for t in first["tools"])


def test_headless_claude_runs_the_read_only_tools_setup_allowed(store, tmp_path):
    """`claude -p` cannot ask: what setup allowed runs, a write is still the client's to ask
    about (and so refused here)."""
    standin, proc = claude_session(store, tmp_path, [
        {"tool": "memory_query", "input": {"task": "the upload size ceiling of the gateway"}},
        {"tool": "conflicts_check", "input": {"memories": [OLD_LIMIT]}},
        {"tool": "conflict_flag", "input": {"memories": [NEW_LIMIT, NODE18],
                                            "description": "a doubt"}},
        {"text": "done"}])
    results = standin.tool_results()
    assert proc.returncode == 0 and len(results) == 3, (results, proc.stderr[-2000:])
    assert "Upload size ceiling" in results[0] and "has_conflicts" in results[1]
    assert "permission" in results[2]  # a write: not allowed by setup
    assert "flag conflict" not in git(store.root, "log", "--format=%s")


def test_claude_p_starts_a_project_server_still_pending_approval(store, tmp_path):
    """What docs/agents.md warns of: `.mcp.json` runs before anyone approves it."""
    standin, proc = claude_session(store, tmp_path, [
        {"tool": "memory_query", "input": {"task": "the upload size ceiling of the gateway"}},
        {"text": "done"}], approved=False)
    results = standin.tool_results()
    assert proc.returncode == 0 and results and "Upload size ceiling" in results[0], results


def test_codex_uses_dmm_end_to_end(store, tmp_path):
    codex = client("codex")
    home = tmp_path / "codex-home"
    home.mkdir()
    path = f"{BIN}{os.pathsep}/usr/bin:/bin"
    env = {**os.environ, "PATH": path, "CODEX_HOME": str(home)}
    assert subprocess.run([str(BIN / "dmm"), "agent", "setup", "codex"], cwd=store.root,
                          env=env, capture_output=True).returncode == 0
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "dmm agent setup codex")
    # the project trusted (Codex reads .codex/config.toml only then)
    (home / "config.toml").write_text(f'[projects."{store.root}"]\ntrust_level = "trusted"\n')
    shell = {"cmd": DECIDE, "tty": False}
    with StandIn(script("exec_command", shell)) as standin:
        provider = (f'model_providers.standin={{name="standin", base_url="{standin.url}/v1", '
                    'wire_api="responses", env_key="OPENAI_API_KEY"}')
        proc = subprocess.run(
            [str(codex), "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
             "-m", "standin", "-c", "model_provider=standin", "-c", provider,
             # no approval for the writes: `codex exec` does not ask before them
             # (docs/agents.md says so)
             "Raise the upload size ceiling of the gateway to 100 MB"],
            cwd=store.root, capture_output=True, text=True, timeout=240,
            stdin=subprocess.DEVNULL,
            env={**env, "OPENAI_API_KEY": "sk-standin"})
        keep("codex-session", standin, proc)
    check_session(store, standin, proc, "codex-mcp-client")
    # Codex strips a schema's ranges: the model reads them in the descriptions
    tools = next(t for r in standin.requests for t in r.get("tools") or []
                 if t.get("name") == "mcp__dmm")["tools"]
    query = next(t for t in tools if t["name"] == "memory_query")["parameters"]["properties"]
    assert "maximum" not in query["budget"] and "20,000" in query["budget"]["description"]


def test_the_clients_list_the_server_setup_wrote(store, tmp_path):
    claude, codex = client("claude"), client("codex")
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home / ".codex"),
           "PATH": f"{BIN}{os.pathsep}/usr/bin:/bin"}
    for agent in ("claude", "codex"):
        subprocess.run([str(BIN / "dmm"), "agent", "setup", agent], cwd=store.root, env=env,
                       capture_output=True, check=True)
    (home / ".codex" / "config.toml").write_text(
        f'[projects."{store.root}"]\ntrust_level = "trusted"\n')
    listed = subprocess.run([str(codex), "mcp", "list", "--json"], cwd=store.root, env=env,
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "dmm" in listed.stdout and "mcp" in listed.stdout
    (home / ".claude.json").write_text(json.dumps({"projects": {str(store.root): {
        "hasTrustDialogAccepted": True, "enabledMcpjsonServers": ["dmm"]}}}))
    claude_list = subprocess.run([str(claude), "mcp", "list"], cwd=store.root, env=env,
                                 capture_output=True, text=True, timeout=90)
    assert "dmm" in claude_list.stdout, claude_list.stdout + claude_list.stderr
