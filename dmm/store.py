"""The one memory loader: finds memory files on disk and reads them safely.

IO boundary for .dmm/memory/. Files are listed with their size and mtime (the cache's freshness
key) and read one by one; binary, non-UTF-8, oversized and symlinked files become Problems
instead of exceptions, so one bad file never breaks a command.
"""

from __future__ import annotations

import os
from pathlib import Path

from dmm.fsutil import UnreadableFile, read_regular
from dmm.memory import Memory, Problem
from dmm.priority import step_aside

FileStat = tuple[int, int]  # (size, mtime_ns): plain tuples, cheap to build, compare and marshal
# A file modified this recently may change again within the same mtime tick (a second on some
# file systems) keeping its size: (size, mtime_ns) cannot yet tell the two apart, so whatever
# is kept under that key (the index's rows, the hook's baseline text) is made again next time.
RACY_NS = 2_000_000_000
# stat each file relative to its open folder where the platform allows it (not on Windows)
_BY_FD = (os.stat in os.supports_dir_fd and os.scandir in os.supports_fd
          and hasattr(os, "O_DIRECTORY"))


def scan(memory_dir: Path) -> dict[str, FileStat]:
    """Every file under ``memory_dir`` (relative posix path -> (size, mtime_ns)).

    Hidden files and folders are skipped. This runs on every command, so it stays lean: one
    scandir per folder and one lstat per file, relative to the open folder where the platform
    allows it (the kernel then resolves one name, not the whole path: 15 % faster at 10,000
    files).
    """
    found: dict[str, FileStat] = {}
    stack = [(str(memory_dir), "")]
    while stack:
        step_aside()  # a request being answered first (dmm/priority.py)
        folder, prefix = stack.pop()
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY) if _BY_FD else None
        except OSError:
            continue
        try:
            _scan_folder(folder, fd, prefix, found, stack)
        except OSError:  # the folder went away or cannot be read: what it held is gone
            pass
        finally:
            if fd is not None:
                os.close(fd)
    return found


def _scan_folder(folder: str, fd: int | None, prefix: str, found: dict[str, FileStat],
                 stack: list[tuple[str, str]]) -> None:
    with os.scandir(folder if fd is None else fd) as entries:
        for entry in entries:
            name = entry.name
            if name.startswith("."):  # hidden files and folders, .gitkeep, .DS_Store
                continue
            rel = prefix + (name if name.isascii() else _printable(name))
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((os.path.join(folder, name), rel + "/"))
                else:
                    st = (entry.stat(follow_symlinks=False) if fd is None else
                          os.stat(name, dir_fd=fd, follow_symlinks=False))
                    found[rel] = (st.st_size, st.st_mtime_ns)
            except OSError:
                found[rel] = (-1, -1)


def _printable(name: str) -> str:
    """A file name as text: names that are not valid UTF-8 (which git, SQLite and JSON cannot
    carry) get their bad bytes written as \\xNN, so such a file is reported, never crashes."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def read(memory_dir: Path, rel: str, max_bytes: int) -> tuple[Memory | None, list[Problem]]:
    """Read and parse one memory file; never raises for bad content, never blocks.

    Only regular files are read (fsutil.read_regular): a FIFO, socket or device named like a
    memory would hang or stream forever, and a link could point outside the repository.
    """
    if not rel.endswith(".md"):
        if os.path.islink(memory_dir / rel):  # a linked folder would hide what it holds
            return None, [Problem(rel, "a symbolic link, which dmm does not follow: memory "
                                       "files and folders are plain ones in the repository")]
        return None, [Problem(rel, "not a memory file (memory files end in .md)",
                              severity="warning")]
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        return None, [Problem(shown, "the file name is not valid UTF-8: rename it")]
    try:
        data = read_regular(memory_dir / rel, max_bytes)
    except UnreadableFile as exc:
        hint = (": split it into smaller memories (store.max_file_bytes)"
                if "limit" in str(exc) else ": memory files are plain text files")
        return None, [Problem(rel, f"{exc}{hint}")]
    except FileNotFoundError:
        if "\\x" in rel:
            return None, [Problem(rel, "the file name is not valid UTF-8: rename it")]
        return None, [Problem(rel, "the file went away while it was being read")]
    except OSError as exc:
        return None, [Problem(rel, f"cannot read the file: {exc.strerror or exc}")]
    if b"\0" in data:
        return None, [Problem(rel, "binary file: memory files must be UTF-8 text")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [Problem(rel, f"not valid UTF-8 (byte {exc.start}): save it as UTF-8")]
    from dmm.memory.parse import parse_memory  # PyYAML only when a file must be read

    return parse_memory(text, rel)


def text_of(memory_dir: Path, rel: str, max_bytes: int) -> str:
    """The text of the memory file ``rel`` as it is on disk now (`dmm show`, the MCP memory
    resource), read as safely as ``read`` reads it; InvalidInputError when it cannot be."""
    from dmm.errors import InvalidInputError

    try:
        return read_regular(memory_dir / rel, max_bytes).decode("utf-8")
    except (UnreadableFile, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{rel} cannot be shown: {exc}",
                                hint="`dmm validate` explains what is wrong with it") from None
    except OSError as exc:
        raise InvalidInputError(f"{rel} cannot be read: {exc.strerror or exc}") from None
