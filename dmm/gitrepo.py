"""The only module that talks to git: it runs git as a subprocess and returns plain values.

The foundation needs little from git (where the repository is); proposals, hooks and the audit
log add their plumbing here so that every git call has one home.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from dmm.errors import GitError, NotARepositoryError


def run(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``git args`` in ``cwd``; raise GitError with git's own message when it fails."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH") from exc
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


def toplevel(start: Path) -> Path:
    """The work tree root of the repository containing ``start``."""
    if not start.is_dir():
        raise NotARepositoryError(f"{start} is not a directory")
    proc = run(["rev-parse", "--show-toplevel"], start, check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        msg = proc.stderr.strip()
        if "not a git repository" in msg or not msg:
            raise NotARepositoryError(
                f"{start} is not inside a git repository",
                hint="dmm keeps memory in a git repository: run `git init` first, "
                     "or point dmm at one with -C PATH")
        raise NotARepositoryError(f"cannot use the repository at {start}: {msg}")
    return Path(proc.stdout.strip())
