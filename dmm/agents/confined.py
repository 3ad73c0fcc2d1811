"""The files `dmm agent setup` reads and writes, confined to the repository.

What a repository contains is untrusted: a committed `.mcp.json` or `CLAUDE.md` may be a link
to a file outside it (a secret that setup would copy into a file the user is told to commit),
a `.claude` folder may be a link to the user's own `~/.claude` (setup would change their global
settings), and a settings file may be a FIFO (reading it waits forever). So every path is
resolved first, and refused unless the real file lies inside the repository and outside
`.git`. A link that stays inside (the common `CLAUDE.md -> AGENTS.md`) is written through:
the link stays a link and its target gets the change.

IO boundary: files under the repository root, read without blocking, written atomically.
"""

from __future__ import annotations

import os
from pathlib import Path

from dmm.errors import InvalidInputError
from dmm.fsutil import write_atomic

MAX_BYTES = 1_048_576  # a settings or instructions file larger than this is not one


def real_path(root: Path, rel: str) -> Path:
    """The file ``rel`` names, links followed, refused unless it lies inside the repository
    (and not under .git)."""
    base = Path(os.path.realpath(root))
    target = Path(os.path.realpath(root / rel))
    linked = target != base / rel
    if not target.is_relative_to(base):
        raise InvalidInputError(
            f"{rel} leads outside the repository (to {target}) through a symbolic link: "
            "dmm agent setup writes only inside the repository",
            hint="replace the link with a real file or folder, or configure the agent by hand")
    if target == base / ".git" or target.is_relative_to(base / ".git"):
        raise InvalidInputError(f"{rel} is a link into .git/: dmm agent setup will not write "
                                "there", hint="replace the link with a real file")
    if linked and target.is_dir():
        raise InvalidInputError(f"{rel} is a link to a folder, not a file")
    return target


def read_text(path: Path, rel: str) -> str | None:
    """The UTF-8 text of ``path`` (already resolved), or None when it does not exist. A FIFO,
    a device, a folder, a file over MAX_BYTES or one that is not UTF-8 is refused."""
    from dmm.fsutil import UnreadableFile, read_regular

    try:
        raw = read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return None
    except UnreadableFile as exc:
        raise InvalidInputError(f"{rel} is not a file dmm agent setup will read or replace: "
                                f"{exc}", hint="remove it, then run setup again") from None
    except OSError as exc:
        raise InvalidInputError(f"{rel} cannot be opened: {exc.strerror}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{rel} is not UTF-8 text (byte {exc.start}): dmm agent setup "
                                "will not change it",
                                hint="convert it to UTF-8 (e.g. iconv -t UTF-8), then run "
                                     "setup again") from None


def write_text(path: Path, rel: str, text: str) -> None:
    """Replace ``path`` (already resolved) with ``text`` atomically; a read-only file is
    refused, never replaced."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not mode & 0o222:
        raise InvalidInputError(f"{rel} is read-only: dmm agent setup will not change it",
                                hint=f"make it writable (chmod u+w {rel}) if dmm may edit it, "
                                     "or add dmm's settings by hand")
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise InvalidInputError(f"{rel} cannot be written: {exc.strerror}") from None
