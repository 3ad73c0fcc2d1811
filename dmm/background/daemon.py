"""The per-repository background process: keeps the model and the semantic index loaded and
answers `dmm query`, the agent hooks, `dmm mcp` and `dmm serve` over ``semantic.sock`` in the
clone's shared state folder (``<git-common-dir>/dmm/``, where no commit can put a file or a
link).

Run as ``python -I -m dmm.background.daemon REPO`` by ``client.start`` (never by hand; the
installed dmm, never code from the working tree). One per clone, whatever work tree started it:
a request names its work tree (``root``), which must be one of this clone's (each has its own
cache and index; the model is loaded once, and the vectors are shared by text). It holds an
flock on ``semantic.lock`` for its whole life, and a second one started meanwhile exits. It
holds nothing git lacks: every answer is computed from the memory files as the CLI would. It
exits after ``semantic.idle_minutes`` without a request, when its socket is removed or replaced,
when the cache folder goes away, and when a client of another dmm version asks it something
(that client then starts a new one). With the model off (its environment's DMM_SEMANTIC, or
the work tree's settings) it ranks by words, from postings it keeps in memory (issue 39). As it
starts it warms the cache and those postings, then runs the conflict scans of ``[scan]``
(dmm/conflicts/schedule.py). Protocol: one JSON request line, one JSON answer.
A connection that sends no request within READ_TIMEOUT_S is closed, and at most
MAX_CONNECTIONS are served at once (one thread each; more are answered "busy" at once): idle
connections cannot pile up threads.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import socketserver
import sys
import threading
import time
from pathlib import Path

from dmm.background import client

LOCK = "semantic.lock"
LOCK_WAIT_S = 5.0
MAX_REQUEST_BYTES = client.MAX_REQUEST_BYTES
CHECK_EVERY_S = 1.0
READ_TIMEOUT_S = 10.0  # a client sends its request line at once; the answer may take longer
MAX_CONNECTIONS = 16  # served at once (2 cores): each holds a thread
BUSY = json.dumps({"ok": False, "why": "the background process is busy"}).encode()


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request, client_address) -> None:
        """A thread for the connection while fewer than MAX_CONNECTIONS are served; else a
        "busy" answer at once (the client answers by itself), from this thread."""
        if not self.slots.acquire(blocking=False):
            try:
                request.settimeout(0.1)
                request.sendall(BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        # a request being answered is not idleness, however long it takes (one waiting for
        # the model to load was once stopped half way, and its client got no answer)
        self.daemon.busy(+1)  # type: ignore[attr-defined]
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.daemon.busy(-1)  # type: ignore[attr-defined]
            self.slots.release()


class Daemon:
    def __init__(self, root: Path) -> None:
        from dmm.workspace import Workspace

        self.root = root
        self.ws = Workspace(root)
        self.state_dir = self.ws.shared_state_dir
        self.build = client.build_id()
        self.last_request = time.monotonic()  # when the last request ended
        self.server: _Server | None = None
        self.inode: int | None = None
        self.stopping = threading.Event()
        self.serving = 0  # requests being answered now
        # set once the cache has been checked against the files and the ranking is in memory;
        # until then a hook is answered from the cache as it is (query/run.py: AS_IT_IS)
        self.warmed = threading.Event()
        self._serving_lock = threading.Lock()

    # -- life cycle -------------------------------------------------------------------------

    def run(self) -> int:
        from dmm.fsutil import open_nofollow
        from dmm.index import db
        from dmm.semantic import service

        if not db.usable(self.state_dir):
            return 0
        lock = open_nofollow(self.state_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        if not self._lock(lock):
            return 0  # another one serves this repository
        path = client.socket_path(self.state_dir)
        os.chdir(self.state_dir)  # bind by a short relative name: deep folders fit
        path.unlink(missing_ok=True)
        old = os.umask(0o177)
        try:
            self.server = _Server(client.SOCKET, _Handler)
        finally:
            os.umask(old)
        os.chmod(client.SOCKET, 0o600)
        self.inode = os.stat(client.SOCKET).st_ino
        self.server.daemon = self  # type: ignore[attr-defined]
        service.enable()
        # the cache and the words' postings first, then the model (_warm): a prompt typed
        # seconds after the session's first hook started this process is answered by words
        # while the model loads, and loading both at once left the process answering nothing
        threading.Thread(target=self._warm, args=(self.ws,), daemon=True,
                         name="dmm-warm").start()
        # idle from now: getting here (numpy, the model's session) can take longer than a
        # short idle limit on a loaded machine, and a client's first request is waiting
        self.last_request = time.monotonic()
        watcher = threading.Thread(target=self._watch, daemon=True, name="dmm-semantic-watch")
        watcher.start()
        try:
            self.server.serve_forever(poll_interval=0.2)
        finally:
            self.server.server_close()
            self._remove_socket()
            os.close(lock)
        return 0

    @staticmethod
    def _lock(fd: int) -> bool:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.05)

    def _remove_socket(self) -> None:
        """Remove our socket, never one a newer process made in its place: once only, since
        the next process's socket may be given the very inode number ours had."""
        try:
            if self.inode is not None and \
                    os.stat(self.state_dir / client.SOCKET).st_ino == self.inode:
                os.unlink(self.state_dir / client.SOCKET)
        except OSError:
            pass
        self.inode = None

    def _watch(self) -> None:
        # DMM_SEMANTIC_IDLE_S: seconds instead of the setting's minutes (the life-cycle tests)
        idle_s = float(os.environ.get("DMM_SEMANTIC_IDLE_S")
                       or 60.0 * float(self._config()["idle_minutes"]))
        tick = time.monotonic()
        while not self.stopping.wait(CHECK_EVERY_S):
            # woken late: a thread held the interpreter (the model's session is made in one
            # call of seconds on a loaded machine), and a request may be waiting to be read
            # as long: not idle, whatever the clock says (it was once stopped so, unanswered)
            now = time.monotonic()
            stalled, tick = now - tick > 2 * CHECK_EVERY_S, now
            try:
                same = os.stat(self.state_dir / client.SOCKET).st_ino == self.inode
            except OSError:
                same = False
            if not same or (self.idle() > idle_s and not stalled):
                self.stop()

    def _config(self) -> dict:
        from dmm.workspace import Workspace

        try:
            return Workspace(self.root).config["semantic"]
        except Exception:  # noqa: BLE001 - a broken config.toml: the defaults keep it alive
            from dmm.config import DEFAULTS

            return DEFAULTS["semantic"]

    @staticmethod
    def _meaning(ws) -> bool:
        """Whether this process ranks ``ws`` by meaning (else by words alone: DMM_SEMANTIC=off
        in the environment it was started with, or the layer off in the work tree's config)."""
        from dmm.semantic import model

        return bool(ws.config["semantic"]["enabled"]) and model.unavailable() is None

    def _warm(self, ws) -> None:
        from dmm.agents.hook import baseline_from_files
        from dmm.conflicts.schedule import Schedule
        from dmm.query.run import warm

        try:
            # the text a hook answers when it has no pack in time, kept in the state folder:
            # a cold hook then reads it at once rather than parse every baseline file
            baseline_from_files(ws)
            warm(ws)
            from dmm.query.text import prepare

            prepare()  # the templates compiled before the first request needs them
            if self._meaning(ws):
                from dmm.semantic import service

                service.start_sync(ws)
        except Exception as exc:  # noqa: BLE001 - the first query reads what it needs
            print(f"dmm: warming the cache failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
        finally:
            self.warmed.set()
        # then the scans of [scan] (conflicts/schedule.py), when no request is being served
        Schedule(ws.root, self.stopping,
                 idle=self.idle).start()

    def busy(self, change: int) -> None:
        """One more (+1) or one fewer (-1) request being answered; idle counts from the
        end of the last one."""
        with self._serving_lock:
            self.serving += change
            self.last_request = time.monotonic()

    def idle(self) -> float:
        """Seconds since the last request ended; 0 while one is being answered."""
        with self._serving_lock:
            return 0.0 if self.serving else time.monotonic() - self.last_request

    def stop(self) -> None:
        if not self.stopping.is_set():
            self.stopping.set()
            # the socket's name goes first: a client connecting while the server winds down
            # would wait in its backlog and be dropped unanswered; by name it finds no process
            # and starts the next one (a client told "stale" waits for exactly this)
            self._remove_socket()
            threading.Thread(target=self.server.shutdown, daemon=True).start()

    # -- answers ----------------------------------------------------------------------------

    def answer(self, request: dict) -> dict:
        from dmm.errors import DmmError
        from dmm.semantic import service

        # a "stale" answer stops this process once it is sent (_Handler): stopped first, the
        # process could exit before its handler thread wrote it, and the client would answer
        # by words saying the process crashed
        if request.get("build") != self.build:
            return {"ok": False, "stale": True}
        op = request.get("op")
        try:
            ws = self._work_tree(request.get("root"))  # its config as it is now
            if ws is None:
                return {"ok": False, "why": "not a work tree of the repository this background "
                                            "process serves"}
            if request.get("quick") and not self._quick_allowed(ws):
                return {"ok": False, "why": "the work tree's settings keep its queries out of "
                                            "the background process"}
            from dmm.semantic import model

            words = not request.get("semantic", True) or not ws.config["semantic"]["enabled"]
            if not words and op in ("query", "hook") and model.switched_off():
                # started with the model switched off (DMM_SEMANTIC=off) and asked for
                # meaning: the client starts one that loads it, as for another build
                return {"ok": False, "stale": True}
            token = service.WORDS.set(words)  # ranked by words alone, with postings resident
            from dmm import priority

            try:
                with priority.answering():  # the warm-up's background work steps aside
                    return self._answer(ws, op, request)
            finally:
                service.WORDS.reset(token)
        except DmmError as exc:
            return {"ok": False, "error": {"message": exc.message, "hint": exc.hint,
                                           "exit_code": int(exc.exit_code)}}
        except Exception as exc:  # noqa: BLE001 - the client answers by itself instead
            return {"ok": False, "why": f"{type(exc).__name__}: {exc}"}

    @staticmethod
    def _quick_allowed(ws) -> bool:
        """What the command line checks before it asks, for a client that asked without
        loading the settings or the store (background/quick.py): the work tree's settings
        send its queries here, and its store is one dmm reads (an unsafe one raises: the
        client then runs the command line, which says what is wrong)."""
        from dmm.errors import NotInitializedError

        ws.check_layout()
        if not ws.memory_dir.is_dir():
            raise NotInitializedError(f"no dmm memory store in {ws.root}")
        return bool(ws.config["semantic"]["background"])

    def _answer(self, ws, op, request: dict) -> dict:
        """The answer to ``op`` about the work tree ``ws``."""
        if op == "hello":
            return {"ok": True, "pid": os.getpid(), "build": self.build}
        if op == "stop":
            self.stop()
            return {"ok": True}
        if op == "fresh":
            return self._fresh(ws)
        if op == "query":
            return self._query(ws, request)
        if op == "hook":
            return self._hook(ws, request)
        return {"ok": False, "why": f"unknown request {op!r}"}

    def _work_tree(self, root):
        """The work tree a request names (this process's own when it names none), when it is
        one of this clone's; else None (its state, caches and socket are another clone's)."""
        from dmm.workspace import Workspace

        if root is None or str(root) == str(self.root):
            return Workspace(self.root)
        try:
            ws = Workspace(Path(str(root)).resolve())
            same = ws.shared_state_dir.resolve() == self.state_dir.resolve()
        except Exception:  # noqa: BLE001 - not a repository, a broken one: not ours
            return None
        return ws if same else None

    @staticmethod
    def _fresh(ws) -> dict:
        """Make the cache fresh (by the watch: no walk when nothing changed) and say which
        state it is in, so a short command can skip its own walk (index/refresh.py)."""
        from dmm.index.refresh import _token, open_fresh

        conn, report = open_fresh(ws)
        try:
            return {"ok": True, "token": [list(pair) for pair in _token(conn)],
                    "files": report.files}
        finally:
            conn.close()

    def _query(self, ws, r: dict) -> dict:
        from dmm.query.run import memory_pack
        from dmm.render import render, to_json
        from dmm.semantic import service

        wait = r.get("wait")
        token = service.WAIT.set(None if wait is None else float(wait))
        try:
            kind = r.get("for_model")
            pack = memory_pack(ws, str(r["task"]), budget=r.get("budget"),
                               scopes=tuple(r.get("scopes") or ()),
                               tags=tuple(r.get("tags") or ()),
                               all_tags=tuple(r.get("all_tags") or ()),
                               exclude_ephemeral=bool(r.get("exclude_ephemeral")),
                               include_deprecated=bool(r.get("include_deprecated")),
                               for_model=kind if kind in ("query", "baseline", "prompt")
                               else None,
                               notes=(str(r["note"]),) if r.get("note") else ())
        finally:
            service.WAIT.reset(token)
        if r.get("data"):  # `dmm mcp`, `dmm serve`: the pack as data, and its text
            return {"ok": True, "pack": json.loads(to_json(pack.to_dict())),
                    "text": pack.text, "notes": pack.notes}
        out = (to_json(pack.to_dict()) if r.get("json")
               else render("pack.md.j2", pack=pack, stats=pack.stats()))
        return {"ok": True, "out": out, "notes": pack.notes}

    def _hook(self, ws, r: dict) -> dict:
        from dmm.agents.hook import answer_in_process
        from dmm.query.run import AS_IT_IS
        from dmm.semantic import service

        wait = float(r.get("wait", 2.0))
        token = service.WAIT.set(wait)
        # still warming (seconds at 50,000 memories): the cache as it is, ranked by words,
        # within the hook's deadline (its client waits twice ``wait``), rather than a pack
        # after it (for this work tree only)
        as_it_is = AS_IT_IS.set(time.monotonic() + 2 * wait if not self.warmed.is_set()
                                and ws.root == self.root else None)
        try:
            payload = r.get("payload")
            # final: the client prints it as it is (background/quick.py)
            return {"ok": True, "out": answer_in_process(
                ws, str(r["event"]), payload if isinstance(payload, dict) else {})}
        finally:
            AS_IT_IS.reset(as_it_is)
            service.WAIT.reset(token)


class _Handler(socketserver.StreamRequestHandler):
    timeout = READ_TIMEOUT_S  # applied to the connection by StreamRequestHandler.setup

    def handle(self) -> None:
        daemon: Daemon = self.server.daemon  # type: ignore[attr-defined]
        try:
            uid = _peer_uid(self.connection)
            if uid is not None and uid != os.getuid():
                return  # the socket's mode already refuses others; this is belt and braces
            line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
            if len(line) > MAX_REQUEST_BYTES:
                answer = {"ok": False, "why": "request too large"}
            else:
                from dmm.agents.inputs import TooDeep, load_bounded

                why = "not a JSON request"
                try:  # bounded: 1,000 levels of [ once left a RecursionError and no answer
                    request = load_bounded(line)
                except TooDeep as exc:
                    request, why = None, exc.message
                except ValueError:
                    request = None
                answer = (daemon.answer(request) if isinstance(request, dict)
                          else {"ok": False, "why": why})
            self.wfile.write(json.dumps(answer).encode())
            if answer.get("stale"):
                daemon.stop()
        except (BrokenPipeError, ConnectionResetError, TimeoutError, socket.timeout):
            pass  # the client went away or sent nothing in time: its thread ends here


def _peer_uid(conn: socket.socket) -> int | None:
    import struct

    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    return struct.unpack("3i", creds)[1]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m dmm.background.daemon REPOSITORY", file=sys.stderr)
        return 2
    import faulthandler
    import signal

    # `kill -USR1 PID` writes every thread's stack to semantic.log (its stderr): what a
    # process that stopped answering is waiting for (a diagnosis: reading the frames of
    # threads that run on can crash the process, rarely; docs/semantic.md)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    return Daemon(Path(argv[0]).resolve()).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
