"""Atomic file writes under .dmm/: a reader never sees half a file, and nothing is overwritten
unless the caller says so."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _temp_beside(path: Path, text: str, mode: int) -> str:
    """A temporary file next to ``path`` holding ``text`` with ``mode``; its name."""
    import tempfile  # only when writing: every command imports this module, few write

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".dmm-tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)  # mkstemp makes 0600
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def write_new(path: Path, text: str) -> bool:
    """Create ``path`` with ``text`` atomically; return False (and write nothing) if it exists."""
    tmp = _temp_beside(path, text, 0o666 & ~_umask())
    try:
        os.link(tmp, path)  # atomic, and fails if the file appeared meanwhile
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)


@contextlib.contextmanager
def file_lock(path: Path, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (created if needed) for the duration of the block;
    ``wait`` False: raise BlockingIOError at once when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        yield
    finally:
        os.close(fd)  # closing releases the lock


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (a reader sees the old file or the new one),
    keeping its mode."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
    tmp = _temp_beside(path, text, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
