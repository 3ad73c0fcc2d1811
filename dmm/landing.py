"""Land a commit on the checked-out branch the way DESIGN.md prescribes, safely.

Used by approvals (a merge of a proposal) and by recorded decisions (a plain commit of files
under .dmm/). Refuses on an operation in progress or a detached HEAD, only lets paths under
.dmm/ change, dry-runs the work-tree update so that a local edit in the way is reported before
anything moves, moves the branch with a compare-and-swap ref transaction (retrying when another
process moved it first) and then syncs exactly the changed paths.

Two locks make this safe against other processes:

- an flock on <git-common-dir>/dmm.lock serialises dmm's own writers;
- git's own ``index.lock``, taken the way git takes it (created exclusively), from the dry run
  through the ref move to the index update. A ``git commit`` started meanwhile fails at once
  ("index.lock exists") instead of recording the old index on top of dmm's commit. The new
  index is prepared in a private copy and renamed over the real one, as git itself does.

SIGINT, SIGTERM and SIGHUP are held back from the ref move until the index is in place. Only
SIGKILL (or a power cut) can stop a landing half way; for that, a journal
(<git-dir>/dmm-landing.json) is written before the ref moves and removed when the index is in
place, and ``recover`` (run by the next dmm command and the next landing) finishes or rolls
back what it describes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from dmm.errors import BusyError, GitError, InvalidInputError
from dmm.fsutil import create_file, file_lock
from dmm import gitrepo
from dmm.gitrepo import ZERO, Git
from dmm.shellcmd import command
from dmm.workspace import LANDING_JOURNAL as JOURNAL

MAX_ATTEMPTS = 5
INDEX_LOCK_WAIT_S = 3.0  # a git command holding index.lock usually finishes within this

# build(old_head) -> (tree, parents, message, extra ref updates) or raise
Builder = Callable[[str], tuple[str, list[str], str, list[tuple[str, str | None, str | None]]]]


@dataclass
class Landed:
    commit: str
    branch: str
    changed_paths: list[str]


def land(git: Git, build: Builder, still_valid: Callable[[], None] | None = None) -> Landed:
    with file_lock(git.common_dir() / "dmm.lock"):
        recover(git, locked=True)  # a landing killed half way is finished first
        busy = git.operation_in_progress()
        if busy:  # checked first: mid-rebase HEAD is detached too, and this is the reason
            raise InvalidInputError(f"{busy} is in progress: finish or abort it, then try again")
        branch = git.current_branch()
        if branch is None:
            raise InvalidInputError("HEAD is detached: check out the branch the memory change "
                                    "should land on, then try again")
        for _ in range(MAX_ATTEMPTS):
            old = git.rev_parse("HEAD")
            if old is None:
                raise InvalidInputError("the repository has no commit yet: commit .dmm/ first")
            tree, parents, message, extra = build(old)
            changed = git.changed_paths(old, tree)
            outside = [p for p in changed if not p.startswith(".dmm/")]
            if outside:
                raise InvalidInputError(f"refusing to change files outside .dmm/: "
                                        f"{', '.join(outside)}")
            new = git.commit_tree(tree, parents, message)
            if _move(git, branch, old, new, extra):
                return Landed(new, branch.removeprefix("refs/heads/"), changed)
            if still_valid:
                still_valid()  # raises when the reason to land is gone (e.g. already approved)
        raise GitError("the branch kept moving while dmm tried to commit: try again")


def _move(git: Git, branch: str, old: str, new: str, extra: list) -> bool:
    """Move ``branch`` from ``old`` to ``new`` (with ``extra`` ref updates) and bring the index
    and work tree along, holding git's index.lock and the journal throughout; False when the
    branch was not at ``old`` any more. Signals wait until the lock is released, so only
    SIGKILL can leave a half-done landing (which ``recover`` then finishes)."""
    recorded_before = gitrepo.REFS_MOVED
    with signals_held(), index_lock(git) as index:
        journal = _write_journal(git, index, branch, old, new, extra)
        moved = synced = False
        try:
            index.take_copy()
            index.refresh()  # a file touched but unchanged is not "a local change"
            index.check_sync(old, new)
            moved = git.update_refs([(branch, new, old)] + extra)
            if not moved:
                return False
            index.sync(old, new)
            synced = True
            index.install()
        except BaseException:
            if moved:
                # put the work tree and the branch (and any ref moved with it) back: a branch
                # ahead of its work tree would look like the user had reverted the change
                if synced:
                    with contextlib.suppress(Exception):
                        index.sync(new, old)
                git.update_refs([(branch, old, new)] + [
                    (ref, before, after) for ref, after, before in extra])
                gitrepo.REFS_MOVED = recorded_before  # put back: nothing was recorded
            raise
        finally:
            journal.unlink(missing_ok=True)
    return True


def commit_files(git: Git, files: dict[str, bytes | None], message: str) -> Landed:
    """Commit ``files`` ({path from the repository root: content, or None to delete}) on top
    of HEAD, leaving everything else in the index and work tree as it is."""
    def build(old: str):
        changes = {path: None if data is None else git.hash_blob(data)
                   for path, data in files.items()}
        return git.tree_with(old, changes), [old], message, []

    return land(git, build)


# --- git's index lock ---------------------------------------------------------------------------

class _Index:
    """The user's index while dmm holds ``index.lock``: a private copy that dmm updates and
    then renames over the real index."""

    def __init__(self, git: Git, path: Path):
        self.git = git
        self.path = path
        self.lock = Path(f"{path}.lock")
        self.copy = path.with_name(f"dmm-index-{os.getpid()}")
        self.env = {"GIT_INDEX_FILE": str(self.copy)}

    def take_copy(self) -> None:
        """Start from the user's index as it is now (git keeps it while we hold the lock)."""
        if self.path.exists():
            shutil.copyfile(self.path, self.copy)

    def refresh(self) -> None:
        self.git.run("update-index", "-q", "--refresh", env=self.env, check=False)

    def check_sync(self, old: str, new: str) -> None:
        """Refuse when moving the work tree from ``old`` to ``new`` would touch local edits."""
        proc = self.git.run("read-tree", "-m", "-n", "-u", old, new, env=self.env, check=False)
        if proc.returncode != 0:
            raise InvalidInputError(
                "a local change is in the way of the memory files this change touches: "
                + _in_the_way(proc.stderr),
                hint="commit or stash your changes to those .dmm/ files, then try again")

    def sync(self, old: str, new: str) -> None:
        """Bring the index copy and the work tree from ``old`` to ``new`` (changed paths only)."""
        self.git.run("read-tree", "-m", "-u", old, new, env=self.env)

    def install(self) -> None:
        os.replace(self.copy, self.path)


def _in_the_way(stderr: str) -> str:
    """The files git's read-tree names as in the way ("Entry 'X' not uptodate", or a list of
    files indented under "would be overwritten"), without git's own "error:" text inside
    dmm's; git's words when it names none."""
    import re

    found = re.findall(r"'([^']+)'", stderr) + [line.strip() for line in stderr.splitlines()
                                                 if line.startswith("\t")]
    if found:
        return ", ".join(dict.fromkeys(found))
    return re.sub(r"(?m)^(error|fatal): ", "", stderr.strip()).replace("\n", " ")


@contextlib.contextmanager
def index_lock(git: Git) -> Iterator[_Index]:
    """Hold git's ``index.lock`` (waiting a little for a git command that holds it)."""
    index = _Index(git, git.git_path("index"))
    deadline = time.monotonic() + INDEX_LOCK_WAIT_S
    while True:
        try:
            os.close(os.open(index.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            break
        except FileExistsError:
            if time.monotonic() > deadline:
                raise BusyError(
                    f"git's index is locked: {index.lock} exists, so another git command is "
                    "running (a commit waiting for its message, a rebase ...)",
                    hint="try again when it has finished; if no git command is running, a "
                         "crashed one left the file behind: remove it") from None
            time.sleep(0.05)
    try:
        yield index
    finally:
        index.copy.unlink(missing_ok=True)
        index.lock.unlink(missing_ok=True)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP for the block; they are delivered right after."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


# --- the journal, and recovery after a kill ----------------------------------------------------

def journal_path(git_dir: Path) -> Path:
    return git_dir / JOURNAL


def _write_journal(git: Git, index: _Index, branch: str, old: str, new: str,
                   extra: list) -> Path:
    lock = os.stat(index.lock)
    record = {"pid": os.getpid(), "branch": branch, "old": old, "new": new,
              "extra": extra, "index_lock": [lock.st_ino, lock.st_mtime_ns],
              "index_copy": str(index.copy)}
    path = journal_path(git.git_dir())
    tmp = path.with_name(f"{JOURNAL}.tmp-{os.getpid()}")
    create_file(tmp, json.dumps(record).encode("utf-8"), 0o644)
    os.replace(tmp, path)
    return path


def recover(git: Git, locked: bool = False) -> str | None:
    """Finish or undo a landing that a killed dmm left half done; a sentence saying what was
    done, or None when there was nothing to do. ``locked``: the caller holds dmm.lock."""
    path = journal_path(git.git_dir())
    if not path.exists():
        return None
    if not locked:
        with file_lock(git.common_dir() / "dmm.lock"):
            return recover(git, locked=True)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        branch, old, new = record["branch"], record["old"], record["new"]
    except (OSError, ValueError, KeyError, TypeError):
        path.unlink(missing_ok=True)
        return "dmm: removed an unreadable landing journal"
    index_path = git.git_path("index")
    lock = Path(f"{index_path}.lock")
    with contextlib.suppress(OSError):
        st = os.stat(lock)
        if [st.st_ino, st.st_mtime_ns] == record.get("index_lock"):
            lock.unlink()  # the killed dmm's own lock: nobody else will ever remove it
    if record.get("index_copy"):
        Path(record["index_copy"]).unlink(missing_ok=True)
    tip = git.rev_parse(branch)
    short = new[:12]
    if tip == new and git.current_branch() != branch:
        note = (f"dmm: a landing of {short} on {branch.removeprefix('refs/heads/')} was "
                "interrupted and another branch is checked out now; when you return to it, "
                f"check `git status` against {short}")
    elif tip == old:
        note = None  # killed before the branch moved: nothing landed, nothing to repair
    elif tip == new:
        left = _finish_sync(git, old, new)
        note = (f"dmm: finished a landing that was interrupted: {short} is on "
                f"{branch.removeprefix('refs/heads/')}; its files are now in the index and "
                "work tree")
        if left:
            note += (f" except {', '.join(left)} (changed by someone meanwhile: compare with "
                     f"`{command('git', 'diff', short, '--', *left)}`)")
    else:
        note = (f"dmm: an interrupted landing of {short} was followed by other commits on "
                f"{branch.removeprefix('refs/heads/')}; check that they did not revert it "
                f"(`{command('git', 'diff', short, 'HEAD', '--', '.dmm')}`)")
    path.unlink(missing_ok=True)
    return note


def _finish_sync(git: Git, old: str, new: str) -> list[str]:
    """Bring index and work tree to ``new`` for the paths ``old..new`` changed, where they
    still show ``old`` (or already ``new``); returns the paths left alone because someone
    changed them since."""
    paths = git.changed_paths(old, new)
    before, after = git.tree_entries(old, paths), git.tree_entries(new, paths)
    left, updates = [], []
    with index_lock(git) as index:
        index.take_copy()
        staged = git.index_entries(paths, env=index.env)
        on_disk = git.worktree_blobs(paths)
        for p in paths:
            allowed = {before.get(p), after.get(p)}
            blob_states = {e[1] if e else None for e in allowed}
            if staged.get(p) not in allowed or on_disk.get(p) not in blob_states:
                left.append(p)
                continue
            target = after.get(p)
            file = git.root / p
            if target is None:
                file.unlink(missing_ok=True)
                updates.append(f"0 {ZERO}\t{p}\0")
            else:
                mode, sha = target
                file.parent.mkdir(parents=True, exist_ok=True)
                tmp = file.with_name(f".dmm-tmp-{os.getpid()}-{file.name}")
                create_file(tmp, git.show_blob(new, p) or b"",
                            0o755 if mode == "100755" else 0o644)
                tmp.chmod(0o755 if mode == "100755" else 0o644)  # whatever the umask
                os.replace(tmp, file)
                updates.append(f"{mode} {sha}\t{p}\0")
        if updates:
            git.run("update-index", "-z", "--index-info", env=index.env, input="".join(updates))
            index.refresh()
        index.install()
    return left
