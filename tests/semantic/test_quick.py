"""The short way of `dmm` (dmm/background/quick.py): with the repository's background process
running, the prompt hook and a plain `dmm query` are answered by it without importing the
command line (click: 150-300 ms of a loaded machine), with the same answer and the same
escaping; whatever the short way does not handle goes to the command line. Real processes
(the model off; "large" lowered to any cache through DMM_WORDS_PROCESS_BYTES)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dmm.background import client
from tests.conftest import git
from tests.semantic.test_by_words import _pid, _wait_for

pytestmark = pytest.mark.slow

WORDS = {"DMM_SEMANTIC": "off", client.LEXICAL_ENV: "1", "DMM_SEMANTIC_IDLE_S": "30"}
TASK = "what is the upload size ceiling?"


@pytest.fixture
def store(repo, stop_daemons, monkeypatch):
    monkeypatch.setenv("DMM_SEMANTIC", "off")
    stop_daemons.append(repo.root)
    repo.add("baseline/deploys.md", "mem_2026_11_01_001", "Deploys go through the release train",
             "Every deploy goes through the weekly release train.", scope="baseline")
    repo.add("project/uploads.md", "mem_2026_11_02_001", "Upload size ceiling of the gateway",
             "The gateway refuses uploads above 50,000,000 bytes with status 413. A \x1b]0;"
             "pwned\x07 title escape and a \u202e reversal stay visible.", tags="[uploads]")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "memories")
    assert repo.dmm("reindex", env=WORDS).returncode == 0  # the cache exists: it is "large"
    assert repo.dmm("query", TASK, "--json", env=WORDS).returncode == 0  # starts the process
    assert _wait_for(lambda: _pid(repo.root)) is not None
    return repo


def _dmm(repo, *args: str, payload: dict | None = None) -> tuple[str, list[str]]:
    """(stdout, the modules imported) of one `dmm` process (python -X importtime)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "dmm", *args],
                          cwd=repo.root, capture_output=True, text=True,
                          input=json.dumps(payload) if payload is not None else None,
                          env={**os.environ, **WORDS})
    assert proc.returncode == 0, proc.stderr[-2000:]
    modules = [line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
               if line.startswith("import time:") and "|" in line]
    return proc.stdout, modules


def test_the_prompt_hook_is_answered_by_the_process_without_the_command_line(store):
    out, modules = _dmm(store, "agent", "hook", "user-prompt-submit",
                        payload={"session_id": "q1", "prompt": TASK, "cwd": str(store.root)})
    assert "Upload size ceiling of the gateway" in out
    assert "Deploys go through the release train" in out  # the session's start gave nothing
    assert "click" not in modules and "dmm.cli" not in modules and "tomllib" not in modules
    # memory text reaches the agent escaped, as the command line escapes it
    assert "\x1b" not in out and "\u202e" not in out and "\\u001b]0;pwned\\u0007" in out
    # the process recorded the baseline as delivered: the next prompt gets only the pack
    again, _ = _dmm(store, "agent", "hook", "user-prompt-submit",
                    payload={"session_id": "q1", "prompt": TASK})
    assert "Upload size ceiling" in again and "Deploys go through" not in again


def test_a_plain_query_is_answered_by_the_process_as_the_command_line_answers_it(store):
    quick, modules = _dmm(store, "query", TASK, "--json", "--budget", "900")
    assert "click" not in modules and "dmm.cli" not in modules
    # --exclude-ephemeral (no ephemeral memory here) is not the short way's: the command line
    full, full_modules = _dmm(store, "query", TASK, "--json", "--budget=900",
                              "--exclude-ephemeral")
    assert "click" in full_modules
    quick, full = json.loads(quick), json.loads(full)
    assert quick["stats"]["ranking"] == full["stats"]["ranking"] == "words"
    assert quick["stats"]["budget"] == full["stats"]["budget"] == 900
    assert [m["path"] for m in quick["retrieved"]] == [m["path"] for m in full["retrieved"]] \
        == ["project/uploads.md"]
    # a bad budget is the command line's to refuse, with its message
    proc = store.dmm("query", TASK, "--budget", "0", env=WORDS)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_the_short_way_leaves_to_the_command_line_what_the_settings_keep_out(store):
    """semantic.background = false: no request goes to the process, even one running."""
    (store.root / ".dmm" / "config.toml").write_text("[semantic]\nbackground = false\n")
    out, modules = _dmm(store, "query", TASK, "--json")
    assert "click" in modules  # answered by the command line itself
    assert json.loads(out)["retrieved"][0]["path"] == "project/uploads.md"
