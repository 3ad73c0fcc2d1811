"""Where a work tree's git folders are, read as git reads them and without starting git: a
.git folder is both the git folder and the common one; a .git file (linked work trees,
submodules) names the git folder (``gitdir: PATH``), whose ``commondir`` file, if any, names
the common one. Standard library only: dmm.workspace asks it (and has git decide when it
cannot), and so does the prompt hook's short path (dmm/background/quick.py), which never
loads the settings' parser."""

from __future__ import annotations

import os
from pathlib import Path

STATE_DIR = "dmm"  # dmm's state in a git folder (dmm.workspace: what each one holds)
LANDING_JOURNAL = "dmm-landing.json"  # in the git folder while dmm.landing moves a branch


def known_git_dirs(root: Path) -> tuple[Path, Path] | None:
    """(git folder, common git folder) of the work tree at ``root``; None when git must
    decide (GIT_DIR or GIT_WORK_TREE redirect it, or .git is neither)."""
    if "GIT_DIR" in os.environ or "GIT_WORK_TREE" in os.environ:
        return None
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git, dot_git
    found = _linked_git_dir(dot_git)
    if found is not None:
        return found, _common_dir(found)
    return None


def _first_line(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline(4096).rstrip("\r\n")
    except (OSError, UnicodeDecodeError):
        return None


def _linked_git_dir(dot_git: Path) -> Path | None:
    line = _first_line(dot_git) if dot_git.is_file() else None
    if not line or not line.startswith("gitdir: "):
        return None
    folder = (dot_git.parent / line[len("gitdir: "):]).resolve()  # relative: from .git's folder
    return folder if folder.is_dir() else None


def _common_dir(git_dir: Path) -> Path:
    line = _first_line(git_dir / "commondir")
    # relative to the git folder, as git reads it
    return (git_dir / line).resolve() if line else git_dir


def work_tree_root(start: Path) -> Path | None:
    """The nearest folder holding .git (a folder, or a file in worktrees and submodules).

    Saves starting a git process on every command. Returns None when git must decide: when
    GIT_DIR or GIT_WORK_TREE redirect it, or when no .git is found (git then says why).
    """
    if "GIT_DIR" in os.environ or "GIT_WORK_TREE" in os.environ:
        return None
    for folder in (start, *start.parents):
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
    return None
