"""A stand-in model API on 127.0.0.1 for driving the real agent clients (Claude Code, the Codex
CLI) through a whole session in a test or benchmark: it speaks the Anthropic Messages API and
the OpenAI Responses API (streamed as server-sent events, as both clients ask), and answers
from a script instead of a model. What the clients parse, inject and execute is real.

A script is a list of steps. A request whose tools include the script's tools is the session's
main loop: its step is the number of tool results the conversation already holds, and the step
is a tool call (``{"tool": "memory_query", "input": {...}}``; the name is matched against the
tools the client offered, so ``memory_query`` finds ``mcp__dmm__memory_query``) or the final
text (``{"text": ...}``). Any other request (titles, summaries, classifiers) gets a short text.
Every request body is kept (``requests``) for the test to read what reached the model.

Loopback only, a daemon thread, stopped by ``close``.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StandIn:
    def __init__(self, script: list[dict], pause: float = 0.0):
        self.script = script
        self.pause = pause  # seconds before each model answer, as a real model thinks
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"standin": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "StandIn":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- choosing the answer -------------------------------------------------------------------

    def step_for(self, tool_names: list[str], results: int) -> dict | None:
        """The script's step for a main-loop request, None for a side request."""
        wanted = [s["tool"] for s in self.script if "tool" in s]
        if not tool_names or not any(self.match(w, tool_names) for w in wanted[:1]):
            return None
        if results >= len(self.script):
            return {"text": "Done."}
        return self.script[results]

    @staticmethod
    def match(wanted: str, names: list[str]) -> str | None:
        for name in names:
            if name == wanted:
                return name
        for name in names:
            if name.endswith("__" + wanted) or name.endswith("." + wanted) or \
                    name.endswith("/" + wanted):
                return name
        return None

    def tool_results(self) -> list[str]:
        """The text of every tool result the client sent back, in order: the conversation of
        the request that carries the most of them (each request repeats the earlier ones)."""
        best: list[str] = []
        for body in self.requests:
            found = self._results_in(body)
            if len(found) > len(best):
                best = found
        return best

    @staticmethod
    def _results_in(body: dict) -> list[str]:
        out = []
        for body in [body]:
            for message in body.get("messages", []):
                content = message.get("content")
                if isinstance(content, list):
                    for block in content:
                        if isinstance(block, dict) and block.get("type") == "tool_result":
                            out.append(json.dumps(block.get("content"))[:4000])
            for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
                if isinstance(item, dict) and item.get("type") == "function_call_output":
                    out.append(str(item.get("output"))[:4000])
        return out


class _Handler(BaseHTTPRequestHandler):
    standin: StandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _body(self) -> dict:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("content-encoding") == "zstd":
            return {}
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {}

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        if "/models" in self.path:
            self._json({"object": "list", "data": [
                {"id": "standin", "object": "model", "type": "model", "display_name": "standin",
                 "created_at": "2026-01-01T00:00:00Z"}], "has_more": False, "models": []})
        else:
            self._json({})

    def do_POST(self) -> None:
        body = self._body()
        with self.standin.lock:
            self.standin.requests.append({"path": self.path, **body})
        if "count_tokens" in self.path:
            self._json({"input_tokens": 1000})
            return
        if self.standin.pause and ("/messages" in self.path or "/responses" in self.path):
            import time

            time.sleep(self.standin.pause)
        if "/messages" in self.path:
            self._anthropic(body)
        elif "/responses" in self.path:
            self._openai(body)
        else:
            self._json({})

    # --- replies -------------------------------------------------------------------------------

    def _json(self, data: Any, status: int = 200) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _events(self, events: list[tuple[str | None, dict]]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for name, data in events:
            chunk = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
            self.wfile.write(chunk.encode())
        self.wfile.flush()
        self.close_connection = True

    def _anthropic(self, body: dict) -> None:
        names = [t.get("name", "") for t in body.get("tools", []) or []]
        results = sum(1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
                      for b in m["content"] if isinstance(b, dict)
                      and b.get("type") == "tool_result")
        step = self.standin.step_for(names, results)
        if step is None:
            step = {"text": "ok"}
        mid = "msg_" + uuid.uuid4().hex[:20]
        if "tool" in step:
            name = self.standin.match(step["tool"], names) or step["tool"]
            block = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": name,
                     "input": step.get("input", {})}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": step["text"]}
            stop = "end_turn"
        message = {"id": mid, "type": "message", "role": "assistant",
                   "model": body.get("model", "standin"), "content": [],
                   "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 100, "output_tokens": 1}}
        if not body.get("stream"):
            message.update(content=[block], stop_reason=stop)
            return self._json(message)
        start = dict(block, input={}) if block["type"] == "tool_use" else dict(block, text="")
        delta = ({"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                 if block["type"] == "tool_use" else {"type": "text_delta", "text": block["text"]})
        self._events([
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                                                                  "stop_sequence": None},
                               "usage": {"output_tokens": 10}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    def _openai(self, body: dict) -> None:
        names = []
        for tool in body.get("tools", []) or []:
            if tool.get("type") == "namespace":  # Codex: an MCP server's tools, one namespace
                names += [f"{tool.get('name')}__{t.get('name')}" for t in tool.get("tools", [])]
            names.append(tool.get("name") or tool.get("function", {}).get("name", ""))
        items = body.get("input", []) if isinstance(body.get("input"), list) else []
        results = sum(1 for i in items if isinstance(i, dict)
                      and i.get("type") in ("function_call_output", "custom_tool_call_output"))
        step = self.standin.step_for([n for n in names if n], results) or {"text": "ok"}
        rid = "resp_" + uuid.uuid4().hex[:20]
        if "tool" in step:
            name = self.standin.match(step["tool"], names) or step["tool"]
            item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:16],
                    "call_id": "call_" + uuid.uuid4().hex[:16], "name": name,
                    "arguments": json.dumps(step.get("input", {})), "status": "completed"}
            for tool in body.get("tools", []) or []:  # a namespaced tool: both parts
                prefix = f"{tool.get('name')}__"
                if tool.get("type") == "namespace" and name.startswith(prefix):
                    item.update(name=name[len(prefix):], namespace=tool["name"])
        else:
            item = {"type": "message", "id": "msg_" + uuid.uuid4().hex[:16], "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": step["text"], "annotations": []}]}
        response = {"id": rid, "object": "response", "status": "in_progress",
                    "model": body.get("model", "standin"), "output": []}
        done = dict(response, status="completed", output=[item], usage={
            "input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110})
        self._events([
            ("response.created", {"type": "response.created", "response": response}),
            ("response.output_item.added", {"type": "response.output_item.added",
                                            "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": done}),
        ])
