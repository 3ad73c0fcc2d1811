"""Install dmm's post-commit, post-merge and post-rewrite shims into a repository's hooks folder.

The folder comes from `git rev-parse --git-path hooks`, so core.hooksPath is respected. A
foreign hook already there is renamed to <hook>.legacy and run first by the shim; uninstalling
puts it back. Shims carry a marker line, so dmm never mistakes someone else's hook for its own.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from dmm.errors import InvalidInputError
from dmm.fsutil import create_file
from dmm.gitrepo import Git
from dmm.resources import resource_dir

HOOKS = ("post-commit", "post-merge", "post-rewrite")
MARKER = "# dmm-hook:"


@dataclass
class HookState:
    name: str
    path: str
    state: str  # installed | foreign | absent
    legacy: bool  # a previous hook is chained as <name>.legacy

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def hooks_dir(git: Git) -> Path:
    return git.git_path("hooks")


def _is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")[:300]
    except OSError:
        return False


def dmm_command() -> str:
    """The console script of this dmm, for the shim (which falls back to `dmm` on PATH when
    it is gone). Never `python -m dmm`: run from the repository root, that would import a
    dmm/ package the repository itself contains."""
    script = Path(sys.executable).with_name("dmm")
    found = str(script) if script.is_file() else shutil.which("dmm") or ""
    return shlex.quote(found if os.path.isabs(found) else "")


class HooksInWorkTreeError(InvalidInputError):
    """core.hooksPath names a folder the repository tracks: dmm writes nothing there."""


def _tracked_hooks_folder(git: Git, folder: Path) -> bool:
    root = git.root.resolve()
    where = folder.resolve()
    if not where.is_relative_to(root) or where.is_relative_to(git.common_dir().resolve()):
        return False
    rel = where.relative_to(root).as_posix()
    return bool(git.out("ls-files", "--", rel or "."))


def render(name: str) -> str:
    template = (resource_dir("hooks") / "dmm-hook.sh").read_text(encoding="utf-8")
    return template.replace("@HOOK@", name).replace("@DMM@", dmm_command())


def status(git: Git) -> list[HookState]:
    """Each hook's state; a dmm shim that another hook manager (the pre-commit framework)
    moved to <hook>.legacy and runs from its own hook counts as installed."""
    folder = hooks_dir(git)
    out = []
    for name in HOOKS:
        path, legacy = folder / name, folder / f"{name}.legacy"
        state = ("absent" if not path.exists() else
                 "installed" if _is_ours(path) or _is_ours(legacy) else "foreign")
        out.append(HookState(name, str(path), state, legacy.exists()))
    return out


def install(git: Git) -> list[HookState]:
    folder = hooks_dir(git)
    if _tracked_hooks_folder(git, folder):
        rel = folder.resolve().relative_to(git.root.resolve()).as_posix()
        raise HooksInWorkTreeError(
            f"core.hooksPath points at {rel}/, a folder this repository tracks: dmm does not "
            "change tracked files",
            hint=f"add this line to {rel}/post-commit, post-merge and post-rewrite (each with "
                 "its own hook name) and commit it: dmm hooks run post-commit || true")
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        path = folder / name
        legacy = folder / f"{name}.legacy"
        if _is_ours(legacy) and path.exists() and not _is_ours(path):
            # another hook manager chains our shim: refresh it where it is
            _write_shim(legacy, name)
            continue
        if path.exists() and not _is_ours(path):
            if legacy.exists():
                raise InvalidInputError(f"{path} is not dmm's and {legacy} already exists: "
                                        "dmm will not overwrite either",
                                        hint="merge them by hand, then run dmm hooks install")
            os.replace(path, legacy)
        _write_shim(path, name)
    return status(git)


def _write_shim(path: Path, name: str) -> None:
    tmp = path.with_name(f".{name}.dmm-tmp")
    create_file(tmp, render(name).encode("utf-8"), 0o755)
    tmp.chmod(0o755)  # whatever the umask
    os.replace(tmp, path)


def uninstall(git: Git) -> list[HookState]:
    folder = hooks_dir(git)
    for name in HOOKS:
        path = folder / name
        legacy = folder / f"{name}.legacy"
        if path.exists() and _is_ours(path):
            path.unlink()
            if legacy.exists():
                os.replace(legacy, path)
    return status(git)
