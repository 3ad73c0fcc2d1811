"""The one memory loader: finds memory files on disk and reads them safely.

IO boundary for .dmm/memory/. Files are listed with their size and mtime (the cache's freshness
key) and read one by one; binary, non-UTF-8, oversized and symlinked files become Problems
instead of exceptions, so one bad file never breaks a command.
"""

from __future__ import annotations

import os
from pathlib import Path

from dmm.memory import Memory, Problem

IGNORED_NAMES = {".gitkeep", ".gitignore", ".DS_Store"}


FileStat = tuple[int, int]  # (size, mtime_ns): plain tuples, cheap to build, compare and marshal


def scan(memory_dir: Path) -> dict[str, FileStat]:
    """Every file under ``memory_dir`` (relative posix path -> (size, mtime_ns)).

    Hidden files and folders are skipped. This runs on every command, so it stays lean: one
    scandir per folder and one lstat per file.
    """
    found: dict[str, FileStat] = {}
    stack = [(memory_dir, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = entry.name
                if name.startswith(".") or name in IGNORED_NAMES:
                    continue
                rel = prefix + name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((Path(entry.path), rel + "/"))
                    else:
                        st = entry.stat(follow_symlinks=False)
                        found[rel] = (st.st_size, st.st_mtime_ns)
                except OSError:
                    found[rel] = (-1, -1)
    return found


def read(memory_dir: Path, rel: str, max_bytes: int) -> tuple[Memory | None, list[Problem]]:
    """Read and parse one memory file; never raises for bad content."""
    path = memory_dir / rel
    if not rel.endswith(".md"):
        return None, [Problem(rel, "not a memory file (memory files end in .md)",
                              severity="warning")]
    if path.is_symlink():
        return None, [Problem(rel, "symbolic links are not followed in the memory store")]
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return None, [Problem(rel, f"file is {size} bytes; the limit is {max_bytes} "
                                       "(store.max_file_bytes): split it into smaller memories")]
        data = path.read_bytes()
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
