"""Ask the repository's background process (``daemon.py``) for a Memory Pack or a hook's
text, starting it on first use; None when it cannot answer, and the caller answers by words.

The pattern of dmypy, eslint_d and git's fsmonitor daemon: one process per clone, serving every
work tree of it (each request names its work tree), reached over the socket ``semantic.sock``
in the clone's shared state folder (``<git-common-dir>/dmm/``, where no commit can put a
file), which only this user can use (mode 0600, owned by us: a socket anyone
else made is never trusted); it exits when idle, and one started by another
version of dmm is stopped and replaced. It is started without the agents' markers in its
environment (it serves people and agents alike). This module imports only the standard
library (and dmm's pure modules, nothing above the index, which asks it too): a `dmm query`
answered here never loads numpy or the model.

The process is asked with the model off too (DMM_SEMANTIC=off, ``[semantic] enabled = false``)
when the store is large (``lexical_worth_it``): it keeps the words' postings in memory, where
a short command reads them from SQLite (0.7-1 s at 50,000 memories); such a request says
``semantic: false`` and is ranked by words. A process started with the model switched off
that is asked for meaning exits and is replaced by one that loads it (as for another build).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import time
from pathlib import Path

SOCKET = "semantic.sock"
LOG = "semantic.log"
START_WAIT_S = 10.0  # for a new process to open its socket
ANSWER_WAIT_S = 60.0  # a first query may wait for a small store to be embedded
MAX_ANSWER_BYTES = 64 * 1024 * 1024
MAX_REQUEST_BYTES = 1 << 20  # what the background process reads of one request (a line)
# With the model off, a store whose cache is at least this large is ranked by the background
# process (its postings in memory) rather than by the command itself (SQL over its postings):
# about 6 KB of cache a memory, so some 3,000 memories, where a short command's ranking starts
# to cost a hook a good part of its 0.9 s (docs/performance.md).
LEXICAL_CACHE_BYTES = 18 << 20
LEXICAL_ENV = "DMM_WORDS_PROCESS_BYTES"  # bytes instead (tests; a machine faster or slower)


def build_id() -> str:
    """What must match between a client and the process it asks: dmm's version and the
    content of the files that speak between them (an upgrade or a reinstall changes them; two
    copies of one build, such as a source tree and its installed wheel, agree)."""
    import zlib  # not hashlib: loading OpenSSL costs a hook 10-40 ms; this tells builds apart

    import dmm

    here = Path(__file__).resolve()
    digest, size = 0, 0
    for path in (Path(dmm.__file__), here, here.with_name("daemon.py")):
        data = path.read_bytes()
        digest, size = zlib.crc32(data, digest), size + len(data)
    return f"{dmm.__version__}:{digest:08x}{size:x}:{os.environ.get('DMM_BUILD_TAG', '')}"


class Unavailable(Exception):
    """The background process cannot answer; the message says why (for a note)."""


class NotRunning(Unavailable):
    """No background process listens on the socket (none, or one that died and left its
    socket behind), and ``ask`` was not to start one."""


class TimedOut(Unavailable):
    """The background process runs but did not answer within the wait."""


def socket_path(state_dir: Path) -> Path:
    return state_dir / SOCKET


def _address(path: Path) -> tuple[str, int | None]:
    """A path the kernel accepts (108 bytes at most): a long one goes through an open
    descriptor of its folder."""
    if len(os.fsencode(path)) < 100:
        return str(path), None
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{path.name}", fd


def _trusted(path: Path) -> bool:
    """A socket this user made and only this user can use; anything else is never asked."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISSOCK(st.st_mode):
        raise Unavailable(f"{path} is not a socket: remove it")
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise Unavailable(f"{path} belongs to another user or others may use it: not asked")
    return True


def _connect(path: Path, timeout: float) -> socket.socket | None:
    if not _trusted(path):
        return None
    address, fd = _address(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(address)
        return sock
    except (ConnectionRefusedError, FileNotFoundError):  # a crashed process left its socket
        sock.close()
        return None
    except OSError:
        sock.close()
        raise
    finally:
        if fd is not None:
            os.close(fd)


def _exchange(sock: socket.socket, line: bytes) -> dict:
    with sock:
        sock.sendall(line)
        chunks, size = [], 0
        while True:
            data = sock.recv(1 << 16)
            if not data:
                break
            chunks.append(data)
            size += len(data)
            if size > MAX_ANSWER_BYTES:
                raise Unavailable("the background process sent too much")
    try:
        answer = json.loads(b"".join(chunks))
    except ValueError:
        raise Unavailable("the background process gave no answer (it may have crashed)") \
            from None
    if not isinstance(answer, dict):
        raise Unavailable("the background process gave a malformed answer")
    return answer


def start(root: Path, state_dir: Path) -> None:
    """Start the background process of the repository at ``root`` (detached, its own session;
    it exits at once if another one holds the repository), without the agents' markers in its
    environment (dmm.markers). Its output goes to the log in ``state_dir``, never
    written through a link."""
    import subprocess

    from dmm.fsutil import open_nofollow
    from dmm.markers import without_markers

    log = open_nofollow(state_dir / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        # it outlives the agent or person that started it, and serves both: no agent markers
        subprocess.Popen([sys.executable, "-I", "-m", "dmm.background.daemon", str(root)],
                         cwd=root, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True, close_fds=True, env=without_markers())
    finally:
        os.close(log)


def ask(root: Path, state_dir: Path, request: dict, start_if_absent: bool = True,
        start_wait: float = START_WAIT_S, answer_wait: float = ANSWER_WAIT_S) -> dict:
    """The answer of the background process whose socket is in ``state_dir`` (the clone's
    shared state folder) to ``request`` about the work tree at ``root``; raises
    Unavailable."""
    path = socket_path(state_dir)
    line = json.dumps(dict(request, build=build_id(), root=str(root))).encode() + b"\n"
    if len(line) > MAX_REQUEST_BYTES:  # it would stop reading and close: "Broken pipe"
        raise Unavailable(f"the request ({len(line):,} bytes) is more than the background "
                          f"process reads ({MAX_REQUEST_BYTES:,})")
    for attempt in range(2):
        try:
            sock = _connect(path, answer_wait)
            if sock is None and start_if_absent:
                start(root, state_dir)
                deadline = time.monotonic() + start_wait
                while sock is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                    sock = _connect(path, answer_wait)
            if sock is None and not start_if_absent:
                raise NotRunning("no background process is running")
            if sock is None:
                raise Unavailable("the background process did not start (see "
                                  f"{state_dir / LOG})")
            answer = _exchange(sock, line)
        except (TimeoutError, socket.timeout):
            raise TimedOut("the background process did not answer in time") from None
        except OSError as exc:
            raise Unavailable(f"cannot reach the background process: {exc}") from None
        if answer.get("stale") and attempt == 0:
            # started by another version of dmm: it is exiting; wait for its socket to go
            deadline = time.monotonic() + start_wait
            while path.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            continue
        return answer
    raise Unavailable("the background process keeps answering for another version of dmm")


def route(ws) -> tuple[Path | None, dict, str | None]:
    """Whether a request about the work tree ``ws`` goes to the background process: (its
    state folder, what the request adds, note), the folder None when this command answers by
    itself (note: why, when worth saying; None when e.g. the user turned the layer off)."""
    cfg = ws.config["semantic"]
    if not cfg["background"]:
        return None, {}, None
    words, note = by_words(cfg["enabled"])
    from dmm.fsutil import state_folder

    try:
        state_dir = state_folder(ws.shared_state_dir)  # the clone's: one process for all
    except OSError:
        return None, {}, None  # the command itself says what is wrong with the state folder
    if words:
        # by words alone: worth a process only where its resident postings beat SQL's
        if not lexical_worth_it(ws, state_dir):
            return None, {}, note
        return state_dir, {"semantic": False, "note": note}, note
    return state_dir, {}, None


def by_words(enabled: bool = True) -> tuple[bool, str | None]:
    """Whether this client asks for words alone (``enabled``: the work tree's setting; the
    model switched off in this environment, DMM_SEMANTIC=off; its runtime missing here), and
    the note saying why when that is worth saying (not for a person's own choice)."""
    from dmm import modelcheck

    meaning = enabled and not modelcheck.switched_off()
    why = modelcheck.unavailable() if meaning else None
    return not meaning or why is not None, ("ranked by words: " + why if why else None)


def via_background(ws, request: dict, start_wait: float = START_WAIT_S,
                   answer_wait: float = ANSWER_WAIT_S) -> tuple[dict | None, str | None]:
    """(answer, None) from the background process; (None, note) when this command answers by
    itself instead (note None: nothing worth saying, e.g. the user turned the layer off).
    A DmmError the process reports (a bad budget, an empty task) is raised here."""
    state_dir, extra, note = route(ws)
    if state_dir is None:
        return None, note
    try:
        answer = ask(ws.root, state_dir, dict(request, **extra), start_wait=start_wait,
                     answer_wait=answer_wait)
    except Unavailable as exc:
        return None, f"ranked by words: {exc}"
    if answer.get("ok"):
        return answer, None
    if isinstance(answer.get("error"), dict):
        from dmm.errors import DmmError, ExitCode

        err = answer["error"]
        exc = DmmError(str(err.get("message")), err.get("hint"))
        try:
            exc.exit_code = ExitCode(int(err.get("exit_code", 6)))
        except ValueError:
            pass
        raise exc
    why = answer.get("why", "the background process could not answer")
    return None, note or f"ranked by words: {why}"


def query_request(task: str, *, budget: int | None = None, scopes=(), tags: str = "",
                  all_tags=(), exclude_ephemeral: bool = False,
                  include_deprecated: bool = False, as_json: bool = False) -> dict:
    """The request of `dmm query` (its options as the command takes them: ``tags`` the old
    comma-separated spelling, ``all_tags`` each TAG or TAG,TAG)."""
    return {"op": "query", "task": task, "budget": budget, "scopes": list(scopes),
            "tags": tags.split(","), "exclude_ephemeral": exclude_ephemeral,
            "all_tags": [t for tag in all_tags for t in tag.split(",")],
            "include_deprecated": include_deprecated, "json": as_json}


def lexical_worth_it(ws, state_dir: Path) -> bool:
    """Whether a request ranked by words alone goes to the background process: one runs
    already (its socket is there), or the work tree's cache is large (LEXICAL_CACHE_BYTES).
    Two stats: a small store never starts a process for words."""
    try:
        if socket_path(state_dir).exists():
            return True
    except OSError:
        return False
    return large(ws)


def large(ws) -> bool:
    """Whether the cache of the work tree ``ws`` is LEXICAL_CACHE_BYTES or more (one stat)."""
    from dmm.index.db import DB_NAME

    try:
        limit = int(os.environ.get(LEXICAL_ENV) or LEXICAL_CACHE_BYTES)
    except ValueError:
        limit = LEXICAL_CACHE_BYTES
    try:
        return os.stat(ws.state_dir / DB_NAME).st_size >= limit
    except OSError:
        return False


def warm(ws) -> None:
    """Start the background process of ``ws`` now, without waiting for it, when a query
    would ask it (the model on, or a large store by words): the post-commit hook calls this,
    so the next prompt finds it ready. Never raises: a warm-up is never worth a failure."""
    from dmm import modelcheck

    try:
        cfg = ws.config["semantic"]
        if not cfg["background"]:
            return
        from dmm.fsutil import state_folder

        state_dir = state_folder(ws.shared_state_dir)
        if socket_path(state_dir).exists():
            return
        meaning = cfg["enabled"] and modelcheck.unavailable() is None
        if meaning or lexical_worth_it(ws, state_dir):
            start(ws.root, state_dir)
    except Exception:  # noqa: BLE001 - the next query starts it anyway
        pass
