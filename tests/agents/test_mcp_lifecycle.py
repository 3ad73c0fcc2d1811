"""`dmm mcp` ends when interrupted (issue 36, item 8): Ctrl-C once left it alive, its SDK loop
waiting on a thread blocked reading the client's pipe."""

from __future__ import annotations

import signal

import pytest

from tests.agents.standin_client import StandInClient, dmm_mcp

pytest.importorskip("mcp")


def test_sigint_ends_the_server_once_its_sdk_is_serving(repo, tmp_path):
    client = StandInClient(dmm_mcp(), repo.root, tmp_path)
    try:
        assert "memory_query" in client.start_session(60)
        call = client.request("tools/call", {"name": "memory_list", "arguments": {}})
        assert client.wait([call], 120)  # the SDK's loop is running
        client.proc.send_signal(signal.SIGINT)
        code = client.proc.wait(timeout=20)  # a failure bound: it once stayed alive
        assert code == 128 + signal.SIGINT
        assert "Traceback" not in client.proc.stderr.read().decode()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
        client.proc.wait()
