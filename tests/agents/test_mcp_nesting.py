"""One request nested 1,000 levels deep is answered with a JSON-RPC error and `dmm mcp` keeps
serving (issue 34, item 15): it once killed the front's reader thread with RecursionError."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

DEEP = "[" * 1000 + "]" * 1000


def _lines(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line)


def test_a_deeply_nested_request_gets_an_error_and_the_server_keeps_serving(repo):
    proc = subprocess.Popen([sys.executable, "-m", "dmm", "mcp"], cwd=repo.root,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ})
    answers: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, answers), daemon=True).start()

    def send(text: str) -> None:
        proc.stdin.write(text.encode() + b"\n")
        proc.stdin.flush()

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}))
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_query",'
             f'"arguments":{{"task":{DEEP}}}}}}}')
        send(f'{{"jsonrpc":"2.0","id":{DEEP},"method":"ping"}}')
        send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        send(json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "memory_query", "arguments": {"task": "how do we deploy"}}}))
        got: dict = {}
        errors = []
        while not {1, 3, 4} <= set(got):
            message = json.loads(answers.get(timeout=60))
            if "error" in message and message.get("id") in (None, 2):
                errors.append(message["error"])
            got[message.get("id")] = message
        assert len(errors) == 2, got  # one answer for each deep request, with id or without
        assert all(e["code"] == -32600 and "nested" in e["message"] for e in errors)
        assert got[3]["result"] == {}
        assert "result" in got[4]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert "Traceback" not in proc.stderr.read().decode()


def test_the_background_process_answers_a_deeply_nested_request(repo, tmp_path, capsys):
    """The background process's own server and handler, on a socket of the test's: the deep
    request gets an answer that says why, no traceback, and the next request is served."""
    import socket

    from dmm.background import daemon

    server = daemon._Server(str(tmp_path / "s.sock"), daemon._Handler)
    server.daemon = daemon.Daemon(repo.root)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    try:
        def ask(line: bytes) -> dict:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(30)
                sock.connect(str(tmp_path / "s.sock"))
                sock.sendall(line + b"\n")
                sock.shutdown(socket.SHUT_WR)
                return json.loads(sock.makefile("rb").read())

        answer = ask(b'{"op":"query","task":' + DEEP.encode() + b"}")
        assert answer["ok"] is False and "nested deeper" in answer["why"]
        assert ask(b"not json") == {"ok": False, "why": "not a JSON request"}
    finally:
        server.shutdown()
        server.server_close()
    assert "Traceback" not in capsys.readouterr().err
