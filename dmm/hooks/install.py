"""Install dmm's post-commit, post-merge and post-rewrite shims into a repository's hooks folder.

The folder comes from `git rev-parse --git-path hooks`, so core.hooksPath is respected. A
foreign hook already there is renamed to <hook>.legacy and run first by the shim; uninstalling
puts it back. Shims carry a marker line, so dmm never mistakes someone else's hook for its own.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from dmm.errors import InvalidInputError
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
    """How a shim starts this dmm: the interpreter it is installed in."""
    return f"{shlex.quote(sys.executable)} -m dmm"


def render(name: str) -> str:
    template = (resource_dir("hooks") / "dmm-hook.sh").read_text(encoding="utf-8")
    return template.replace("@HOOK@", name).replace("@DMM@", dmm_command())


def status(git: Git) -> list[HookState]:
    folder = hooks_dir(git)
    out = []
    for name in HOOKS:
        path = folder / name
        state = "absent" if not path.exists() else "installed" if _is_ours(path) else "foreign"
        out.append(HookState(name, str(path), state, (folder / f"{name}.legacy").exists()))
    return out


def install(git: Git) -> list[HookState]:
    folder = hooks_dir(git)
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        path = folder / name
        legacy = folder / f"{name}.legacy"
        if path.exists() and not _is_ours(path):
            if legacy.exists():
                raise InvalidInputError(f"{path} is not dmm's and {legacy} already exists: "
                                        "dmm will not overwrite either",
                                        hint="merge them by hand, then run dmm hooks install")
            os.replace(path, legacy)
        tmp = folder / f".{name}.dmm-tmp"
        tmp.write_text(render(name), encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, path)
    return status(git)


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
