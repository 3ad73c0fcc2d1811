"""A real `dmm serve` process for the HTTP tests, and a small client (the standard library's
http.client: what any agent's HTTP stack does on the wire)."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
from pathlib import Path

JSON = {"Content-Type": "application/json"}


class Server:
    """`dmm serve --port 0 ARGS` started in ``root``; knows its address and printed tokens."""

    def __init__(self, root: Path, *args: str):
        env = {**os.environ}
        env.pop("DMM_SERVE_TOKENS", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "dmm", "serve", "--port", "0",
                                      *args], cwd=root, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        first = self.proc.stdout.readline()
        match = re.search(r"http://(\S+):(\d+)", first)
        if not match:
            self.proc.kill()
            raise AssertionError(f"the server did not start: {first!r} "
                                 f"{self.proc.stderr.read()}")
        self.host, self.port = match.group(1), int(match.group(2))
        self.tokens: dict[str, str] = {}
        wanted = sum(a in ("--token", "--agent-token") for a in args)
        for _ in range(wanted):
            line = self.proc.stdout.readline()
            name, secret = re.match(r"token (\S+) \(.*?\): (\S+)", line).groups()
            self.tokens[name] = secret

    def request(self, method: str, path: str, body=None, token: str | None = None,
                headers: dict | None = None, raw: bytes | None = None) -> tuple[int, dict]:
        conn = http.client.HTTPConnection(self.host.strip("[]"), self.port, timeout=120)
        sent = {**(JSON if method == "POST" else {}), **(headers or {})}
        if token:
            sent["Authorization"] = f"Bearer {self.tokens.get(token, token)}"
        data = raw if raw is not None else (None if body is None and method == "GET"
                                            else json.dumps(body or {}).encode())
        try:
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            text = response.read().decode()
        finally:
            conn.close()
        return response.status, json.loads(text) if text else {}

    def get(self, path: str, **kw) -> tuple[int, dict]:
        return self.request("GET", path, **kw)

    def post(self, path: str, body=None, **kw) -> tuple[int, dict]:
        return self.request("POST", path, body, **kw)

    def stop(self) -> str:
        """Stop it as Ctrl-C would; its stderr."""
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, kind, *exc) -> None:
        log = self.stop()
        if kind is not None:  # a failing test shows what the server logged
            print(f"--- dmm serve stderr ---\n{log}")
