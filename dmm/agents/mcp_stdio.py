"""`dmm mcp` over stdio, answering at once: a thin front that answers the handshake itself
while the MCP SDK loads, then passes everything through to the SDK's server.

Importing the SDK takes 1.0-2.6 s on a small machine (its protocol types), and a client does not
wait for a slow server: Codex sends its first request without a server that is still starting.
So the front, which imports only the standard library and dmm.agents.mcp_tools, answers
`initialize` (the protocol version negotiated as the SDK does, the same capabilities, server
info and instructions), `tools/list`, `resources/list`, `resources/templates/list`,
`prompts/list` (an error: no prompts are offered) and `ping` from the tool table in tens of
milliseconds (Claude Code offers a server's tools to its model only once `resources/list` is
answered, and a first turn does not wait for the SDK), and forwards every message,
`initialize` included, to the SDK's server through a pipe; the SDK's own answers to the
requests already answered are dropped (and compared: a difference is logged on stderr, and a
test keeps it empty). Tool calls that arrive before the SDK is ready (its answer to
`initialize` marks it) are answered by the front too, each in a thread of its own (at most
FRONT_CALLS at once; more wait for the SDK), from the same tool table and result shape as the
SDK's server (dmm.agents.mcp_server: it imports no SDK): the SDK's import took 1-4 s, and a
first `memory_query` sent at once waited for it (the first-minute benchmark). Requests the
front cannot answer (reading a resource, anything once the SDK is ready) go to the SDK, in
order.

It also marks the processes it starts as an agent's: DMM_AGENT=mcp:<client> in its
environment, so a decision command run from them is refused (dmm.agents.identity).

IO boundary: the process's stdin and stdout (JSON-RPC, one message a line); stray output of
the server or its children goes to stderr, never to the wire.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

from dmm.agents import mcp_tools
from dmm.agents.inputs import TooDeep, load_bounded
from dmm.workspace import Workspace

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CAPABILITIES = {"resources": {"subscribe": False, "listChanged": False},
                "tools": {"listChanged": False}}
# the lists a client asks for before it offers a server's tools to its model (Claude Code waits
# for resources/list), answered here from the same tables the SDK's server is built from
LISTS = {"tools/list": mcp_tools.tools_list, "resources/list": mcp_tools.resources_list,
         "resources/templates/list": mcp_tools.templates_list}
# no prompts are offered (no "prompts" capability): the SDK answers "Method not found"
NO_SUCH_METHOD = ("prompts/list",)
# tool calls the front answers at once, each in a thread (a session's first turn makes a few);
# more, from a client that floods it, are forwarded to the SDK and wait for it in order
FRONT_CALLS = 8


class Front:
    """The wire side: reads the client's lines, answers what it can, forwards the rest."""

    def __init__(self, wire_in, wire_out, to_sdk, ws: Workspace | None = None):
        self.wire_in, self.wire_out, self.to_sdk = wire_in, wire_out, to_sdk
        self.lock = threading.Lock()
        self.answered: dict[Any, dict] = {}  # id -> what the front answered (initialize)
        self.handshake = False
        self.client = ""
        self.ws = ws  # tool calls before the SDK is ready are answered here (None: never)
        self.sdk_ready = threading.Event()
        self.tools = None  # the tool table, made at the first call the front answers
        self.calls = threading.BoundedSemaphore(FRONT_CALLS)  # its calls answered at once

    def who(self) -> str:
        return f"agent:{self.client}" if self.client else "agent"

    def send(self, raw: bytes) -> None:
        with self.lock:
            self.wire_out.write(raw.rstrip(b"\n") + b"\n")
            self.wire_out.flush()

    def reply(self, request_id: Any, result: dict) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result},
                             separators=(",", ":")).encode())

    def read_client(self) -> None:
        try:
            for line in self.wire_in:
                if line.strip() and not self._handled(line):
                    self.to_sdk.write(line if line.endswith(b"\n") else line + b"\n")
                    self.to_sdk.flush()
        except (BrokenPipeError, ValueError):
            pass
        finally:
            try:
                self.to_sdk.close()
            except OSError:
                pass

    def _handled(self, line: bytes) -> bool:
        """``_answered``, and whatever a line holds it never ends this thread (which would
        leave the client without a server): a message nested too deeply for the SDK's parser
        and ours is answered with a JSON-RPC error and never forwarded; anything else this
        front cannot read goes to the SDK, which answers it."""
        try:
            message = load_bounded(line, "the message")
        except TooDeep as exc:
            self.send(json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": f"Invalid Request: {exc.message}"}}).encode())
            return True
        except ValueError:
            return False
        try:
            return self._answered(message)
        except Exception:  # noqa: BLE001 - e.g. an id that is a list: the SDK answers it
            return False

    def _answered(self, message: Any) -> bool:
        """Answer ``message`` here when the front can; True when it need not reach the SDK."""
        if not isinstance(message, dict) or "id" not in message:
            return False
        method, request_id = message.get("method"), message["id"]
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if method == "initialize":
            from dmm import __version__

            asked = params.get("protocolVersion")
            info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) \
                else {}
            self.client = _client_name(info.get("name"))
            os.environ["DMM_AGENT"] = "mcp:" + (self.client or "client")
            result = {"protocolVersion": asked if asked in HANDSHAKE_VERSIONS
                      else HANDSHAKE_VERSIONS[-1], "capabilities": CAPABILITIES,
                      "serverInfo": {"name": mcp_tools.NAME, "version": __version__},
                      "instructions": mcp_tools.INSTRUCTIONS}
            self.handshake = True
            self.answered[request_id] = result
            self.reply(request_id, result)
            return False  # the SDK's session must see it too; its answer is dropped
        if not self.handshake:
            return False
        listed = LISTS.get(method)
        if listed is not None and not params.get("cursor"):
            self.reply(request_id, listed())
            return True
        if method in NO_SUCH_METHOD:  # what the SDK answers for a capability not offered
            self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32601, "message": "Method not found", "data": method}},
                separators=(",", ":")).encode())
            return True
        if method == "ping":
            self.reply(request_id, {})
            return True
        if method == "tools/call" and self.ws is not None and not self.sdk_ready.is_set() \
                and isinstance(params.get("name"), str) and \
                isinstance(params.get("arguments", {}), (dict, type(None))) \
                and self.calls.acquire(blocking=False):
            threading.Thread(target=self._call_tool, daemon=True, name="dmm-front-call",
                             args=(request_id, params["name"], params.get("arguments"))
                             ).start()
            return True
        return False  # a call beyond FRONT_CALLS at once waits for the SDK, in order

    def _call_tool(self, request_id: Any, name: str, arguments: dict | None) -> None:
        """A tool call answered as the SDK's server answers it (mcp_server.build_server)."""
        from dmm.agents import mcp_server

        try:
            with self.lock:
                if self.tools is None:
                    self.tools = mcp_server.handlers(self.ws, self.who)
            result, error = mcp_server.run_tool(self.tools, name, arguments)
            self.reply(request_id, mcp_server.tool_result(result) if error is None else
                       mcp_server.error_result(error))
        finally:
            self.calls.release()

    def read_sdk(self, from_sdk) -> None:
        for line in from_sdk:
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                message = None
            if isinstance(message, dict) and message.get("id") in self.answered and (
                    "result" in message or "error" in message):
                sent = self.answered.pop(message["id"])
                self.sdk_ready.set()  # it answered initialize: it serves from now on
                theirs = message.get("result", {})
                if {k: theirs.get(k) for k in ("protocolVersion", "capabilities")} != {
                        k: sent.get(k) for k in ("protocolVersion", "capabilities")}:
                    print(f"dmm mcp: the SDK answered initialize differently: {theirs}",
                          file=sys.stderr, flush=True)
                continue
            self.send(line)


def _client_name(name: Any) -> str:
    """A client's name as dmm records it: lower case, letters, digits and - only."""
    text = "".join(c if c.isalnum() else "-" for c in str(name or "").lower())[:40]
    return "-".join(part for part in text.split("-") if part)


def serve(ws: Workspace) -> None:
    """Serve ``ws`` over this process's stdin and stdout until the client closes stdin, or
    until interrupted."""
    import signal

    os.environ["DMM_AGENT"] = "mcp"  # what this server starts is an agent's (see identity)
    # Ctrl-C (a client stopping it, a person at a terminal) ends it at once: the SDK's loop
    # would cancel its tasks and then wait, for ever, on a thread blocked reading the pipe.
    # Nothing is lost: every write dmm makes is atomic.
    signal.signal(signal.SIGINT, _interrupted)
    wire_in = os.fdopen(os.dup(0), "rb", buffering=0)
    wire_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # children read nothing from the wire
    os.dup2(2, 1)  # and whatever prints misses it
    os.close(devnull)
    to_sdk_r, to_sdk_w = os.pipe()
    from_sdk_r, from_sdk_w = os.pipe()
    front = Front(wire_in, wire_out, os.fdopen(to_sdk_w, "wb", buffering=0), ws)
    reader = threading.Thread(target=front.read_client, daemon=True)
    reader.start()
    forwarder = threading.Thread(target=front.read_sdk,
                                 args=(os.fdopen(from_sdk_r, "rb"),), daemon=True)
    forwarder.start()
    try:
        _run_sdk(ws, front, to_sdk_r, from_sdk_w)
    finally:
        forwarder.join(timeout=10)


def _interrupted(signum: int, _frame) -> None:
    os._exit(128 + signum)


def _run_sdk(ws: Workspace, front: Front, to_sdk_r: int, from_sdk_w: int) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    from dmm.agents.mcp_server import build_server

    server = build_server(ws, front.who)

    async def main() -> None:
        stdin = anyio.wrap_file(open(to_sdk_r, encoding="utf-8", errors="replace"))
        stdout = anyio.wrap_file(open(from_sdk_w, "w", encoding="utf-8"))
        try:
            async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:
            await stdout.aclose()

    anyio.run(main)
