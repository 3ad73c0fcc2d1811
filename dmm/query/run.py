"""One query, end to end, as the CLI, the MCP server and the HTTP API run it: bounds the task,
opens a fresh cache, builds the Memory Pack and logs it in the usage log."""

from __future__ import annotations

import contextvars
import sqlite3
import time

from dmm.errors import BusyError, InvalidInputError
from dmm.index import db
from dmm.index.refresh import open_fresh
from dmm.memory.model import SCOPES
from dmm.query import MAX_BUDGET
from dmm.query.pack import Pack, PackOptions, build_pack, ever_scanned
from dmm.workspace import Workspace



# how a pack's cache was opened, besides fresh
STALE = "stale"  # another dmm was updating it: as it was before
FIRST_BUILD = "first build"  # another dmm was building it for the first time: baseline only
FIRST_BUILD_WAIT_S = 0.5  # what a query waits for another dmm's first build, at most
FIRST_BUILD_NOTE = ("the memory index is being built for the first time (another dmm is "
                    "reading every memory file): only the baseline memories, read from their "
                    "files; ask again in a moment")
HELD = "held"  # another dmm kept the cache locked past the wait: baseline only
HELD_NOTE = ("another dmm holds the memory index (a first build or a reindex writing it): "
             "only the baseline memories, read from their files; ask again in a moment")
# A long-lived process that is still warming (its first check of the files, its ranking in
# memory: seconds at 50,000 memories) answers an impatient request (a hook) from the cache as
# it is, ranked by words in SQL, rather than make it wait past its deadline for nothing; the
# value is the time (time.monotonic) past which the answer is of no use: its SQL stops then,
# leaving the machine to the warm-up and the next prompt (a hook's client has gone by then)
UNCHECKED = "unchecked"
AS_IT_IS: contextvars.ContextVar[float | None] = contextvars.ContextVar("as_it_is",
                                                                        default=None)
UNCHECKED_WARNING = ("the background process is starting: this pack is from the memory index "
                     "as the last dmm command left it, not yet checked against the files")


def open_cache(ws: Workspace, *, wait: float | None = None,
               stand_in=None) -> tuple[sqlite3.Connection, str | None]:
    """(the fresh cache, None); when another dmm holds it: (the cache as it is, STALE) for the
    impatient (an agent's hook), and for anyone while that dmm builds it for the first time
    (a new clone, a long-lived server warming it as it starts: seconds for thousands of
    memories), (the baseline memories read from their files, FIRST_BUILD) rather than wait
    more than FIRST_BUILD_WAIT_S (or ``wait``) for it. ``stand_in(ws)``: what is returned
    instead of the baseline then (a caller that reads the memory files itself)."""
    from dmm.index.refresh import baseline_only

    stand_in = stand_in or baseline_only
    until = AS_IT_IS.get()
    if until is not None and db.usable(ws.state_dir) and db.filled_state(ws.state_dir):
        conn = db.connect(ws.state_dir)
        conn.set_progress_handler(lambda: time.monotonic() > until, 100)
        return conn, UNCHECKED
    # a hook (impatient) has less than a second in all: it does not wait at all
    deadline = time.monotonic() + (0.0 if db.is_impatient() else
                                   FIRST_BUILD_WAIT_S if wait is None else wait)
    # filled: False for a first build, None while the file is locked (a first build whose
    # large transaction locks it, or a reindex: either may last seconds; a hook says so in
    # its one line instead), True otherwise
    while db.usable(ws.state_dir) and ((filled := db.filled_state(ws.state_dir)) is False or
                                       (filled is None and not db.is_impatient())):
        try:
            with db.impatient():  # the first build: done here when no one else is at it
                return open_fresh(ws)[0], None
        except (BusyError, sqlite3.OperationalError) as exc:
            if isinstance(exc, sqlite3.OperationalError) and not db.busy(exc):
                raise
        if time.monotonic() >= deadline:  # a long build (thousands of files): not waited for
            return stand_in(ws), FIRST_BUILD if filled is False else HELD
        time.sleep(0.02)  # a small store's first build ends within the wait
    try:
        return open_fresh(ws)[0], None
    except (BusyError, sqlite3.OperationalError) as exc:
        if isinstance(exc, sqlite3.OperationalError) and not db.busy(exc):
            raise
        if not db.is_impatient():
            # locked past the busy timeout: a first build whose large transaction locks the
            # file (so ever_filled could not tell), or a reindex. An agent's tool call gets the
            # baseline and a note rather than an error it cannot act on (issue 36)
            return stand_in(ws), HELD
    return db.connect(ws.state_dir), STALE  # a BusyError here: not even readable now


def _resident(ws: Workspace, conn: sqlite3.Connection):
    """The in-memory ranking state of a long-lived process (query/resident.py), else None
    (a short command never imports numpy)."""
    from dmm.semantic import service

    if not service.enabled():
        return None
    from dmm.query import resident

    resident.enable()
    if not db.usable(ws.state_dir):
        return resident.state(None, conn)  # an in-memory cache per connection: nothing to share
    return resident.state(ws.state_dir, conn, connect=lambda: db.connect(ws.state_dir),
                          limit=service.resident_limit(ws))


# a long-lived process: state folder -> (cache generation, when) another work tree's scan was
# looked for
_ADOPTION_TRIED: dict = {}
ADOPTION_RETRY_S = 60.0


def _adoption_untried(ws: Workspace, conn: sqlite3.Connection) -> bool:
    """Whether to look for another work tree's scan of these memories: in a short command,
    always; in a long-lived process once per state of the cache and minute (naming the result
    hashes every memory's digest: 0.5 s a query at 50,000 memories never scanned)."""
    from dmm.semantic import service

    if not service.enabled():
        return True
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    generation, now = (row[0] if row else None), time.monotonic()
    tried = _ADOPTION_TRIED.get(ws.state_dir)
    if generation is not None and tried is not None and tried[0] == generation and \
            now - tried[1] < ADOPTION_RETRY_S:
        return False
    _ADOPTION_TRIED[ws.state_dir] = (generation, now)
    return True


def _adopt(ws: Workspace, conn: sqlite3.Connection) -> None:
    """A cache never scanned takes another work tree's scan of these very memories, when
    there is one (a linked work tree: conflicts/shared.py)."""
    if not ever_scanned(conn) and _adoption_untried(ws, conn):
        from dmm.conflicts.service import adopt

        with db.impatient():  # never waits for another dmm's scan
            adopt(ws, conn)


def warm(ws: Workspace) -> None:
    """Bring the cache of ``ws`` up to date and, in a long-lived process, its postings into
    memory (query/resident.py), so that the first query waits for neither. The ranking is
    made from the cache as it is first: checking it against the files walks the store (a
    second at 50,000 memories), and a hook answered meanwhile (AS_IT_IS) ranks from memory
    rather than by SQL over the postings, which took it past its deadline."""
    from dmm.priority import step_aside

    if db.usable(ws.state_dir) and db.filled_state(ws.state_dir):
        conn = db.connect(ws.state_dir)
        try:
            with db.snapshot(conn):
                _resident(ws, conn)
        finally:
            conn.close()
    step_aside()  # between its steps, a request being answered goes first (dmm/priority.py)
    conn = open_fresh(ws)[0]
    try:
        step_aside()
        with db.snapshot(conn):
            _resident(ws, conn)
        step_aside()
        _adopt(ws, conn)  # here rather than in the first query after
    finally:
        conn.close()


def memory_pack(ws: Workspace, task: str, *, budget: int | None = None,
                scopes: tuple[str, ...] = (), tags: tuple[str, ...] = (),
                all_tags: tuple[str, ...] = (), exclude_ephemeral: bool = False,
                include_deprecated: bool = False, for_model: str | None = None,
                named: str | None = None, notes: tuple[str, ...] = ()) -> Pack:
    """The Memory Pack for ``task``, logged. ``for_model`` (a kind of dmm/query/text.py:
    "query", "baseline", "prompt"): the pack also as the text a model reads (``pack.text``),
    the budget counting that whole text, which names the task as ``named`` (default: the
    task). ``notes``: why it is ranked by words, when the caller knows (the pack says it)."""
    started = time.perf_counter()
    # bytes that are not UTF-8 (from a file or a shell variable) are replaced, not a crash
    task = task.encode("utf-8", "surrogateescape").decode("utf-8", "replace").strip()
    if not task:
        raise InvalidInputError("the task is empty: describe what you are about to do")
    if budget is not None and not 1 <= budget <= MAX_BUDGET:
        raise InvalidInputError(f"the budget must be between 1 and {MAX_BUDGET} tokens")
    wrong = [s for s in scopes if s not in SCOPES[1:]]
    if wrong:
        raise InvalidInputError(f"unknown scope {wrong[0]!r}: one of {', '.join(SCOPES[1:])}")
    cfg = ws.config["query"]
    opts = PackOptions(budget=budget or int(cfg["default_budget"]), scopes=tuple(scopes),
                       tags=tuple(t.strip() for t in tags if t.strip()),
                       all_tags=tuple(t.strip() for t in all_tags if t.strip()),
                       exclude_ephemeral=exclude_ephemeral, include_deprecated=include_deprecated)
    conn, how = open_cache(ws)
    try:
        from dmm.semantic import service  # light: the model loads only in long-lived processes

        if how in (FIRST_BUILD, HELD):  # nothing to rank but the baseline, nothing to keep
            index, note = None, FIRST_BUILD_NOTE if how == FIRST_BUILD else HELD_NOTE
        elif how == UNCHECKED:  # by words: the process loads the model once it is warm
            index, note = None, next(iter(notes), None)
        else:
            index, note = service.for_query(ws, conn)
            note = note or next(iter(notes), None)
        if how is None:
            _adopt(ws, conn)
        if for_model is not None:
            from dmm.memory.tokens import count_tokens
            from dmm.query import text

            opts.entry_overhead = text.ENTRY_OVERHEAD
            opts.reserve = text.reserve(named or task) + (count_tokens(note) + 2 if note else 0)
            opts.with_baseline = for_model != "prompt"
        with db.snapshot(conn):
            pack = build_pack(conn, task, opts, cfg, ws.conflicts_dir, semantic=index,
                              resident=None if how in (FIRST_BUILD, HELD)
                              else _resident(ws, conn))
        if db.FALLBACK_REASON and not ever_scanned(conn):
            # no cache can keep a scan here (a read-only store): check the pack's own
            # memories now, rather than say nothing was checked
            from dmm.conflicts.scanner import scan

            scan(conn, ws.config["conflicts"], scan_type="targeted",
                 focus_ids={e.memory.id for e in pack.baseline + pack.retrieved})
            with db.snapshot(conn):
                pack = build_pack(conn, task, opts, cfg, ws.conflicts_dir, semantic=index)
        if note:
            pack.notes.append(note)
        if how == STALE:
            pack.warnings.append("another dmm is updating the cache: this pack is from the "
                                 "cache as it was before")
        elif how == UNCHECKED:
            pack.warnings.append(UNCHECKED_WARNING)
        if for_model is not None:
            from dmm.query import text
            from dmm.query.pack import conflicts_among

            with db.snapshot(conn):
                pack.text = text.text(pack, for_model, named or task, lambda ids: (
                    conflicts_among(conn, ids, ws.conflicts_dir)))
    finally:
        conn.close()
    if ws.config["usage"]["enabled"]:
        from dmm.usage.log import log_query

        try:  # telemetry must never cost the agent its Memory Pack
            log_query(ws, pack, int((time.perf_counter() - started) * 1000))
        except (sqlite3.Error, OSError) as exc:
            pack.warnings.append(f"usage not logged: {exc}")
    return pack
