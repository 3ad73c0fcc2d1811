"""One copy of the model per repository (issue 36): `dmm mcp` loaded its own (200-336 MB)
while the hooks of the same session started the repository's background process (157-288 MB).
A server now asks the background process for its packs and never loads the model itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import git
from tests.semantic.conftest import cache_built, daemon_pid
from tests.semantic.test_background import TASK, _store

pytestmark = pytest.mark.slow


class Mcp:
    """`dmm mcp` over its pipes, as a client speaks to it."""

    def __init__(self, root):
        self.proc = subprocess.Popen([sys.executable, "-m", "dmm", "mcp"], cwd=root,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=dict(os.environ))
        self.last = 0

    def ask(self, method: str, params: dict | None = None) -> dict:
        self.last += 1
        message = {"jsonrpc": "2.0", "id": self.last, "method": method, "params": params or {}}
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.last:
                return answer["result"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


def _maps(pid: int) -> str:
    with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
        return fh.read()


def test_dmm_mcp_asks_the_background_process_and_loads_no_model(repo, stop_daemons):
    _store(repo)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "store")
    # built: a call made while the background process builds it first answers the baseline
    # at once, saying so (tests/query/test_first_build.py), and the front answers the first
    # call before the SDK has loaded
    assert repo.dmm("reindex").returncode == 0
    stop_daemons.append(repo.root)
    server = Mcp(repo.root)
    try:
        server.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "claude-code", "version": "2"}})
        result = server.ask("tools/call", {"name": "memory_query", "arguments": {"task": TASK}})
        pack = result["structuredContent"]
        assert pack["stats"]["ranking"] == "words+meaning", result["content"][0]["text"]
        assert pack["retrieved"][0]["path"] == "project/m1.md"
        assert "Search results are ordered by relevance" in result["content"][0]["text"]
        daemon = daemon_pid(repo.root)
        assert daemon is not None and daemon != server.proc.pid
        assert "onnxruntime" in _maps(daemon)  # the model is there, once
        assert "onnxruntime" not in _maps(server.proc.pid)  # and not in the server
    finally:
        server.close()


def test_dmm_serve_asks_the_background_process_and_loads_no_model(repo, stop_daemons):
    """Issue 36, item 6, for the HTTP server too: `dmm serve` asks the repository's background
    process rather than loading a copy of the model of its own."""
    from tests.agents.server import Server

    _store(repo)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "store")
    # built, as for `dmm mcp` above: a query during the first build answers the baseline
    # alone (once seen in CI: an empty pack), and this test is about the model
    cache_built(repo.root)
    stop_daemons.append(repo.root)
    server = Server(repo.root)
    try:
        status, pack = server.post("/query", {"query": TASK})
        assert status == 200, pack
        assert pack["stats"]["ranking"] == "words+meaning", pack
        assert pack["retrieved"][0]["path"] == "project/m1.md"
        daemon = daemon_pid(repo.root)
        assert daemon is not None and daemon != server.proc.pid
        assert "onnxruntime" in _maps(daemon)
        assert "onnxruntime" not in _maps(server.proc.pid)
    finally:
        server.proc.terminate()
        server.proc.wait(30)
