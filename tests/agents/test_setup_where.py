"""Where dmm is installed (issue 28, section 6): setup notices that the `dmm` an agent would
run is not the one running, keeps the shared files portable and names the absolute path only
in the user's own uncommitted settings; Cursor passes the workspace folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
HOOK_INPUT = json.dumps({"prompt": "upload size ceiling of the gateway"})


def setup(store, agent: str, path: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "dmm"), "agent", "setup", agent], cwd=store.root,
                          capture_output=True, text=True, env={**os.environ, "PATH": path},
                          timeout=60)


def test_a_dmm_the_agent_cannot_find_goes_into_the_users_local_settings(store):
    proc = setup(store, "claude", "/usr/bin:/bin")  # this dmm lives in a virtualenv
    assert proc.returncode == 0, proc.stderr
    assert "not the dmm running now" in proc.stderr and "claude mcp add --scope local" in \
        proc.stderr
    local = json.loads((store.root / ".claude" / "settings.local.json").read_text())
    assert local["env"]["DMM_COMMAND"] == str(BIN / "dmm")
    shared = (store.root / ".mcp.json").read_text() + \
        (store.root / ".claude" / "settings.json").read_text()
    assert str(BIN) not in shared  # the files the team commits stay portable
    # the hook runs the local dmm though no dmm is on PATH
    command = json.loads((store.root / ".claude" / "settings.json").read_text())[
        "hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    out = subprocess.run(["sh", "-c", command], cwd=store.root, input=HOOK_INPUT,
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PATH": "/usr/bin:/bin",
                              "DMM_COMMAND": local["env"]["DMM_COMMAND"]})
    assert "Upload size ceiling" in out.stdout, out.stdout + out.stderr
    bare = subprocess.run(["sh", "-c", command], cwd=store.root, input=HOOK_INPUT,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert bare.returncode == 0 and bare.stdout.startswith("(dmm: no memory pack")


def test_a_dmm_on_path_writes_no_local_settings(store):
    proc = setup(store, "claude", f"{BIN}{os.pathsep}/usr/bin:/bin")
    assert proc.returncode == 0, proc.stderr
    assert not (store.root / ".claude" / "settings.local.json").exists()
    assert "not the dmm running now" not in proc.stderr


def test_cursor_passes_the_workspace_folder(store):
    assert setup(store, "cursor", f"{BIN}{os.pathsep}/usr/bin:/bin").returncode == 0
    server = json.loads((store.root / ".cursor" / "mcp.json").read_text())["mcpServers"]["dmm"]
    assert server["args"] == ["-C", "${workspaceFolder}", "mcp"]
