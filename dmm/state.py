"""dmm's own state in the git folder, and what older versions left in the work tree.

IO boundary for ``<git-common-dir>/dmm/`` (Workspace.shared_state_dir: the usage log and the
semantic vectors, shared by every work tree of a clone) and for the old ``.dmm/index/``.
Older versions kept every cache, log, lock and socket in ``.dmm/index/``, inside the work tree,
where a commit can deliver a file or a link (gitignore does not stop ``git add -f``): a clone
could then serve a memory that exists in no file, or make dmm write into another project. That
folder is never read again, with one exception made once: an untracked regular usage log and
vector cache there that no commit holds are moved into the git folder when it has none (a
person keeps their usage history and is spared embedding the store again). What git tracks under ``.dmm/index/`` is
reported (``tracked_problem``) and never read.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

from dmm.workspace import OLD_INDEX_DIR, Workspace

USAGE_LOG = "usage.sqlite3"
VECTORS = "semantic.sqlite3"
MIGRATED = (USAGE_LOG, VECTORS)  # worth keeping; the cache of the files is simply rebuilt


def shared_folder(ws: Workspace) -> Path | None:
    """The shared state folder, made if missing, with an older version's files moved in once;
    None when it cannot be used (the caller keeps its data in memory, see db.usable)."""
    from dmm.index import db

    folder = ws.shared_state_dir
    if not db.usable(folder):
        return None
    for name in MIGRATED:
        if not os.path.lexists(folder / name):  # one stat a call once the file is there
            _migrate(ws, name, folder / name)
    return folder


def _old_file(ws: Workspace, name: str) -> Path | None:
    """``.dmm/index/NAME`` when it, .dmm and .dmm/index are what they seem (a regular file in
    real folders: a link there could point at anyone's file); else None."""
    path = ws.root / OLD_INDEX_DIR / name
    checks = ((ws.dmm_dir, stat.S_ISDIR), (path.parent, stat.S_ISDIR), (path, stat.S_ISREG))
    try:
        return path if all(kind(os.lstat(p).st_mode) for p, kind in checks) else None
    except OSError:
        return None


def _migrate(ws: Workspace, name: str, new: Path) -> None:
    from dmm import fsutil
    from dmm.index import db

    old = _old_file(ws, name)
    # a committed folder is someone else's: never read, nor later, once untracked, adopted
    if old is None or tracked(ws) or _ever_committed(ws, name):
        return
    try:
        try:
            # atomic, and fails if the file appeared meanwhile; a link swapped in since the
            # check is linked itself (never the file it names), then refused below
            os.link(old, new, follow_symlinks=False)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
                raise
            _copy_new(old, new, fsutil)
        if not stat.S_ISREG(os.lstat(new).st_mode):
            new.unlink()
            raise fsutil.LinkRefused(old)
        os.unlink(old)  # moved: the work tree copy is never read again
    except FileExistsError:
        return
    except OSError as exc:
        db.NOTICES.append(f"could not move {OLD_INDEX_DIR}/{name} into {new.parent}: "
                          f"{exc.strerror or exc}; starting a new one")
        return
    db.NOTICES.append(f"moved {OLD_INDEX_DIR}/{name} to {new} (dmm keeps its state in the "
                      "git folder now; the rest of .dmm/index/ can be deleted)")


def _copy_new(old: Path, new: Path, fsutil) -> None:
    """Copy across file systems into a file made new (O_EXCL), never through a link."""
    src = os.open(old, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        dst = fsutil.open_nofollow(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(src, "rb", closefd=False) as fin, \
                    os.fdopen(dst, "wb", closefd=False) as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
        except BaseException:
            new.unlink(missing_ok=True)
            raise
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _ever_committed(ws: Workspace, name: str) -> bool:
    """Whether any commit this clone has holds ``.dmm/index/NAME``: a file there may be what
    that commit delivered (untracked since, by `git rm --cached`), not what an older dmm wrote.
    One git process, run only while an old file waits to be moved."""
    from dmm.gitrepo import Git

    proc = Git(ws.root).run("rev-list", "-1", "--all", "--", f"{OLD_INDEX_DIR}/{name}",
                            check=False)
    return proc.returncode != 0 or bool(proc.stdout.strip())


def tracked(ws: Workspace) -> list[str]:
    """Paths under .dmm/index/ that git tracks (a commit delivered them): dmm never reads
    them. One git process; only commands that report run it."""
    from dmm.gitrepo import Git

    out = Git(ws.root).run("ls-files", "-z", "--", OLD_INDEX_DIR, check=False).stdout
    return [p for p in out.split("\0") if p]


TRACKED_MESSAGE = (
    "git tracks {n} (e.g. {first}): older versions of dmm kept their cache there, and a "
    "committed cache or link could make them show memories that exist in no file or write "
    "outside the repository. dmm keeps its state in the git folder and never reads "
    ".dmm/index/; remove it, files included (they came from a commit: dmm never adopts them), "
    "with `git rm -r .dmm/index` and commit")


def tracked_problem(ws: Workspace):
    """A Problem (error) naming what git tracks under .dmm/index/, or None."""
    from dmm.memory.model import Problem
    from dmm.render import count

    paths = tracked(ws)
    if not paths:
        return None
    return Problem(f"{OLD_INDEX_DIR}/",
                   TRACKED_MESSAGE.format(n=count(len(paths), "file"), first=paths[0]),
                   None, "error")
