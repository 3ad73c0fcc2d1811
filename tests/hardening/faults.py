"""Fault injection for tests: a slow git, a kill at a chosen step, hostile files.

Extend these rather than writing one-off tricks in a test:

- ``SlowGit``: a ``git`` wrapper placed first on PATH that, when its arguments contain a chosen
  string (e.g. ``"read-tree -m -u"`` or ``"update-ref --stdin"``), touches a marker file and
  sleeps before running the real git. It widens a race window to seconds, so a test can act
  inside it deterministically (wait for the marker, then act).
- ``start`` / ``kill_at``: run the real ``dmm`` in its own process group and send a signal to
  the whole group (dmm and the git it is running) the moment it reaches a git step.
- ``HOSTILE_FILES``: memory files that once hung, crashed or exhausted a command.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REAL_GIT = shutil.which("git")


class SlowGit:
    """A directory holding a ``git`` that sleeps before matching calls."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        script = folder / "git"
        script.write_text(
            "#!/bin/sh\n"
            "# slow-git: sleep before the chosen call, then run the real git\n"
            'case " $* " in\n'
            '  *"$DMM_SLOW_GIT_MATCH"*)\n'
            '    if [ -n "$DMM_SLOW_GIT_MATCH" ]; then\n'
            '      [ -n "$DMM_SLOW_GIT_MARKER" ] && : > "$DMM_SLOW_GIT_MARKER"\n'
            '      sleep "${DMM_SLOW_GIT_SECONDS:-3}"\n'
            "    fi ;;\n"
            "esac\n"
            f'exec {REAL_GIT} "$@"\n')
        script.chmod(0o755)

    def env(self, match: str, marker: Path, seconds: float = 3.0) -> dict:
        return {"PATH": f"{self.folder}{os.pathsep}{os.environ['PATH']}",
                "DMM_SLOW_GIT_MATCH": match, "DMM_SLOW_GIT_MARKER": str(marker),
                "DMM_SLOW_GIT_SECONDS": str(seconds)}


def start(*args: str, cwd: Path, env: dict | None = None) -> subprocess.Popen:
    """The real dmm command line in its own process group (so a signal reaches its git too)."""
    full = {**os.environ, **(env or {})}
    full.pop("DMM_DEBUG", None)
    return subprocess.Popen([sys.executable, "-m", "dmm", *args], cwd=cwd, env=full,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.02)


def kill_at(slow: SlowGit, match: str, *args: str, cwd: Path, tmp: Path,
            sig: int = signal.SIGKILL, group: bool = True) -> subprocess.CompletedProcess:
    """Run ``dmm args`` and send ``sig`` when it reaches the git call matching ``match``
    (to the whole process group, or only to dmm). Returns the finished process."""
    marker = tmp / f"reached-{time.monotonic_ns()}"
    proc = start(*args, cwd=cwd, env=slow.env(match, marker, seconds=5))
    wait_for(marker)
    if group:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def memory(mem_id: str, title: str, extra: str = "", body: str = "") -> str:
    return (f"---\nid: {mem_id}\ntags: [hostile]\nscope: project\npriority: 0.5\n"
            f"confidence: active\nstatus: active\n{extra}---\n\n# {title}\n\n"
            f"{body or title + '. A memory that exists for a test.'}\n")


def _alias_bomb() -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for n, name in enumerate("bcdefgh"):
        prev = "abcdefgh"[n]
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    # 9^8 leaves behind 369 bytes; a message that quotes the tags once printed 226 MB
    return "---\n" + "\n".join(lines) + "\nid: mem_2026_01_01_050\ntags: *h\n---\n# Bomb\n"


# name -> file content; each must be reported as a problem of that file only
HOSTILE_FILES: dict[str, str | bytes] = {
    "bad_month.md": memory("mem_2026_01_01_051", "Bad month", "created: 2026-13-45\n"),
    "year_zero.md": memory("mem_2026_01_01_052", "Year zero", "created: 0000-01-01\n"),
    "no_such_day.md": memory("mem_2026_01_01_053", "No such day", "expires: 2026-02-30\n"),
    "huge_priority.md": memory("mem_2026_01_01_054", "Huge priority").replace(
        "priority: 0.5", "priority: 1" + "0" * 400),
    "deep_nesting.md": "---\nid: " + "[" * 20000 + "]" * 20000 + "\n---\n# Deep\n",
    "alias_bomb.md": _alias_bomb(),
    "newline_id.md": memory("mem_2026_01_01_055", "Newline id").replace(
        "id: mem_2026_01_01_055", 'id: "mem_2026_01_01_001\\n"'),
    "arabic_digits.md": memory("mem_2026_01_01_05\u0663", "Arabic-Indic digit"),
    "binary.md": b"\x00\x01\x02 binary",
    "latin1.md": "---\nid: caf\xe9\n---\n".encode("latin-1"),
}
