"""Know that `.dmm/memory/` has not changed without walking it: an inotify watch, for the
processes that live long (the background process, `dmm serve`, `dmm mcp`).

Every command checks freshness by a walk that stats every memory file (``store.scan``): 25 ms at
10,000 memories, 150-250 ms at 50,000. A long-lived process can instead ask the kernel what
changed. ``refresh.refresh`` asks ``Watch.disk`` for the files on disk: the snapshot of the last
walk when no event came since (no system call but one ``stat`` of the folder and one read of the
event queue), that snapshot with only the changed files stat'ed again, or a new walk.

Why a change is always seen: the kernel queues an inotify event inside the system call that
changes a file, before that call returns; each freshness check reads the queue without
blocking, in the thread that answers. So a write that finished before a request started is
seen by that request. (A library that delivers events on its own thread, such as watchdog,
cannot promise that: measured on this machine, 56 of 200 writes were not yet delivered when
checked right after the write returned, up to 39 ms late; ``inotify_simple`` read the queue
at 23 us a read and missed none. docs/cache.md.)

Where a watch cannot be trusted it is not used and the walk is (``why_not`` says why): not
Linux or no ``inotify_simple``; a file system that does not report changes made elsewhere
(NFS, SMB, FUSE, 9p...); no inotify watches left; and, for one check each, a queue overflow, a
folder created, removed, renamed or replaced, a name that is not UTF-8. A folder is watched
again before the walk that follows, so no change falls between the two.
"""

from __future__ import annotations

import os
import stat as stat_mod
import sys
import threading
from pathlib import Path

from dmm import store

# file systems whose changes are all made through this kernel, so inotify sees them all
LOCAL_FILE_SYSTEMS = frozenset({
    "ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "overlay", "zfs", "f2fs",
    "jfs", "reiserfs", "bcachefs", "nilfs2", "hfsplus", "apfs"})

_enabled = False
_lock = threading.Lock()
_watches: dict[str, Watch] = {}


def enable() -> None:
    """This process lives long: check freshness by watching (called once at start)."""
    global _enabled
    _enabled = True


def for_dir(memory_dir: Path) -> Watch | None:
    """The watch of ``memory_dir`` in a long-lived process; None in any other process."""
    if not _enabled:
        return None
    key = str(memory_dir)
    with _lock:
        if key not in _watches:
            _watches[key] = Watch(memory_dir)
        return _watches[key]


def _mask():
    from inotify_simple import flags

    return (flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE | flags.CREATE | flags.DELETE
            | flags.MOVED_FROM | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF
            | flags.DONT_FOLLOW)


def file_system(path: Path) -> str | None:
    """The type of the file system ``path`` is on (from /proc/self/mountinfo), or None."""
    try:
        target = os.path.realpath(path)
        best, kind = "", None
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) < 5 or not right:
                    continue
                mount = fields[4].encode().decode("unicode_escape")  # \040 for a space
                inside = target == mount or target.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, right.split()[0]
        return kind
    except OSError:
        return None


def unwatchable(memory_dir: Path) -> str | None:
    """Why ``memory_dir`` cannot be trusted to a watch, or None."""
    if not sys.platform.startswith("linux"):
        return "inotify is Linux's"
    try:
        import inotify_simple  # noqa: F401
    except ImportError:
        return "the inotify_simple package is not installed"
    kind = file_system(memory_dir)
    if kind not in LOCAL_FILE_SYSTEMS:
        return f"a {kind or 'unknown'} file system may change without telling this machine"
    return None


class Watch:
    """The files under one memory folder as last walked, kept current by inotify events.

    Not thread-safe by itself: callers hold ``lock`` around ``disk`` and ``fresh``/``seen``.
    """

    def __init__(self, memory_dir: Path) -> None:
        self.dir = memory_dir
        self.lock = threading.Lock()
        self.why_not: str | None = None  # why the last check walked instead
        self.walks = 0  # full walks made (1 when nothing ever forced another)
        self._ino = None
        self._wds: dict[int, str] = {}  # watch descriptor -> folder prefix ("", "a/b/")
        self._root: tuple[int, int] | None = None  # the folder's (device, inode)
        self._never: str | None = None  # a reason that will not go away (platform, file system)
        self._snapshot: dict[str, store.FileStat] | None = None
        self._verified: tuple | None = None  # (snapshot, cache token) known to match

    # -- what is on disk --------------------------------------------------------------------

    def disk(self) -> dict[str, store.FileStat]:
        """The files under the folder now (as ``store.scan`` gives them)."""
        changed = self._changes()
        if changed is None or self._snapshot is None:
            self._arm()  # before the walk: a change during it is an event for the next check
            self.walks += 1
            self._snapshot = store.scan(self.dir)
        elif changed:
            self._snapshot = self._restat(changed)
        return self._snapshot

    def fresh(self, disk: dict, token: tuple) -> bool:
        """Did the cache (whose meta says ``token``) already match ``disk``?"""
        return self._verified is not None and self._verified[0] is disk \
            and self._verified[1] == token

    def seen(self, disk: dict, token: tuple) -> None:
        """The cache, now at ``token``, matches ``disk`` (a refresh made it so)."""
        self._verified = (disk, token) if self._ino is not None else None

    def close(self) -> None:
        if self._ino is not None:
            self._ino.close()
        self._ino, self._wds, self._root = None, {}, None

    # -- the watch --------------------------------------------------------------------------

    def _arm(self) -> None:
        self.close()
        self._snapshot = self._verified = None
        if self._never is None:
            self._never = unwatchable(self.dir)
        if self._never:
            self.why_not = self._never
            return
        from inotify_simple import INotify

        ino = INotify()  # close-on-exec
        try:
            root = os.stat(self.dir)
            mask = _mask()
            stack = [(str(self.dir), "")]
            while stack:
                folder, prefix = stack.pop()
                try:
                    self._wds[ino.add_watch(folder, mask)] = prefix
                    with os.scandir(folder) as entries:
                        for e in entries:
                            if not e.name.startswith(".") and e.is_dir(follow_symlinks=False):
                                stack.append((e.path, prefix + e.name + "/"))
                except (FileNotFoundError, NotADirectoryError):
                    continue  # gone meanwhile: the walk that follows sees it
        except OSError as exc:  # ENOSPC: fs.inotify.max_user_watches; EMFILE: instances
            ino.close()
            self._wds = {}
            self.why_not = f"cannot watch {self.dir}: {exc.strerror or exc}"
            return
        self._ino, self._root, self.why_not = ino, (root.st_dev, root.st_ino), None

    def _changes(self) -> set[str] | None:
        """Paths changed since the last check; None when only a walk can tell."""
        if self._ino is None:
            return None
        from inotify_simple import flags

        try:
            st = os.stat(self.dir)
        except OSError:
            return None
        if (st.st_dev, st.st_ino) != self._root:
            return None  # the folder (or one above it) was replaced
        events = self._ino.read(timeout=0)
        changed = set()
        walk = flags.Q_OVERFLOW | flags.IGNORED | flags.DELETE_SELF | flags.MOVE_SELF \
            | flags.ISDIR
        for ev in events:
            prefix = self._wds.get(ev.wd)
            if ev.mask & walk or prefix is None:
                return None
            if not ev.name or ev.name.startswith("."):
                continue  # hidden: the walk skips them too
            if not ev.name.isascii() and store._printable(ev.name) != ev.name:
                return None  # not UTF-8: the walk names it
            changed.add(prefix + ev.name)
        return changed

    def _restat(self, changed: set[str]) -> dict[str, store.FileStat] | None:
        disk = dict(self._snapshot)
        for rel in changed:
            try:
                st = os.lstat(self.dir / rel)
            except FileNotFoundError:
                disk.pop(rel, None)
                continue
            except OSError:
                disk[rel] = (-1, -1)
                continue
            if stat_mod.S_ISDIR(st.st_mode):  # a folder under a file's name: walk
                self._arm()
                self.walks += 1
                return store.scan(self.dir)
            disk[rel] = (st.st_size, st.st_mtime_ns)
        return disk
