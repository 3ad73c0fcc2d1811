"""A stand-in MCP client that starts `dmm mcp` as Claude Code does and offers the server's
tools to its model only once `tools/list` and `resources/list` are both answered (Claude Code
2.1 asks for `resources/list` when the server declares resources, and a model request sent
before that answer carries none of the server's tools), giving up at its deadline (the session
then goes on without them). It runs everywhere; tests/agents/test_real_clients.py runs the real
clients where they are installed.

It can hold back the server's MCP SDK: with ``gated``, a ``sitecustomize`` on PYTHONPATH makes
``import mcp`` wait until ``open_gate`` is called, so what the server answers before its SDK is
loaded is told apart from what waits for it by order, not by measuring time.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

GATE_CODE = '''\
import importlib.util, os, sys, time
_GATE = os.environ.get("DMM_TEST_SDK_GATE")
class _Held:
    """The loader of `mcp`, running it only once the gate file exists: the wait holds that
    module's lock alone, never the interpreter's import lock (which a wait in find_spec
    would hold, stopping every other thread's imports)."""
    def __init__(self, loader):
        self.loader = loader
    def __getattr__(self, name):
        return getattr(self.loader, name)
    def create_module(self, spec):
        return self.loader.create_module(spec)
    def exec_module(self, module):
        while not os.path.exists(_GATE):
            time.sleep(0.01)
        self.loader.exec_module(module)
class _Gate:
    """Holds `import mcp` until the gate file exists."""
    def find_spec(self, name, path=None, target=None):
        if name != "mcp":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        spec.loader = _Held(spec.loader)
        return spec
if _GATE:
    sys.meta_path.insert(0, _Gate())
'''


class StandInClient:
    def __init__(self, argv: list[str], cwd: Path, scratch: Path, gated: bool = False):
        env = {**os.environ}
        scratch.mkdir(parents=True, exist_ok=True)
        self.gate = scratch / "sdk-gate"
        if gated:
            site = scratch / "gate-site"
            site.mkdir(exist_ok=True)
            (site / "sitecustomize.py").write_text(GATE_CODE)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site),
                                                              env.get("PYTHONPATH")]))
            env["DMM_TEST_SDK_GATE"] = str(self.gate)
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.answers: dict = {}
        self.arrived: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            message = json.loads(line)
            if "id" in message and ("result" in message or "error" in message):
                self.answers[message["id"]] = message
                self.arrived.put(message["id"])

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                   **({"params": params} if params is not None else {})})
        return self.next_id

    def wait(self, ids: list[int], timeout: float) -> bool:
        """Whether every request of ``ids`` is answered within ``timeout`` seconds."""
        import time

        end = time.monotonic() + timeout
        while not all(i in self.answers for i in ids):
            try:
                self.arrived.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                return False
        return True

    def start_session(self, timeout: float) -> list[str]:
        """Claude Code's start: initialize, then the lists; the tools it offers its model
        (none when the server has not answered what it waits for by ``timeout``)."""
        first = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                            "clientInfo": {"name": "claude-code",
                                                           "version": "2.1.197"}})
        if not self.wait([first], timeout):
            return []
        capabilities = self.answers[first]["result"]["capabilities"]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        asked = [self.request("tools/list", {})]
        if "resources" in capabilities:
            asked.append(self.request("resources/list", {}))
        if "prompts" in capabilities:
            asked.append(self.request("prompts/list", {}))
        if not self.wait(asked, timeout):
            return []
        return [t["name"] for t in self.answers[asked[0]]["result"]["tools"]]

    def open_gate(self) -> None:
        self.gate.write_text("open")

    def close(self) -> str:
        """Close the server's stdin, wait for it to exit; its stderr."""
        self.open_gate()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read().decode(errors="replace")

    def __enter__(self) -> "StandInClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def dmm_mcp() -> list[str]:
    return [sys.executable, "-m", "dmm", "mcp"]


# the SDK's own server for a repository, on stdio, with no front: what the front must agree with
SDK_ONLY = '''\
import anyio
from mcp.server.stdio import stdio_server
from dmm.agents.mcp_server import build_server
from dmm.workspace import Workspace

server = build_server(Workspace.find(None), lambda: "agent")


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
'''


def sdk_only() -> list[str]:
    return [sys.executable, "-c", SDK_ONLY]
