"""Where dmm is installed, as the agents will find it (issue 28, section 6): the files
`dmm agent setup` writes call a bare `dmm`, which is right for a team whose members install dmm
on their PATH, and wrong when it lives in a project virtualenv (as the README's quickstart
does), which the agent's shell may not have activated. Setup compares the `dmm` an agent would
find with the one running now, and says what to do.

Pure apart from reading PATH and the file system.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Where:
    running: Path | None  # the dmm console script running now (None: `python -m dmm`)
    on_path: Path | None  # what a bare `dmm` finds on PATH, outside the repository
    inside_repo: bool  # the running dmm lies inside the repository (a project virtualenv)

    @property
    def mismatch(self) -> bool:
        """A bare `dmm` would not run this dmm (or nothing at all)."""
        if self.on_path is None:
            return True
        return self.running is not None and _real(self.running) != _real(self.on_path)

    @property
    def command(self) -> str:
        """The absolute command for the user's local settings."""
        return str(self.running) if self.running else f"{sys.executable} -m dmm"

    def advice(self) -> str:
        if self.on_path is None:
            found = "no `dmm` is on PATH outside this repository"
        else:
            found = f"`dmm` on PATH is {self.on_path}"
        return (f"the agent will run a bare `dmm`, and {found}, not the dmm running now "
                f"({self.command})")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def running_dmm() -> Path | None:
    """The console script that started this process, when it is one."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "dmm" and argv0.exists():
        return Path(os.path.abspath(argv0))
    script = Path(sys.executable).parent / "dmm"
    return script if script.exists() else None


def where(root: Path) -> Where:
    running = running_dmm()
    base = _real(root)
    on_path = None
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue  # `.` or a relative entry: the hook's guard refuses those too
        if _real(Path(entry)).is_relative_to(base):
            continue
        found = shutil.which("dmm", path=entry)
        if found:
            on_path = Path(found)
            break
    inside = running is not None and _real(running).is_relative_to(base)
    return Where(running, on_path, inside)
