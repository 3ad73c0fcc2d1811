"""The background process's life cycle, through the real command line: started on first use,
reused, one per repository, idle exit, replaced after an upgrade, recovered after a crash, a
socket only its user can use; and the answer by words (with one note) when it cannot help."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import time

import pytest

from dmm.background import client
from tests.semantic.conftest import cache_built, daemon_pid
from tests.semantic.test_index import OTHERS, RANKING

pytestmark = pytest.mark.slow
TASK = "what decides which answers appear at the top?"


def _store(repo):
    for n, (title, body) in enumerate([RANKING, *OTHERS], 1):
        repo.add(f"project/m{n}.md", f"mem_2026_01_01_00{n}", title, body)
    cache_built(repo.root)


def _query(repo, task=TASK, env=None):
    proc = repo.dmm("query", task, "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_started_on_first_use_reused_and_only_for_this_user(repo, stop_daemons):
    _store(repo)
    stop_daemons.append(repo.root)
    pack, err = _query(repo)
    assert pack["stats"]["ranking"] == "words+meaning", err
    assert pack["retrieved"], (pack, err, (repo.ws.state_dir / "semantic.log").read_text())
    assert pack["retrieved"][0]["path"] == "project/m1.md"
    assert pack["retrieved"][0]["match"]["meaning"] > 0.3
    sock = repo.ws.state_dir / client.SOCKET
    st = os.lstat(sock)
    assert stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()
    assert stat.S_IMODE(st.st_mode) == 0o600
    pid = daemon_pid(repo.root)
    _query(repo, "releases on tuesday")
    assert daemon_pid(repo.root) == pid  # the same process answered again
    # the hook goes through it too
    proc = repo.dmm("agent", "hook", "user-prompt-submit", input=json.dumps({"prompt": TASK}))
    assert proc.returncode == 0 and "Search results are ordered by relevance" in proc.stdout
    # usage is logged by the process that answered
    usage = repo.dmm("usage", "queries", "--json")
    assert TASK in usage.stdout


def test_each_repository_has_its_own_and_a_crash_is_recovered(repo, tmp_path, stop_daemons):
    from tests.conftest import Repo, git
    from dmm.scaffold import init
    from dmm.workspace import Workspace

    _store(repo)
    other_root = tmp_path / "other"
    other_root.mkdir()
    git(other_root, "init", "-q")
    init(Workspace(other_root))
    other = Repo(other_root)
    other.add("project/x.md", "mem_2026_02_02_001", "Invoices are numbered at finalisation",
              "A draft invoice has no number; the number is given when it is finalised.")
    cache_built(other.root)
    stop_daemons += [repo.root, other.root]
    first, _ = _query(repo)
    second, _ = _query(other, "when does a bill get its number?")
    assert second["retrieved"][0]["path"] == "project/x.md"
    assert first["retrieved"][0]["path"] == "project/m1.md"
    pids = daemon_pid(repo.root), daemon_pid(other.root)
    assert None not in pids and pids[0] != pids[1]
    os.kill(pids[0], signal.SIGKILL)  # a crash leaves its socket behind
    assert _gone(pids[0])
    assert (repo.ws.state_dir / client.SOCKET).exists()
    again, err = _query(repo)
    assert again["stats"]["ranking"] == "words+meaning", err
    assert daemon_pid(repo.root) not in (None, pids[0])
    assert daemon_pid(other.root) == pids[1]  # the other repository's was never touched


def test_idle_exit_and_replacement_after_an_upgrade(repo, stop_daemons):
    _store(repo)
    stop_daemons.append(repo.root)
    _query(repo, env={"DMM_BUILD_TAG": "old"})
    old = daemon_pid_with(repo, "old")
    _query(repo, env={"DMM_BUILD_TAG": "new"})  # another build of dmm asks: replaced
    assert _gone(old)
    new = daemon_pid_with(repo, "new")
    assert new != old
    os.kill(new, signal.SIGTERM)
    assert _gone(new)
    _query(repo, env={"DMM_SEMANTIC_IDLE_S": "4"})
    idle = daemon_pid(repo.root)  # asked well within 4 s, even on a busy machine
    assert idle is not None and _gone(idle, within=30)  # no request for 4 s: it exits
    assert not (repo.ws.state_dir / client.SOCKET).exists()


def daemon_pid_with(repo, tag: str) -> int:
    os.environ["DMM_BUILD_TAG"] = tag
    try:
        return daemon_pid(repo.root)
    finally:
        del os.environ["DMM_BUILD_TAG"]


def test_a_socket_others_may_use_is_never_asked(repo):
    _store(repo)
    path = repo.ws.state_dir / client.SOCKET
    path.parent.mkdir(parents=True, exist_ok=True)
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        impostor.bind(client.SOCKET)
    finally:
        os.chdir(cwd)
    impostor.listen(1)
    os.chmod(path, 0o666)
    try:
        pack, err = _query(repo)
    finally:
        impostor.close()
    assert pack["stats"]["ranking"] == "words"
    assert err.count("note:") == 1 and "others may use it" in err


def test_without_the_layer_queries_answer_by_words(repo):
    _store(repo)
    pack, err = _query(repo, env={"DMM_SEMANTIC": "off"})
    assert pack["stats"]["ranking"] == "words" and err == ""  # turned off: nothing to say
    (repo.root / ".dmm" / "config.toml").write_text("[semantic]\nbackground = false\n")
    pack, err = _query(repo)
    assert pack["stats"]["ranking"] == "words" and err == ""
    assert not (repo.ws.state_dir / client.SOCKET).exists()


def test_the_background_process_carries_no_agent_marker(repo, stop_daemons, monkeypatch):
    """Started from an agent's hook, it serves people too: what it starts must not pass for an
    agent's (issue 36, item 8)."""
    _store(repo)
    stop_daemons.append(repo.root)
    for name in ("CLAUDECODE", "CODEX_THREAD_ID", "AI_AGENT"):
        monkeypatch.setenv(name, "1")
    proc = repo.dmm("agent", "hook", "user-prompt-submit", input=json.dumps({"prompt": TASK}),
                    env={"DMM_AGENT": "hook"})
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + 30
    while daemon_pid(repo.root) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    pid = daemon_pid(repo.root)
    assert pid is not None
    environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    names = {item.split(b"=", 1)[0].decode() for item in environ if item}
    assert not names & {"CLAUDECODE", "CODEX_THREAD_ID", "AI_AGENT", "DMM_AGENT"}, names
    assert "PATH" in names  # the rest of the environment is kept
