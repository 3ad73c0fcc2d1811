"""Where dmm is installed (issue 28, section 6; issue 36, item 7): a bare `dmm` is wrong when
dmm lives in a project virtualenv (as the README's quickstart does), which no agent's shell
has activated, and even a PATH that has it may not reach the agent (Codex's shell is a login
shell, which resets PATH). So `dmm agent setup` writes the absolute path of the dmm running
(else the one on PATH) into every file it configures, and says so.

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

    @property
    def executable(self) -> str | None:
        """The absolute path of the dmm to write into an agent's settings: the one running,
        else the one on PATH (None: neither is a console script, `python -m dmm`)."""
        found = self.running or self.on_path
        return str(found) if found else None


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
    """The dmm to name, never one inside the repository ``root`` (a virtualenv in the work
    tree too): a branch can commit that script, and git checks out a committed file over an
    ignored one, so every session's hook and MCP server would run the branch's code."""
    running = running_dmm()
    base = _real(root)
    if running is not None and _real(running.parent).is_relative_to(base):
        running = None
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
    return Where(running, on_path)
