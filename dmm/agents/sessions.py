"""Which agent sessions have received the baseline memories (issue 36, item 3): the
`SessionStart` hook delivers them once per session, and when it could not (it answered late,
or not at all), the first prompt's pack of that session carries them instead. A session is
the ``session_id`` the client passes in every hook's JSON (Claude Code and Codex do); a hook
without one cannot be followed, and its prompts' packs carry no baseline, as before.

IO boundary: ``<git-dir>/dmm/sessions/`` (this work tree's state, where no commit can put a
file): one empty file per session that received the baseline, named by a hash of the session
id (an agent's text never becomes a path). Creating a file is atomic (it exists whole or not
at all, and two hooks of one session writing at once agree); the folder keeps the newest
MAX_SESSIONS files, the oldest go first. Only plain files count: a link planted there is never
followed (read, touched or written through). A failure to read or write it never fails a hook:
the session then gets the baseline again, which costs tokens and loses nothing.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from dmm.workspace import Workspace

FOLDER = "sessions"
MAX_SESSIONS = 256  # sessions remembered; a week of a busy person's sessions
MAX_ID = 200  # characters of a session id (Claude Code's and Codex's are UUIDs)


def session_of(payload: dict) -> str | None:
    """The session a hook's JSON names, or None."""
    value = payload.get("session_id")
    if isinstance(value, str) and 0 < len(value.strip()) <= MAX_ID:
        return value.strip()
    return None


def _file(ws: Workspace, session: str) -> Path:
    digest = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return ws.state_dir / FOLDER / digest


def delivered(ws: Workspace, session: str | None) -> bool:
    """Whether ``session`` has received the baseline (False when unknown or unreadable)."""
    if session is None:
        return False
    try:  # a plain file dmm made, never what a link planted there points to
        return stat.S_ISREG(os.lstat(_file(ws, session)).st_mode)
    except OSError:
        return False


def record(ws: Workspace, session: str | None) -> None:
    """Remember that ``session`` received the baseline."""
    if session is None:
        return
    from dmm.fsutil import create_file, state_folder

    try:
        folder = state_folder(state_folder(ws.state_dir) / FOLDER)
        path = folder / _file(ws, session).name
        if delivered(ws, session):
            os.utime(path, follow_symlinks=False)  # the newest again: pruned last
            return
        create_file(path, b"")  # replaces a link standing there, never writes through it
        _prune(folder)
    except OSError:
        pass


def forget(ws: Workspace, session: str | None) -> None:
    """``session`` no longer holds the baseline (cleared or compacted): it is owed again."""
    if session is None:
        return
    try:
        _file(ws, session).unlink(missing_ok=True)
    except OSError:
        pass


def _prune(folder: Path) -> None:
    """Keep the newest MAX_SESSIONS files."""
    with os.scandir(folder) as entries:
        found = []
        for entry in entries:
            try:
                found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
            except OSError:
                continue
    if len(found) <= MAX_SESSIONS:
        return
    found.sort()
    for _, path in found[:len(found) - MAX_SESSIONS]:
        try:
            os.unlink(path)
        except OSError:
            pass
