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


# Committed symbolic links at every level of .dmm/ (issue 26, item 1): each replaces what
# stands there with a link to the same kind of thing outside the repository, holding SECRET.
# A store, a file or a folder outside must never be read, shown or written through them.
SECRET = "hunter2-from-outside-the-repository"
LINK_PLACES = (".dmm", ".dmm/memory", ".dmm/memory/project", ".dmm/memory/project/node18.md",
               ".dmm/conflicts", ".dmm/conflicts/conflict_0123456789ab.json", ".dmm/BOOT.md",
               ".dmm/config.toml", ".dmm/index")


def outside_store(folder: Path) -> Path:
    """A dmm store outside any repository whose every file carries SECRET."""
    dmm = folder / ".dmm"
    (dmm / "memory" / "project").mkdir(parents=True, exist_ok=True)
    (dmm / "conflicts").mkdir(exist_ok=True)
    (dmm / "index").mkdir(exist_ok=True)
    (dmm / "memory" / "project" / "secret.md").write_text(memory(
        "mem_2026_01_01_099", "Production database password",
        body=f"The production database password is {SECRET}; keep it out of the repository."))
    (dmm / "memory" / "project" / "node18.md").write_text(memory(
        "mem_2025_05_06_001", "The frontend build requires Node.js 18",
        body=f"Install Node.js 18. {SECRET}"))
    (dmm / "conflicts" / "conflict_0123456789ab.json").write_text(
        '{"conflict_id": "conflict_0123456789ab", "memories": ["mem_2025_05_06_001", '
        f'"mem_2026_02_11_002"], "status": "flagged", "description": "{SECRET}"}}\n')
    (dmm / "BOOT.md").write_text(f"# Outside instructions\n\n{SECRET}\n")
    (dmm / "config.toml").write_text(f'# {SECRET}\n[query]\ndefault_budget = 1200\n')
    return dmm


def plant_link(root: Path, place: str, outside: Path, relative: bool = False) -> Path:
    """Replace ``place`` (a path from the repository root) with a link to the same entry of the
    outside store, absolute or relative; returns the link."""
    link = root / place
    target = outside / Path(place).relative_to(".dmm") if place != ".dmm" else outside
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(target, link.parent) if relative else target)
    return link


def tree_digest(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its content: to show nothing was written there."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def hostile_branch(root: Path, changes: dict[str, str | None], trailers: list[tuple[str, str]],
                   *, body: str = "made by hand", base: str = "HEAD",
                   proposal_id: str = "prop_20261125_000000_abcd",
                   mode: str = "100644") -> str:
    """A proposal branch made by hand with plumbing, as anyone who can push a branch can: any
    files (``changes``: repository path -> text, None to delete) under any trailers. Returns
    the proposal id; the branch is ``dmm/proposals/<id>``."""
    env = {**os.environ, "GIT_INDEX_FILE": str(root / ".git" / f"hostile-{proposal_id}")}

    def run(*args: str, input: str | None = None) -> str:
        return subprocess.run(["git", *args], cwd=root, env=env, input=input, text=True,
                              capture_output=True, check=True).stdout.strip()

    parent = run("rev-parse", base)
    run("read-tree", parent)
    for path, text in changes.items():
        if text is None:
            run("update-index", "--force-remove", "--", path)
        else:
            blob = run("hash-object", "-w", "--stdin", input=text)
            run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")
    tree = run("write-tree")
    os.unlink(env["GIT_INDEX_FILE"])
    message = f"dmm: propose by hand\n\n{body}\n\n" + "".join(
        f"{key}: {value}\n" for key, value in [("Dmm-Proposal", proposal_id), *trailers])
    commit = run("commit-tree", tree, "-p", parent, input=message)
    run("update-ref", f"refs/heads/dmm/proposals/{proposal_id}", commit)
    return proposal_id
