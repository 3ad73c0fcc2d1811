"""Where a repository's dmm files live: the one place that knows the .dmm/ layout.

``Workspace.find`` locates the repository from any subfolder (or ``-C PATH``) and checks that
``dmm init`` has run there. Every command starts here.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from dmm import config as config_mod
from dmm.errors import InvalidInputError, NotInitializedError, UnsafeStoreError
from dmm.gitdirs import LANDING_JOURNAL, STATE_DIR, known_git_dirs  # noqa: F401 - also here
from dmm.gitdirs import work_tree_root as _work_tree_root

DMM_DIR = ".dmm"
# The entries of .dmm/ that dmm reads or writes, and what each must be. What a repository
# holds is untrusted: a committed link in one of these places (a clone of someone's project, a
# merged branch) would make dmm read, and show to agents, a store or file outside the
# repository, or write outside it.
LAYOUT = ((DMM_DIR, stat.S_ISDIR), (f"{DMM_DIR}/memory", stat.S_ISDIR),
          (f"{DMM_DIR}/conflicts", stat.S_ISDIR), (f"{DMM_DIR}/BOOT.md", stat.S_ISREG),
          (f"{DMM_DIR}/config.toml", stat.S_ISREG))
# dmm's own state (caches, usage log, locks, socket, logs) lives in the git folder, where no
# commit can put anything: <git-dir>/dmm/ for what belongs to one work tree, and
# <git-common-dir>/dmm/ for what all work trees of a clone share (docs/guarantees.md, "Where
# dmm keeps its state"). Older versions kept it in .dmm/index/, which a commit can deliver: it
# is never read again (dmm.state migrates an untracked usage log and vector cache once).
# STATE_DIR, the name of that folder, is dmm.gitdirs's (the hook's short path reads it there).
OLD_INDEX_DIR = f"{DMM_DIR}/index"


@dataclass(frozen=True)
class Workspace:
    root: Path  # the git work tree
    # (git folder, common git folder) when git already said them (Workspace.find); else read
    # from .git on first use
    git_dirs_known: tuple[Path, Path] | None = field(default=None, compare=False, repr=False)

    @property
    def dmm_dir(self) -> Path:
        return self.root / DMM_DIR

    @property
    def memory_dir(self) -> Path:
        return self.dmm_dir / "memory"

    @property
    def state_dir(self) -> Path:
        """This work tree's state: the cache of its files, the cache's write lock, the
        background process's socket, lock and log (<git-dir>/dmm/)."""
        return self._git_dirs[0] / STATE_DIR

    @property
    def shared_state_dir(self) -> Path:
        """State every work tree of the clone shares: the usage log and the semantic vectors,
        keyed by text (<git-common-dir>/dmm/; the same folder as state_dir in the main work
        tree)."""
        return self._git_dirs[1] / STATE_DIR

    @cached_property
    def _git_dirs(self) -> tuple[Path, Path]:
        return self.git_dirs_known or git_dirs(self.root)

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
        root = _work_tree_root(start)
        if root is not None:
            ws = cls(root)
        else:
            from dmm import gitrepo  # subprocess and friends only when git must decide

            root, git_dir, common = gitrepo.locate(start)
            ws = cls(root, (git_dir, common))
        if require_init:
            ws.check_layout()
            if not ws.memory_dir.is_dir():
                raise NotInitializedError(f"no dmm memory store in {ws.root}",
                                          hint="run `dmm init` to create .dmm/")
        return ws

    def check_layout(self) -> None:
        """Refuse a store whose own entries (.dmm, memory/, conflicts/, BOOT.md, config.toml)
        are symbolic links or of the wrong kind. Costs one lstat per entry, so long-lived
        servers run it before every call: a merge may swap a folder for a link while they
        run."""
        for rel, is_kind in LAYOUT:
            path = self.root / rel
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise UnsafeStoreError(f"cannot inspect {rel}: {exc.strerror or exc}") from None
            if stat.S_ISLNK(mode):
                raise UnsafeStoreError(
                    f"{rel} is a symbolic link (to {_link_target(path)}): dmm reads and writes "
                    "only the store inside this repository, so it refuses to follow it",
                    hint=f"if you did not put it there, someone's commit did: look at "
                         f"`git log -- {rel}`, then replace the link with the real "
                         f"{'folder' if is_kind is stat.S_ISDIR else 'file'} "
                         f"(`git rm {rel}`, then `dmm init` recreates what is missing)")
            if not is_kind(mode):
                kind = "a folder" if is_kind is stat.S_ISDIR else "a file"
                raise UnsafeStoreError(f"{rel} is not {kind}",
                                       hint=f"move it away; `dmm init` recreates {rel}")

    def landing_pending(self) -> bool:
        """Cheap test, without starting git: may a dmm landing have stopped half way here?"""
        return (self._git_dirs[0] / LANDING_JOURNAL).exists()

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


def _link_target(path: Path) -> str:
    try:
        return repr(os.readlink(path))
    except OSError:
        return "somewhere"


def git_dirs(root: Path) -> tuple[Path, Path]:
    """(git folder, common git folder) of the work tree at ``root``, read as git reads them
    and without starting git where it can be (dmm/gitdirs.py); git decides when GIT_DIR or
    GIT_WORK_TREE redirect it, or when .git is neither a folder nor a link file."""
    found = known_git_dirs(root)
    if found is not None:
        return found
    from dmm import gitrepo

    _, git_dir, common = gitrepo.locate(root)
    return git_dir, common
