"""Files dmm writes and reads: atomic writes (a reader never sees half a file, and nothing is
overwritten unless the caller says so), safe reads (regular files only, never through a link,
bounded), and the one way dmm opens its own state files for writing (never through a link)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
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


class LinkRefused(OSError):
    """A file or folder dmm was about to write is a symbolic link; dmm never writes through
    one (it could point anywhere: another project's files, a shell start-up file)."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.ELOOP, f"{path} is a symbolic link, and dmm never writes "
                                      "through a link")
        self.filename = str(path)

    def __str__(self) -> str:
        return self.strerror


def open_nofollow(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` for writing a file of dmm's own (a lock, a log): never through a link at
    its last component (raises LinkRefused), and not inherited by child processes."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkRefused(path) from None
        raise


def create_file(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``path`` as a new file (``O_CREAT|O_EXCL``: never through a link,
    never into a file that exists; whatever stood there, a link included, is removed first).
    For temporary files named in advance, renamed into place by the caller."""
    path.unlink(missing_ok=True)  # removes a link itself, never what it points to
    fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def refuse_link(path: Path) -> None:
    """Raise LinkRefused when ``path`` is a symbolic link (a missing one is fine). For files
    that another library opens by name (SQLite), checked just before it does."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise LinkRefused(path)
    except FileNotFoundError:
        pass


def state_folder(path: Path) -> Path:
    """The folder ``path`` of dmm's own state, made (private to this user) when missing; its
    parent must exist (the git folder). Raises LinkRefused when it is a link and
    NotADirectoryError when it is not a folder."""
    try:
        os.mkdir(path, 0o700)  # the usage log holds the tasks people typed: not for others
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise LinkRefused(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, f"{path} is not a folder")
    return path


@contextlib.contextmanager
def file_lock(path: Path, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (created if needed, never through a link) for the
    duration of the block; ``wait`` False: raise BlockingIOError at once when another process
    holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = open_nofollow(path, os.O_RDWR | os.O_CREAT, 0o644)
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


class UnreadableFile(Exception):
    """A file dmm will not read: a symbolic link, a pipe, socket or device, or one too large.
    The message says which, in words a user can act on."""


def read_regular(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, read without following a link at its last
    component and without blocking (a FIFO would hang, a device stream forever), at most
    ``max_bytes``. What a repository holds is untrusted: a committed link named like one of
    dmm's files would otherwise make dmm read, and show, a file outside the repository.
    Raises FileNotFoundError when it is missing and UnreadableFile when dmm refuses it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnreadableFile("it is a symbolic link, which dmm does not follow") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile("it is not a regular file (a folder, pipe, socket or device)")
        if st.st_size > max_bytes:
            raise UnreadableFile(f"it is {st.st_size} bytes; the limit is {max_bytes}")
        data = os.read(fd, max_bytes + 1)
        while len(data) <= max_bytes:
            more = os.read(fd, max_bytes + 1 - len(data))
            if not more:
                break
            data += more
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UnreadableFile(f"it grew past the limit of {max_bytes} bytes while being read")
    return data
