"""Open the cache database, recreating it when it is missing, corrupt or of an old schema.

IO boundary for the cache in this work tree's state folder, ``<git-dir>/dmm/`` (see
Workspace.state_dir: inside the git folder, where no commit can put a file). Writers serialise
on an flock of ``cache.lock`` there so that two dmm processes never build or update the cache at
the same time; readers rely on SQLite's own locking (busy timeout). A broken cache is never
fatal: it is deleted and rebuilt. Nothing here is ever written through a symbolic link.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sqlite3
from pathlib import Path
from typing import Iterator, Sequence

from dmm.errors import BusyError
from dmm import fsutil
from dmm.fsutil import file_lock
from dmm.index.schema import DDL, SCHEMA_VERSION

DB_NAME = "cache.sqlite3"
LOCK_NAME = "cache.lock"
BUSY_TIMEOUT_S = 30.0
SQL_VALUES = 500  # values bound per statement: under SQLite's oldest limit of 999 variables


# Why this process answers without an on-disk cache (a read-only git folder, a link ...),
# once known; the CLI says it once on stderr, with any other NOTICES about the caches.
FALLBACK_REASON: str | None = None
NOTICES: list[str] = []


# Impatient (an agent's hook, which must never hold up a prompt): locks are tried, not waited
# for, and SQLite waits IMPATIENT_BUSY_S for another connection's lock instead of
# BUSY_TIMEOUT_S. A lock held elsewhere is then a BusyError at once. Per thread (a context
# variable): in the background process a hook's impatience once made a query answered beside
# it fail with "the dmm cache is locked by another process".
_IMPATIENT: contextvars.ContextVar[bool] = contextvars.ContextVar("impatient", default=False)
IMPATIENT_BUSY_S = 0.05


def in_chunks(values: Sequence) -> Iterator[tuple[list, str]]:
    """``values`` in slices one statement can bind, each with its placeholders ("?,?,?"):
    ``for part, marks in in_chunks(ids): conn.execute(f"... IN ({marks})", part)``."""
    values = list(values)
    for start in range(0, len(values), SQL_VALUES):
        part = values[start:start + SQL_VALUES]
        yield part, ",".join("?" * len(part))


def meta_blob(conn: sqlite3.Connection, key: str, kind: type) -> object | None:
    """The marshal value kept under ``key`` in the cache's ``meta`` table (a ``kind``: dict or
    list), None when there is none; a value that does not load as one is a damaged cache
    (sqlite3.DatabaseError: the caller rebuilds it, as for any damage)."""
    import marshal

    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    try:
        value = marshal.loads(row[0])
    except (ValueError, EOFError, TypeError) as exc:
        raise sqlite3.DatabaseError(f"damaged cache metadata ({key}): {exc}") from None
    if not isinstance(value, kind):
        raise sqlite3.DatabaseError(f"damaged cache metadata ({key}): not a {kind.__name__}")
    return value


@contextlib.contextmanager
def impatient() -> Iterator[None]:
    token = _IMPATIENT.set(True)
    try:
        yield
    finally:
        _IMPATIENT.reset(token)


def is_impatient() -> bool:
    return _IMPATIENT.get()


def busy_timeout() -> float:
    """How long a connection waits for another's SQLite lock, in seconds."""
    return IMPATIENT_BUSY_S if _IMPATIENT.get() else BUSY_TIMEOUT_S


@contextlib.contextmanager
def write_lock(state_dir: Path) -> Iterator[None]:
    """Exclusive lock for anything that writes the cache (held by one process at a time).
    Without a usable cache folder there is nothing on disk to protect."""
    if not usable(state_dir):
        yield
        return
    try:
        lock = file_lock(state_dir / LOCK_NAME, wait=not _IMPATIENT.get())
        lock.__enter__()
    except BlockingIOError:
        raise BusyError("another dmm is updating the cache (a reindex or a scan)",
                        hint="try again in a moment") from None
    try:
        yield
    finally:
        lock.__exit__(None, None, None)


@contextlib.contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """Reads that must agree with each other (rows found by one statement, looked up by the
    next) in one read transaction: a refresh committed meanwhile by another process or thread
    is seen entirely or not at all."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")  # nothing was written: this only releases the read lock


def usable(state_dir: Path) -> bool:
    """True when dmm may keep its files in ``state_dir`` (made if missing): a real folder,
    not a symbolic link, that this user can write."""
    global FALLBACK_REASON
    if FALLBACK_REASON is not None:
        return False
    reason = None
    try:
        fsutil.state_folder(state_dir)
    except OSError as exc:
        reason = f"cannot keep dmm's state in {state_dir}: {exc.strerror or exc}"
    else:
        if not os.access(state_dir, os.W_OK):
            reason = f"{state_dir} is read-only"
    if reason:
        FALLBACK_REASON = reason + ": answering from the memory files without a cache"
        return False
    return True


def sqlite_file(path: Path) -> Path:
    """``path``, checked just before SQLite opens it for writing: SQLite follows a link, dmm
    does not (raises fsutil.LinkRefused)."""
    fsutil.refuse_link(path)
    return path


def connect(state_dir: Path) -> sqlite3.Connection:
    """A connection to a cache with the current schema (created or rebuilt if needed); an
    in-memory cache built from scratch when the folder cannot hold one (see ``usable``)."""
    global FALLBACK_REASON
    path = state_dir / DB_NAME
    if usable(state_dir):
        try:
            sqlite_file(path)
        except fsutil.LinkRefused as exc:
            FALLBACK_REASON = f"{exc}: answering from the memory files without a cache"
    if not usable(state_dir):
        return in_memory()
    _remove_dead_builds(state_dir)
    for _ in range(3):
        try:
            conn = _open(path)
            if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
                return conn
            conn.close()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise BusyError("the dmm cache is locked by another process",
                                hint="wait for the other dmm command to finish") from exc
        except sqlite3.DatabaseError:
            pass  # not a database / malformed: rebuilt below
        with write_lock(state_dir):
            if not _is_current(path):
                create(path)
    raise BusyError(f"could not open the cache at {path}")


def create(path: Path) -> None:
    """Write an empty cache with the current schema next to ``path``, then move it in place.

    Building aside and renaming keeps another process from ever seeing a half-made cache.
    Callers hold write_lock. Builds a dead process left aside (killed, or out of disk space)
    are removed first, and a failed build removes its own.
    """
    _remove_dead_builds(path.parent)
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path)  # something made a folder where the cache goes: it is ours to clear
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        # made here, new (O_EXCL) and never through a link, before SQLite opens it by name
        os.close(fsutil.open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            _fill(conn)
        finally:
            conn.close()
        for suffix in ("-journal", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        os.replace(tmp, path)
    except BaseException:
        for leftover in (tmp, Path(f"{tmp}-journal")):
            leftover.unlink(missing_ok=True)
        raise


def _remove_dead_builds(state_dir: Path) -> None:
    """Cache builds left aside by a process that was killed or ran out of disk (each is
    named after its builder's pid; a live builder's is left alone)."""
    for stale in state_dir.glob(f"{DB_NAME}.tmp-*"):
        pid = stale.name.removeprefix(f"{DB_NAME}.tmp-").removesuffix("-journal")
        if pid.isdigit() and not _alive(int(pid)):
            stale.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def in_memory() -> sqlite3.Connection:
    """An empty cache in memory, with the schema: one this connection alone sees."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    _fill(conn)
    return conn


def ever_filled(state_dir: Path) -> bool:
    """Whether a refresh ever committed to the cache in ``state_dir`` (read-only, never
    waits, never creates it): false for a new clone or work tree, whose first refresh reads
    every memory file, and while that first refresh is under way (it commits once); true
    when a lock keeps it from being read (it cannot tell)."""
    return filled_state(state_dir) is not False


def filled_state(state_dir: Path) -> bool | None:
    """``ever_filled``, but None when a lock keeps the cache from being read (a first build
    whose large transaction locks the file, a reindex): the caller decides what that means."""
    path = state_dir / DB_NAME
    if path in _FILLED:
        return True  # a long-lived process asks on every query: one look is enough
    try:
        if not path.is_file():
            return False
    except OSError:  # a folder this user may not read (another's clone): no cache to wait for
        return False
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=IMPATIENT_BUSY_S)
        try:
            filled = conn.execute("SELECT 1 FROM meta WHERE key = 'files'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        # locked (an exclusive transaction): cannot tell (None); else unreadable: not filled
        return None if busy(exc) else False
    if filled:
        _FILLED.add(path)
    return filled is not None


_FILLED: set[Path] = set()


def _fill(conn: sqlite3.Connection) -> None:
    """The schema, in an empty database."""
    conn.executescript(DDL)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def discard(state_dir: Path) -> None:
    """Remove a damaged cache; the next command builds a new one."""
    with write_lock(state_dir):
        create(state_dir / DB_NAME)


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(sqlite_file(path), timeout=busy_timeout(), isolation_level=None)
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _is_current(path: Path) -> bool:
    if not path.exists():
        return False
    try:
        conn = _open(path)
        try:
            return conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if busy(exc):  # in use, not broken: rebuilding it would pull it from under its users
            raise BusyError("the dmm cache is locked by another process",
                            hint="wait for the other dmm command to finish") from exc
        return False


def busy(exc: sqlite3.DatabaseError) -> bool:
    """SQLite says another connection holds the database: it is in use, not damaged."""
    return isinstance(exc, sqlite3.OperationalError) and any(
        word in str(exc) for word in ("locked", "busy"))


def replaced(exc: sqlite3.DatabaseError) -> bool:
    """The file this connection opened may no longer be the cache (another process rebuilt it
    and moved the new one in place): SQLite refuses to write to the old one ("readonly"), or,
    in the middle of a transaction on a loaded machine, reports an I/O error on its journal
    (seen once in 10 parallel first runs). A new connection, to the file now in place, is the
    cure; only when that fails too is the cache damaged."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return isinstance(exc, sqlite3.OperationalError) and (
        "readonly" in str(exc) or name.startswith("SQLITE_IOERR")
        or "disk I/O error" in str(exc))
