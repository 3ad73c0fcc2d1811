"""The baseline reaches every session (issue 36, item 3; issue 39's fallback): a hook that has
no pack in time answers the baseline memories read from their files (no index), and the first
prompt's pack of a session whose start did not deliver them carries them, once."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.conftest import git

BASELINE = "Deploys go through the release train"
PROJECT = "Upload size ceiling of the gateway"


@pytest.fixture
def store(repo):
    repo.add("baseline/deploys.md", "mem_2026_11_01_001", BASELINE,
             "Every deploy goes through the weekly release train; hotfixes too.",
             scope="baseline", tags="[deploy]")
    repo.add("project/uploads.md", "mem_2026_11_02_001", PROJECT,
             "The public gateway refuses uploads above 50,000,000 bytes with status 413.",
             tags="[uploads]")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "memories")
    assert repo.dmm("reindex").returncode == 0
    return repo


def hook(root, event: str, payload: dict) -> str:
    out = subprocess.run([sys.executable, "-m", "dmm", "agent", "hook", event], cwd=root,
                         input=json.dumps(payload), capture_output=True, text=True, timeout=60,
                         env={**os.environ})
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return out.stdout


def prompt(session: str | None, text: str = "what is the upload size ceiling?") -> dict:
    return {"prompt": text, **({"session_id": session} if session else {})}


def test_a_start_that_cannot_read_the_index_answers_the_baseline_from_its_files(store):
    holder = sqlite3.connect(store.ws.state_dir / "cache.sqlite3", isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # the index cannot be read at all
        start = hook(store.root, "session-start", {"session_id": "s1", "source": "startup"})
        assert BASELINE in start and "read from their files" in start, start
        assert "Every deploy goes through the weekly release train" in start
        assert PROJECT not in start
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # delivered: the session's prompts do not carry it again
    pack = hook(store.root, "user-prompt-submit", prompt("s1"))
    assert PROJECT in pack and BASELINE not in pack


def test_a_session_whose_start_delivered_nothing_gets_the_baseline_in_its_first_pack(store):
    first = hook(store.root, "user-prompt-submit", prompt("s2"))
    assert PROJECT in first and BASELINE in first, first
    assert "1 baseline and 1 of" in first  # the whole pack, as memory_query gives it
    assert first.index(BASELINE) < first.index(PROJECT)
    second = hook(store.root, "user-prompt-submit", prompt("s2"))
    assert PROJECT in second and BASELINE not in second, second
    # a session the client does not name is not followed: its packs are as before
    assert BASELINE not in hook(store.root, "user-prompt-submit", prompt(None))


def test_a_start_that_answered_in_time_is_recorded_and_a_new_start_owes_it_again(store):
    start = hook(store.root, "session-start", {"session_id": "s3", "source": "startup"})
    assert BASELINE in start and "read from their files" not in start
    assert BASELINE not in hook(store.root, "user-prompt-submit", prompt("s3"))
    assert hook(store.root, "session-start", {"session_id": "s3", "source": "resume"}) == ""
    assert BASELINE not in hook(store.root, "user-prompt-submit", prompt("s3"))


def test_the_deadline_answers_the_baseline_when_it_is_read_and_records_it(store):
    from dmm.agents import sessions
    from dmm.agents.hook import Fallback

    line = "(dmm: no memory pack this time: not ready within 0.9 s)\n"
    ws = store.ws
    late = Fallback(ws, "session-start", {"session_id": "s4", "source": "compact"}, after=0)
    late.timer.join(30)  # the baseline has been read meanwhile
    text = late.late(line)
    assert BASELINE in text and "read from their files" in text
    assert sessions.delivered(ws, "s4")
    # a prompt of a session that has it: one line, not the baseline again
    again = Fallback(ws, "user-prompt-submit", prompt("s4"), after=0)
    assert not again.owed and again.late(line) == line
    # nothing read yet: the line
    unread = Fallback(ws, "session-start", {"session_id": "s5"}, after=3600)
    assert unread.late(line) == line and not sessions.delivered(ws, "s5")
    unread.timer.cancel()


def test_the_record_of_sessions_is_bounded(store, monkeypatch):
    from dmm.agents import sessions

    monkeypatch.setattr(sessions, "MAX_SESSIONS", 5)
    ws = store.ws
    for n in range(12):
        sessions.record(ws, f"session-{n}")
        os.utime(sessions._file(ws, f"session-{n}"), ns=(n * 10**9, n * 10**9))
    kept = sorted(p.name for p in (ws.state_dir / sessions.FOLDER).iterdir())
    assert len(kept) <= 6  # pruned when each is made: the newest five and the one just made
    assert sessions.delivered(ws, "session-11") and not sessions.delivered(ws, "session-0")


def test_the_fallback_text_is_kept_and_made_again_when_a_baseline_file_changes(store):
    from dmm.agents.hook import FALLBACK_FILE, baseline_from_files

    ws = store.ws
    hour_ago = time.time_ns() - 3600 * 10**9  # text from a file this old is kept
    os.utime(ws.memory_dir / "baseline" / "deploys.md", ns=(hour_ago, hour_ago))
    first = baseline_from_files(ws)
    assert BASELINE in first and (ws.state_dir / FALLBACK_FILE).is_file()
    assert baseline_from_files(ws) == first  # kept
    store.add("baseline/deploys.md", "mem_2026_11_01_001", "Deploys go out on Tuesdays",
              "Every deploy goes out on Tuesday.", scope="baseline", tags="[deploy]")
    changed = baseline_from_files(ws)
    assert "Deploys go out on Tuesdays" in changed and BASELINE not in changed
    (ws.memory_dir / "baseline" / "deploys.md").unlink()
    assert baseline_from_files(ws) == ""


def test_the_kept_text_serves_another_install_of_the_same_dmm(store, tmp_path, monkeypatch):
    """The template is named by its content: the same templates at another place and time
    (a reinstall, a second checkout of the same version) find the text kept; another
    template's content does not."""
    import shutil

    from dmm import resources
    from dmm.agents import hook

    ws = store.ws
    hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(ws.memory_dir / "baseline" / "deploys.md", ns=(hour_ago, hour_ago))
    first = hook.baseline_from_files(ws)
    other = tmp_path / "templates"
    shutil.copytree(resources.resource_dir("templates"), other)  # new files, new times
    monkeypatch.setattr(resources, "resource_dir", lambda name: other)
    made = []
    monkeypatch.setattr(hook, "_baseline_text", lambda *a: made.append(a) or "made again")
    assert hook.baseline_from_files(ws) == first and not made
    template = other / "agent_pack.md.j2"
    template.write_text(template.read_text() + "\n")
    assert hook.baseline_from_files(ws) == "made again"


def test_a_baseline_edit_within_the_same_mtime_tick_is_never_answered_stale(store):
    """The kept text is keyed on each file's size and time: an edit of the same size that
    lands within the file system's time tick (a second on some) leaves both as they were, so
    text made from a file that recent is never kept (as the index re-reads such files)."""
    from dmm.agents.hook import baseline_from_files

    ws = store.ws
    path = ws.memory_dir / "baseline" / "deploys.md"
    before = path.stat()
    assert "hotfixes too" in baseline_from_files(ws)
    path.write_text(path.read_text().replace("hotfixes too", "hotfixes not"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same tick
    assert path.stat().st_size == before.st_size
    again = baseline_from_files(ws)
    assert "hotfixes not" in again and "hotfixes too" not in again


def test_the_fallback_reads_baseline_files_safely(store):
    """A link, a FIFO and bytes that are not UTF-8 in baseline/ (a clone can commit the first
    and the last) are skipped or reported by the store's own reading: the fallback answers
    the baseline it can read, never blocks and never follows a link out of the store."""
    from dmm.agents.hook import baseline_from_files

    folder = store.ws.memory_dir / "baseline"
    secret = store.root.parent / "secret.md"
    secret.write_text(store.ws.memory_dir.joinpath("baseline/deploys.md").read_text()
                      .replace("release train", "private ledger"))
    (folder / "linked.md").symlink_to(secret)
    os.mkfifo(folder / "pipe.md")
    (folder / "latin1.md").write_bytes(b"---\nid: mem_x\n---\n\n# Caf\xe9\n")
    text = baseline_from_files(store.ws)
    assert BASELINE in text and "private ledger" not in text and "Caf" not in text


def test_a_link_planted_in_the_sessions_folder_is_never_followed(store, tmp_path):
    """`<git-dir>/dmm/sessions/` holds plain empty files: a link planted under a session's
    name (a copied repository, another program) is neither taken as a delivery nor has its
    target's time touched; recording the session replaces it with a file."""
    from dmm.agents import sessions

    ws = store.ws
    sessions.record(ws, "someone-else")  # the folder exists
    target = tmp_path / "precious"
    target.write_text("the user's own file\n")
    os.utime(target, ns=(10**18, 10**18))
    planted = sessions._file(ws, "s9")
    planted.symlink_to(target)
    assert not sessions.delivered(ws, "s9")
    sessions.record(ws, "s9")
    assert target.stat().st_mtime_ns == 10**18 and target.read_text() == "the user's own file\n"
    assert not planted.is_symlink() and sessions.delivered(ws, "s9")
    long_and_odd = "../" * 60 + "\x00/\n"  # a hash names the file, whatever the id holds
    sessions.record(ws, long_and_odd[:sessions.MAX_ID])
    assert all("/" not in p.name and len(p.name) == 32
               for p in (ws.state_dir / sessions.FOLDER).iterdir())


def test_a_prompt_during_the_first_build_says_why_it_has_no_pack(store):
    """A session whose start delivered the baseline, prompting while another dmm builds the
    index for the first time, got an empty answer (the first-minute benchmark): nothing said
    that the memories beyond the baseline were not looked at. It says so in one line."""
    import fcntl

    from dmm.agents.hook import BUILDING
    from dmm.index import db

    (store.ws.state_dir / db.DB_NAME).unlink()  # never built: a new clone
    fd = os.open(store.ws.state_dir / db.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what another dmm building the cache holds
        start = hook(store.root, "session-start", {"session_id": "s9", "source": "startup"})
        assert BASELINE in start
        assert hook(store.root, "user-prompt-submit", prompt("s9")) == BUILDING
    finally:
        os.close(fd)
    pack = hook(store.root, "user-prompt-submit", prompt("s9"))  # built now: a pack
    assert PROJECT in pack and BASELINE not in pack
