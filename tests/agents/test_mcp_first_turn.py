"""The first turn of a session has dmm's tools (issue 36, item 1): Claude Code offers an MCP
server's tools to its model only once `resources/list` is answered, so `dmm mcp` answers it,
`resources/templates/list` and `prompts/list` before its MCP SDK has loaded, exactly as the
SDK's server answers them."""

from __future__ import annotations

import pytest

from tests.agents.standin_client import StandInClient, dmm_mcp, sdk_only

pytest.importorskip("mcp")

BOUND_S = 30  # a failure bound for a server that never answers, not a timing


def test_a_client_that_waits_for_resources_gets_the_tools_before_the_sdk_loads(repo, tmp_path):
    with StandInClient(dmm_mcp(), repo.root, tmp_path, gated=True) as client:
        tools = client.start_session(BOUND_S)
        assert "memory_query" in tools  # offered while `import mcp` is still held back
        templates = client.request("resources/templates/list")
        prompts = client.request("prompts/list", {})
        assert client.wait([templates, prompts], BOUND_S)
        assert client.answers[prompts]["error"]["code"] == -32601
        # a tool call does not wait for the SDK either (its import took 1-4 s)
        call = client.request("tools/call", {"name": "memory_list", "arguments": {}})
        assert client.wait([call], BOUND_S), "the tool call waited for the SDK"
        assert "result" in client.answers[call] and not client.answers[call]["result"]["isError"]
        # what needs the SDK comes once it has loaded
        read = client.request("resources/read", {"uri": "dmm://boot"})
        client.open_gate()
        assert client.wait([read], 120) and "result" in client.answers[read]


def _answers(argv, root, scratch) -> dict:
    asked = [("tools/list", {}), ("resources/list", {}), ("resources/templates/list", None),
             ("prompts/list", {}), ("resources/list", {"cursor": "x"})]
    with StandInClient(argv, root, scratch) as client:
        first = client.request("initialize", {"protocolVersion": "2025-06-18",
                                              "capabilities": {},
                                              "clientInfo": {"name": "t", "version": "1"}})
        assert client.wait([first], 120)
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ids = [client.request(method, params) for method, params in asked]
        assert client.wait(ids, 120), client.answers
        out = {"initialize": client.answers[first]}
        for (method, params), i in zip(asked, ids):
            out[f"{method} {params}"] = client.answers[i]
    return out


def test_the_front_answers_exactly_what_the_sdk_server_answers(repo, tmp_path):
    front = _answers(dmm_mcp(), repo.root, tmp_path / "front")
    sdk = _answers(sdk_only(), repo.root, tmp_path / "sdk")
    assert front.keys() == sdk.keys()
    for key in front:
        assert front[key] == sdk[key], key


CALLS = [{"name": "memory_list", "arguments": {"limit": 2}},
         {"name": "memory_show", "arguments": {"memory": "mem_2026_11_02_002"}},
         {"name": "memory_show", "arguments": {"memory": "mem_2026_11_02_099"}},
         {"name": "memory_list", "arguments": {"limit": "two"}},
         {"name": "no_such_tool", "arguments": {}},
         {"name": "memory_list"}]


def _tool_answers(argv, root, scratch, gated: bool) -> list[dict]:
    with StandInClient(argv, root, scratch, gated=gated) as client:
        first = client.request("initialize", {"protocolVersion": "2025-06-18",
                                              "capabilities": {},
                                              "clientInfo": {"name": "t", "version": "1"}})
        assert client.wait([first], 120)
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ids = [client.request("tools/call", params) for params in CALLS]
        assert client.wait(ids, 120), client.answers
        answers = [client.answers[i] for i in ids]
        if gated:
            client.open_gate()
    return answers


def test_tool_calls_the_front_answers_are_the_sdk_servers_answers(repo, tmp_path):
    """Before its SDK has loaded the front answers tool calls itself (held back here, so every
    call is the front's): result for result, what the SDK's server answers."""
    repo.add("project/gateway.md", "mem_2026_11_02_002", "Gateway upload size ceiling",
             "The gateway refuses uploads over 25 MB.")
    repo.add("project/retries.md", "mem_2026_11_02_003", "Retries with backoff")
    assert repo.dmm("reindex").returncode == 0  # both read the same cache, built
    front = _tool_answers(dmm_mcp(), repo.root, tmp_path / "front", gated=True)
    sdk = _tool_answers(sdk_only(), repo.root, tmp_path / "sdk", gated=False)
    for params, mine, theirs in zip(CALLS, front, sdk):
        assert mine == theirs, params
    assert not front[0]["result"]["isError"] and front[2]["result"]["isError"]


def test_a_server_builds_its_cache_only_once_the_background_process_is_asked(repo, monkeypatch):
    """`dmm mcp` built a new clone's cache (2,000 files) in its own process as it started,
    while it imported its MCP SDK, which every tool call waits for: the first call came 1.1 s
    later at load 9. The background process builds its work tree's cache; the server warms its
    own only after asking it (then finds it fresh, or builds another work tree's)."""
    import threading

    from dmm.background import client
    from dmm.index import db, watch
    from dmm.semantic import model, service

    monkeypatch.setattr(watch, "_enabled", False)
    monkeypatch.setattr(service, "_delegated", False)
    monkeypatch.setattr(model, "unavailable", lambda: None)
    repo.add("project/gateway.md", "mem_2026_11_02_002", "Gateway upload size ceiling")
    (repo.ws.state_dir / db.DB_NAME).unlink(missing_ok=True)
    asked, answer = threading.Event(), threading.Event()

    def hello(ws, request, **kw):
        asked.set()
        answer.wait(30)
        return None, None

    monkeypatch.setattr(client, "via_background", hello)
    service.serve(repo.ws)
    assert asked.wait(30) and service.delegated()
    assert not [t for t in threading.enumerate() if t.name == "dmm-warm-cache"]
    assert not db.ever_filled(repo.ws.state_dir)
    answer.set()
    wake = next((t for t in threading.enumerate() if t.name == "dmm-wake"), None)
    if wake is not None:
        wake.join(30)
    for thread in [t for t in threading.enumerate() if t.name == "dmm-warm-cache"]:
        thread.join(30)
    assert db.ever_filled(repo.ws.state_dir)


def test_the_front_answers_a_few_tool_calls_at_once_and_forwards_the_rest(repo, monkeypatch):
    """Each tool call the front answers before the SDK is ready holds a thread: a client that
    sends many at once gets FRONT_CALLS of them answered there and the rest forwarded to the
    SDK (which answers them in order once loaded), never a thread per call."""
    import io
    import json
    import threading
    import time

    from dmm.agents import mcp_stdio

    held, started = threading.Event(), threading.Semaphore(0)

    def slow_call(self, request_id, name, arguments):  # in flight until released
        try:
            started.release()
            held.wait(30)
            self.reply(request_id, {"content": [], "isError": False})
        finally:
            self.calls.release()

    monkeypatch.setattr(mcp_stdio.Front, "_call_tool", slow_call)
    # the front marks its process as an agent's at `initialize`: undone after this test
    monkeypatch.setenv("DMM_AGENT", "")
    out = io.BytesIO()
    front = mcp_stdio.Front(io.BytesIO(), out, io.BytesIO(), ws=repo.ws)

    def line(i: int, method: str, params: dict) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                           "params": params}).encode()

    assert not front._handled(line(0, "initialize", {"protocolVersion": "2025-06-18"}))
    call = {"name": "memory_list", "arguments": {}}
    many = mcp_stdio.FRONT_CALLS + 3
    taken = [front._handled(line(i, "tools/call", call)) for i in range(1, many + 1)]
    assert taken == [True] * mcp_stdio.FRONT_CALLS + [False] * 3
    for _ in range(mcp_stdio.FRONT_CALLS):
        assert started.acquire(timeout=BOUND_S)
    held.set()
    deadline = time.monotonic() + BOUND_S
    while not front._handled(line(many + 1, "tools/call", call)):  # a slot is back once one ends
        assert time.monotonic() < deadline, "no slot came back"
        time.sleep(0.01)
