"""Shared benchmark helpers: the dmm command, whole-process timing, a repository with a
synthetic store, and byte-compiling the package the way a wheel install would."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from generate import generate

# The console script a user runs, from the same environment as this interpreter.
DMM = [str(Path(sys.executable).parent / "dmm")]
# Tasks that agents ask (the synthetic store answers each).
TASKS = ["add retries with backoff to the partner client", "how are invoices numbered",
         "which database migrations need a review", "rotate the api keys of a service"]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


def timed(cmd: list[str], cwd: Path) -> tuple[float, int]:
    """Wall time (s) and peak RSS (KiB) of one process."""
    import time

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()}")
    return elapsed, usage.ru_maxrss


def make_repo(root: Path, size: int) -> list[Path]:
    """A git repository at ``root`` with dmm initialised (no hooks) and ``size`` synthetic
    memories committed; returns the memory files."""
    run = lambda *c: subprocess.run(c, cwd=root, check=True, capture_output=True)  # noqa: E731
    run("git", "init", "-q", "-b", "main")
    run("git", "config", "user.name", "bench")
    run("git", "config", "user.email", "bench@example.com")
    run(*DMM, "init", "--no-hooks")
    files = generate(root / ".dmm" / "memory", size)
    run("git", "add", "-A")
    run("git", "commit", "-qm", "store")
    return files


@contextlib.contextmanager
def warm_store(size: int, prefix: str) -> Iterator[Path]:
    """A temporary repository with ``size`` memories and a warm cache, removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        root = tmp / "repo"
        root.mkdir()
        make_repo(root, size)
        timed([*DMM, "query", "warm the cache"], root)
        yield root
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def byte_compile() -> None:
    """An installed wheel ships byte-compiled modules; an editable checkout run with
    PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module on every command."""
    import compileall

    import dmm

    compileall.compile_dir(Path(dmm.__file__).parent, quiet=1)
