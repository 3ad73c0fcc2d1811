"""Where a repository's dmm files live: the one place that knows the .dmm/ layout.

``Workspace.find`` locates the repository from any subfolder (or ``-C PATH``) and checks that
``dmm init`` has run there. Every command starts here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from dmm import config as config_mod
from dmm.errors import InvalidInputError, NotInitializedError

DMM_DIR = ".dmm"
LANDING_JOURNAL = "dmm-landing.json"  # in the git folder while dmm.landing moves a branch


@dataclass(frozen=True)
class Workspace:
    root: Path  # the git work tree

    @property
    def dmm_dir(self) -> Path:
        return self.root / DMM_DIR

    @property
    def memory_dir(self) -> Path:
        return self.dmm_dir / "memory"

    @property
    def index_dir(self) -> Path:
        return self.dmm_dir / "index"

    @property
    def conflicts_dir(self) -> Path:
        return self.dmm_dir / "conflicts"

    @property
    def config_path(self) -> Path:
        return self.dmm_dir / "config.toml"

    @cached_property
    def config(self) -> dict:
        return config_mod.load(self.config_path)

    @classmethod
    def find(cls, start: Path | None = None, require_init: bool = True) -> "Workspace":
        start = (start or Path.cwd()).resolve()
        ws = cls(_work_tree_root(start) or _ask_git(start))
        if require_init and not ws.memory_dir.is_dir():
            raise NotInitializedError(f"no dmm memory store in {ws.root}",
                                      hint="run `dmm init` to create .dmm/")
        return ws

    def landing_pending(self) -> bool:
        """Cheap test, without starting git: may a dmm landing have stopped half way here?
        (True for linked work trees, whose git folder only git can tell.)"""
        dot_git = self.root / ".git"
        if dot_git.is_dir():
            return (dot_git / LANDING_JOURNAL).exists()
        return dot_git.is_file()

    def memory_relpath(self, path: str | Path, cwd: Path | None = None) -> str:
        """Normalise a path given by a user to a path relative to .dmm/memory/.

        Accepts a path relative to .dmm/memory/, to the repository root, to ``cwd``, or
        absolute; refuses anything that resolves outside .dmm/memory/.
        """
        raw = Path(path)
        candidates = [raw] if raw.is_absolute() else [
            (cwd or Path.cwd()) / raw, self.root / raw, self.memory_dir / raw]
        memory_dir = self.memory_dir.resolve()
        for cand in candidates:
            resolved = cand.resolve()
            if resolved.is_relative_to(memory_dir) and resolved.exists():
                return resolved.relative_to(memory_dir).as_posix()
        # a file that does not exist (yet, or any more): from the current folder when the
        # user stands inside .dmm/memory/ or writes ./ or ../, from the root when it names
        # .dmm/memory/, else relative to .dmm/memory/
        here = (cwd or Path.cwd()).resolve()
        text = str(path).replace("\\", "/")
        if raw.is_absolute():
            base = raw
        elif here.is_relative_to(memory_dir) or text.startswith(("./", "../")) or text in (
                ".", ".."):
            base = here / raw
        elif raw.parts[:2] == (DMM_DIR, "memory"):
            base = self.root / raw
        else:
            base = self.memory_dir / raw
        resolved = base.resolve()
        if not resolved.is_relative_to(memory_dir):
            raise InvalidInputError(f"{path} is outside {DMM_DIR}/memory/ (from {here})",
                                    hint="name a memory relative to .dmm/memory/, e.g. "
                                         "project/api/errors.md, or by its id")
        return resolved.relative_to(memory_dir).as_posix()


def _ask_git(start: Path) -> Path:
    from dmm import gitrepo  # subprocess and friends only when git must decide

    return gitrepo.toplevel(start)


def _work_tree_root(start: Path) -> Path | None:
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
