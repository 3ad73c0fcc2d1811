"""Issue 26, the agent surfaces: `dmm agent setup` (links, FIFOs, other encodings, the user's
own bytes), the agent hooks, `dmm serve` and `dmm mcp` on hostile input, and idle or slow
clients. Each test fails on the code before the fix and passes after it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import git

BIN = str(Path(sys.executable).parent)


def setup(repo, agent: str) -> subprocess.CompletedProcess:
    return repo.dmm("agent", "setup", agent, "--json")


def refused(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 6, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "bug in dmm" not in proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


# --- item 7: links --------------------------------------------------------------------------

@pytest.mark.parametrize("agent, rel", [("claude", ".mcp.json"), ("claude", "CLAUDE.md"),
                                        ("codex", "AGENTS.md"), ("codex", ".codex/config.toml"),
                                        ("cursor", ".cursor/mcp.json")])
def test_setup_never_reads_or_writes_a_file_linked_outside_the_repository(store, tmp_path,
                                                                          agent, rel):
    outside = tmp_path / "outside" / "secrets.txt"
    outside.parent.mkdir()
    secret = '{"token": "s3cr3t"}\n' if rel.endswith(".json") else "s3cr3t = 1\n"
    outside.write_text(secret)
    link = store.root / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    proc = setup(store, agent)
    refused(proc, rel, "outside the repository")
    assert link.is_symlink() and outside.read_text() == secret


@pytest.mark.parametrize("agent, folder, inside", [
    ("claude", ".claude", "settings.json"), ("cursor", ".cursor/rules", "dmm.mdc"),
    ("codex", ".codex", "config.toml")])
def test_setup_never_writes_through_a_folder_linked_outside(store, tmp_path, agent, folder,
                                                            inside):
    outside = tmp_path / "home-settings"
    outside.mkdir()
    link = store.root / folder
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    proc = setup(store, agent)
    refused(proc, "outside the repository")
    assert list(outside.iterdir()) == []


def test_a_claude_md_linked_to_agents_md_is_written_through_and_stays_a_link(store):
    (store.root / "AGENTS.md").write_text("# Agents\n\nRun make test.\n")
    (store.root / "CLAUDE.md").symlink_to("AGENTS.md")
    assert setup(store, "claude").returncode == 0
    assert (store.root / "CLAUDE.md").is_symlink()
    agents = (store.root / "AGENTS.md").read_text()
    assert agents.startswith("# Agents\n\nRun make test.\n") and ".dmm/BOOT.md" in agents
    assert setup(store, "codex").returncode == 0  # the same section: not added twice
    assert (store.root / "AGENTS.md").read_text().count("## Memory (dmm)") == 1


def test_a_link_into_git_is_refused(store):
    (store.root / "CLAUDE.md").symlink_to(".git/hooks/post-commit")
    refused(setup(store, "claude"), "CLAUDE.md", ".git")
    assert not (store.root / ".git" / "hooks" / "post-commit").exists()


# --- item 8: parsed, not searched --------------------------------------------------------------

@pytest.mark.parametrize("existing", [
    '[mcp_servers]\ndmm = { command = "dmm", args = ["mcp"] }\n',
    '# our servers\nmcp_servers.dmm.command = "dmm"\nmcp_servers.dmm.args = ["mcp"]\n',
    '[mcp_servers.dmm]\ncommand = "dmm"\nargs = ["mcp"]\n',
])
def test_codex_setup_reads_a_server_already_declared_any_way(store, existing):
    path = store.root / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(existing)
    proc = setup(store, "codex")
    assert proc.returncode == 0, proc.stderr
    text = path.read_text()
    tomllib.loads(text)  # still valid TOML: Codex starts
    assert tomllib.loads(text)["mcp_servers"]["dmm"]["command"] == "dmm"


@pytest.mark.parametrize("existing", [
    '# [mcp_servers.dmm] is what dmm would add\nmodel = "o3"  # the team\'s model\n',
    'model = "o3"\nnotes = """\n[mcp_servers.dmm]\n"""\n',
    'mcp_servers.db.command = "pgmcp"\n# keep this comment\n',
])
def test_codex_setup_adds_its_server_where_a_marker_is_only_text(store, existing):
    path = store.root / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(existing)
    proc = setup(store, "codex")
    assert proc.returncode == 0, proc.stderr
    text = path.read_text()
    assert text.startswith(existing)  # comments and layout kept
    data = tomllib.loads(text)
    assert data["mcp_servers"]["dmm"]["command"] == str(Path(BIN) / "dmm")  # the dmm found
    assert {k: v for k, v in data.items() if k != "mcp_servers"} == \
        {k: v for k, v in tomllib.loads(existing).items() if k != "mcp_servers"}


def test_codex_setup_refuses_invalid_toml(store):
    path = store.root / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text("[mcp_servers.dmm]\ncommand = 'x'\n[mcp_servers.dmm]\n")
    refused(setup(store, "codex"), "not valid TOML")


@pytest.mark.parametrize("text", [
    "# Notes\n\n```markdown\n<!-- dmm: agent memory -->\n```\n",
    "# Notes\n\nThe marker `<!-- dmm: agent memory -->` starts dmm's section.\n",
    "# Notes\n\n    <!-- dmm: agent memory -->\n",
])
def test_a_marker_in_code_or_text_is_not_a_section(store, text):
    (store.root / "AGENTS.md").write_text(text)
    assert setup(store, "codex").returncode == 0
    out = (store.root / "AGENTS.md").read_text()
    assert out.startswith(text) and "## Memory (dmm)" in out


# --- item 13: FIFOs and other encodings ---------------------------------------------------------

def test_setup_never_waits_on_a_fifo(store):
    os.mkfifo(store.root / ".mcp.json")
    proc = subprocess.run([sys.executable, "-m", "dmm", "agent", "setup", "claude"],
                          cwd=store.root, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 6 and "not a regular file" in proc.stderr, proc.stderr


@pytest.mark.parametrize("agent, rel", [("claude", "CLAUDE.md"), ("codex", "AGENTS.md")])
def test_a_non_utf8_instructions_file_is_a_clear_error(store, agent, rel):
    original = "# Notes\n\nCaf\xe9 au lait.\n".encode("latin-1")
    (store.root / rel).write_bytes(original)
    refused(setup(store, agent), rel, "not UTF-8")
    assert (store.root / rel).read_bytes() == original


# --- low: the user's JSON, byte for byte ---------------------------------------------------------

def test_setup_keeps_the_users_json_bytes_and_only_adds(store):
    original = ('{\n    "name": "caf\\u00e9",\n    "ratio": 1.10,\n    "big": 1e300,\n'
                '    "mcpServers": {\n        "db": {"command": "pgmcp"}\n    }\n}\n')
    (store.root / ".mcp.json").write_text(original)
    assert setup(store, "claude").returncode == 0
    text = (store.root / ".mcp.json").read_text()
    assert text.startswith(original[:original.index("}\n    }")])
    assert '"ratio": 1.10' in text and "\\u00e9" in text and "1e300" in text
    assert '\n        "dmm": {' in text  # the file's own indentation
    data = json.loads(text)
    assert data["mcpServers"]["dmm"]["args"] == ["mcp"] and data["big"] == 1e300


@pytest.mark.parametrize("text, words", [
    ('{"mcpServers": {}, "mcpServers": {"db": {}}}', "appears twice"),
    ('{"limit": 1e400}', "too large"),
    ('{"limit": NaN}', "NaN"),
    ('{"n": ' + "9" * 5000 + "}", "too long"),
    ("[" * 100_000 + "]" * 100_000, ".mcp.json"),
])
def test_json_that_setup_cannot_keep_is_refused_with_a_reason(store, text, words):
    (store.root / ".mcp.json").write_text(text)
    proc = setup(store, "claude")
    refused(proc, words)
    assert (store.root / ".mcp.json").read_text() == text


def test_a_read_only_settings_file_is_not_rewritten(store):
    path = store.root / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"permissions": {}}\n')
    path.chmod(0o444)
    refused(setup(store, "claude"), "read-only")
    assert path.read_text() == '{"permissions": {}}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


# --- low: the agent hook command never runs a dmm from the repository --------------------------

def test_the_agent_hook_never_runs_a_dmm_committed_in_the_repository(store, tmp_path):
    assert setup(store, "claude").returncode == 0
    settings = json.loads((store.root / ".claude" / "settings.json").read_text())
    # a teammate's: the dmm setup named is not on their machine, so PATH is looked up
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"].replace(
        str(Path(BIN) / "dmm"), "/nowhere/bin/dmm")
    ran = tmp_path / "hostile-ran"
    hostile = store.root / "dmm"
    hostile.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hostile.chmod(0o755)
    (store.root / "bin").mkdir()
    (store.root / "bin" / "dmm").symlink_to("../dmm")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "a branch brings a dmm")
    payload = json.dumps({"prompt": "upload size ceiling of the gateway"})
    real = os.environ["PATH"]
    for path in (f".{os.pathsep}{BIN}{os.pathsep}{real}",
                 f"bin{os.pathsep}{BIN}{os.pathsep}{real}",
                 f"{store.root / 'bin'}{os.pathsep}{BIN}{os.pathsep}{real}"):
        out = subprocess.run(["sh", "-c", command], cwd=store.root, input=payload,
                             capture_output=True, text=True, env={**os.environ, "PATH": path},
                             timeout=60)
        assert out.returncode == 0 and not ran.exists(), path
        assert out.stdout.startswith("(dmm: no memory pack"), out.stdout
    out = subprocess.run(["sh", "-c", command], cwd=store.root, input=payload,
                         capture_output=True, text=True,
                         env={**os.environ, "PATH": f"{BIN}{os.pathsep}{real}"}, timeout=60)
    assert "Upload size ceiling" in out.stdout and not ran.exists()


# --- item 9: what no id, path or text can hold is a 400 / a tool error, never a 500 ------------

LONG = "a" * 300
HOSTILE_REQUESTS = [
    ("GET", "/memories/mem%00x", None), ("GET", "/usage/memory/a%00b", None),
    ("GET", "/conflicts/memory/a%00b", None), ("GET", f"/memories/project/{LONG}.md", None),
    ("GET", f"/usage/memory/project/{LONG}.md", None),
    ("GET", f"/conflicts/memory/project/{LONG}.md", None),
    ("GET", "/memories?path_prefix=a%00b", None),
    ("GET", "/usage/queries?after=not-a-date", None),
    ("POST", "/write/propose", b'{"type": "create", "path": "project/a\\u0000b.md", '
                               b'"reason": "r", "content": "x"}'),
    ("POST", "/write/propose", ('{"type": "create", "path": "project/%s.md", "reason": "r", '
                                '"content": "x"}' % LONG).encode()),
    ("POST", "/write/propose", b'{"type": "create", "path": "project/x.md", '
                               b'"reason": "r\\ud800", "content": "x"}'),
    ("POST", "/write/propose", b'{"type": "create", "path": "project/\\ud800.md", '
                               b'"reason": "r", "content": "x"}'),
    ("POST", "/query", b'{"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    ("POST", "/conflicts/scan", b'{"since": "a\\u0000b"}'),
    ("POST", "/conflicts/check", b'{"memory_ids": ["a\\u0000b"]}'),
]


def test_hostile_ids_paths_and_bodies_get_a_clean_400(store):
    from tests.agents.server import Server

    with Server(store.root) as server:
        for method, path, raw in HOSTILE_REQUESTS:
            status, data = server.request(method, path, raw=raw)
            assert status == 400, (path, raw and raw[:80], status, data)
            assert "internal error" not in data["error"] and data["exit_code"] == 6
        assert server.get("/health")[0] == 200  # still serving


def test_mcp_tools_refuse_hostile_ids_as_tool_errors(store):
    from tests.agents.test_mcp import session

    async def calls(client):
        out = []
        for name, args in [("memory_show", {"memory": "mem\x00x"}),
                           ("memory_show", {"memory": f"project/{LONG}.md"}),
                           ("memory_propose", {"type": "create", "path": "project/a\x00b.md",
                                               "reason": "r", "content": "x"}),
                           ("memory_propose", {"type": "create", "path": f"project/{LONG}.md",
                                               "reason": "r", "content": "x"})]:
            result = await client.call_tool(name, args)
            out.append((name, result.is_error, result.content[0].text))
        return out

    for name, is_error, text in session(store, calls):
        assert is_error and "internal error" not in text, (name, text)
        assert "NUL" in text or "255" in text, text


# --- low: the server's access rules ------------------------------------------------------------

def test_bearer_is_case_insensitive_and_a_whitespace_secret_is_refused(store):
    from tests.agents.server import Server

    secret = "x" * 24
    with Server(store.root, "--token", f"alice={secret}") as server:
        for scheme in ("Bearer", "bearer", "BEARER"):
            status, _ = server.get("/health", headers={"Authorization": f"{scheme} {secret}"})
            assert status == 200, scheme
        assert server.get("/health", headers={"Authorization": f"Basic {secret}"})[0] == 401
    proc = store.dmm("serve", "--port", "0", "--token", "alice=" + " " * 20)
    assert proc.returncode == 6 and "whitespace" in proc.stderr, proc.stderr


def test_an_ipv4_mapped_loopback_address_is_loopback(store):
    from tests.agents.server import Server

    with Server(store.root, "--host", "::ffff:127.0.0.1") as server:
        assert server.get("/health")[0] == 200
        assert server.get("/health", headers={"Host": "evil.example"})[0] == 403


def test_flagging_the_same_pair_twice_commits_once(store):
    from tests.conflicts.test_resolution import NODE18, OLD_LIMIT

    head = git(store.root, "rev-parse", "HEAD")
    first = store.dmm("conflicts", "flag", "--memories", f"{OLD_LIMIT},{NODE18}",
                      "--description", "odd pair", "--json")
    assert first.returncode == 0 and json.loads(first.stdout)["created"], first.stderr
    after_first = git(store.root, "rev-parse", "HEAD")
    assert after_first != head
    from tests.agents.test_mcp import session

    async def calls(client):
        return [await client.call_tool("conflict_flag", {
            "memories": [NODE18, OLD_LIMIT], "description": "odd pair again"})
            for _ in range(2)]

    for result in session(store, calls):
        assert not result.is_error
        assert json.loads(result.content[0].text)["created"] is False
    assert git(store.root, "rev-parse", "HEAD") == after_first


# --- item 10: idle and slow clients --------------------------------------------------------------

@pytest.mark.slow
def test_idle_and_slow_connections_never_deny_service(store):
    """257 idle sockets and 100 clients trickling a header line every 2 s (bounded, loopback
    only): a working client is answered meanwhile, and the server closes every one of them
    once the request head's deadline has passed."""
    import socket
    import time

    from dmm.agents.http_server import HEADER_TIMEOUT
    from tests.agents.server import Server

    with Server(store.root) as server:
        host = server.host.strip("[]")
        idle = [socket.create_connection((host, server.port), timeout=5) for _ in range(257)]
        slow = [socket.create_connection((host, server.port), timeout=5) for _ in range(100)]
        for s in slow:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        began = time.monotonic()
        statuses = []
        for n in range(3):
            for s in slow:
                try:
                    s.sendall(f"X-Slow-{n}: a\r\n".encode())
                except OSError:
                    pass
            statuses.append(server.get("/health")[0])
            time.sleep(2)
        assert statuses == [200, 200, 200]
        deadline = began + HEADER_TIMEOUT + 20
        for s in idle + slow:
            s.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                assert s.recv(1024) in (b"",)  # closed by the server, nothing answered
            except ConnectionResetError:
                pass
            s.close()
        assert server.get("/health")[0] == 200


# --- item 11: the prompt hook never waits for another dmm ---------------------------------------

def _hook(root: Path, prompt: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess,
                                                                     float]:
    import time

    began = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "dmm", "agent", "hook", "user-prompt-submit"],
                         cwd=root, input=json.dumps({"prompt": prompt}), capture_output=True,
                         text=True, timeout=60, env={**os.environ, **(env or {})})
    return out, time.monotonic() - began


def test_the_hook_reads_the_cache_as_it_is_while_another_dmm_holds_the_write_lock(store):
    import fcntl

    from tests.conftest import memory_text

    assert store.dmm("reindex").returncode == 0
    # a change the cache has not seen, so the hook would want to refresh it
    store.write("project/new_limit.md", memory_text("mem_2026_11_01_001", "Gateway timeout",
                                                    "The gateway times out after 30 s."))
    lock = store.ws.state_dir / "cache.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what a running reindex or scan holds
        out, took = _hook(store.root, "upload size ceiling of the gateway",
                          {"DMM_HOOK_DEADLINE_MS": "0"})  # no watchdog: the hook itself
        assert out.returncode == 0 and took < 15, (took, out.stderr)
        assert "Upload size ceiling" in out.stdout, out.stdout
        assert "another dmm is updating the cache" in out.stdout
    finally:
        os.close(fd)
    fresh, _ = _hook(store.root, "gateway timeout")
    assert "Gateway timeout" in fresh.stdout  # refreshed once the lock is free


def test_the_hook_says_why_in_one_line_behind_an_exclusive_sqlite_lock(store):
    import sqlite3

    assert store.dmm("reindex").returncode == 0
    holder = sqlite3.connect(store.ws.state_dir / "cache.sqlite3",
                             isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        out, took = _hook(store.root, "upload size ceiling of the gateway",
                          {"DMM_HOOK_DEADLINE_MS": "0"})
        assert out.returncode == 0 and took < 15, (took, out.stderr)
        assert out.stdout.startswith("(dmm: no memory pack this time: another dmm holds")
        assert len(out.stdout.strip().splitlines()) == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_the_hook_answers_within_its_deadline_whatever_it_waits_on(store):
    import time

    began = time.monotonic()
    # stdin never closes: the hook waits for its input, the deadline answers
    proc = subprocess.Popen([sys.executable, "-m", "dmm", "agent", "hook",
                             "user-prompt-submit"], cwd=store.root, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "DMM_HOOK_DEADLINE_MS": "500"})
    try:
        proc.wait(timeout=30)  # stdin stays open
        out = proc.stdout.read()
    finally:
        proc.kill()
        proc.stdin.close()
    assert proc.returncode == 0 and time.monotonic() - began < 20
    assert out.startswith("(dmm: no memory pack this time: not ready within 0.5 s)")
