"""`dmm agent hook EVENT`: what an agent's hook adds to its context (Claude Code's
SessionStart and UserPromptSubmit; any agent that runs a command with the prompt as JSON on
stdin). It never blocks the agent: without a pack in time it answers the baseline memories
read from their files (``Fallback``), and any other failure is one line of output and exit 0.
The baseline comes once per session: at its start, or, when the start did not deliver it, in
the first prompt's pack (dmm.agents.sessions remembers which sessions have it).

IO boundary: reads the hook's JSON from stdin (done by the CLI), returns text for stdout; the
fallback reads the baseline files, and the sessions' record lives in the state folder.
"""

from __future__ import annotations

import json

from dmm.background.quick import DEADLINE_S, EVENTS  # noqa: F401 - the hooks, their deadline
from dmm.workspace import Workspace


NO_PACK = "(dmm: no memory pack this time: "  # how every line that carries no pack starts
BUSY = (NO_PACK + "another dmm holds the cache (a reindex or a scan); the next prompt gets "
        "one)\n")
BUILDING = (NO_PACK + "the memory index is being built for the first time; the next prompt "
            "gets one)\n")
STARTING = (NO_PACK + "the background process that keeps this large store's index in memory "
            "is getting ready; the next prompt gets one)\n")


def by_itself(ws: Workspace, event: str, payload: dict) -> str:
    """The hook's answer when the repository's background process gave none: made here for a
    small store; for a large one (background/client.large: ranking it from SQLite takes a short
    process most of its deadline, 1-2 s at 10,000 memories on a busy machine) one line at
    once, which ``Fallback`` turns into the baseline when the session is owed it, leaving the
    machine to the process that is warming up for the next prompt."""
    from dmm.background import client

    if ws.config["semantic"]["background"] and client.large(ws):
        return STARTING
    return context_for(ws, event, payload)


def answer_in_process(ws: Workspace, event: str, payload: dict) -> str:
    """A hook's final answer as the background process gives it: the pack's text, or the
    baseline read from its files when no pack could be made and the session is owed it, the
    session's record of it kept (``Fallback.settle``); a client prints it as it is
    (dmm/background/quick.py)."""
    return Fallback(ws, event, payload, after=None).settle(context_for(ws, event, payload))


def context_for(ws: Workspace, event: str, payload: dict) -> str:
    """The Memory Pack text for the hook ``event``: the baseline at session start, the pack
    for the prompt the user just typed otherwise; cut to agents.hook_max_chars. Never waits
    for a lock another dmm holds: it reads the cache as it is, or says in one line why not."""
    import sqlite3

    from dmm.errors import BusyError
    from dmm.index import db

    try:
        with db.impatient():
            return _context(ws, event, payload)
    except BusyError:
        return BUSY
    except sqlite3.OperationalError as exc:
        if db.busy(exc):
            return BUSY
        raise


def _context(ws: Workspace, event: str, payload: dict) -> str:
    from dmm.query.run import memory_pack

    cfg = ws.config["agents"]
    # the text the agent receives costs what agents.hook_budget says (dmm/query/text.py)
    budget = int(cfg["hook_budget"])
    if event == "session-start":
        if str(payload.get("source") or "") == "resume":
            return ""  # the resumed conversation holds the baseline already
        pack = memory_pack(ws, "the baseline memories for a new session", budget=budget,
                           for_model="baseline")
        if not pack.baseline:
            return ""
    else:
        prompt = str(payload.get("prompt") or "").strip()
        if not prompt or payload.get("agent_id"):
            return ""  # nothing asked, or a subagent's turn: packs are for a person's prompts
        owed = baseline_owed(ws, payload)
        # the baseline came once at session start: the whole budget goes to this prompt; a
        # session whose start did not deliver it gets the whole pack here ("query": the
        # baseline and the retrieved memories), within the same budget
        pack = memory_pack(ws, ranking_text(prompt), budget=budget,
                           for_model="query" if owed else "prompt", named=prompt)
        if not pack.retrieved and not pack.conflicts and not (owed and pack.baseline):
            if _unindexed(pack):  # nothing to rank yet: said, rather than a silent turn
                return BUILDING
            return ""  # nothing beyond the baseline, which the session already has
    if not pack.baseline and not pack.retrieved and any(
            w.startswith("another dmm is updating") for w in pack.warnings):
        return BUSY  # the cache is being rebuilt: nothing to read yet
    return fit(pack.text or "", int(cfg["hook_max_chars"]))


def _unindexed(pack) -> bool:
    """Whether ``pack`` was made without the index (another dmm building it first: only the
    baseline, read from its files)."""
    from dmm.query.run import FIRST_BUILD_NOTE, HELD_NOTE

    return any(n in (FIRST_BUILD_NOTE, HELD_NOTE) for n in pack.notes)


def baseline_owed(ws: Workspace, payload: dict) -> bool:
    """Whether a prompt's pack must carry the baseline: the session (named by the client) has
    not received it, its start having answered late or not at all."""
    from dmm.agents import sessions

    session = sessions.session_of(payload)
    return session is not None and not sessions.delivered(ws, session)


def baseline_from_files(ws: Workspace) -> str:
    """The baseline memories read from their files, with no index: what a hook that cannot
    answer in time gives instead of nothing (the same text as the SessionStart pack,
    saying where it comes from). Empty when there is no baseline memory.

    Parsing and rendering cost a cold process ~200 ms (PyYAML, jinja2), which a hook short
    of time does not have: the text is kept in the state folder under a key of what it was
    made from (each baseline file's name, size and time, the day, the template, the limit),
    so the next hook gets it for one folder listing while nothing changed. The template is
    named by its content, not its file's time: another install of the same dmm (a
    reinstall, a second checkout) finds the text kept, where making it again took a cold
    hook past its deadline. Text made from a file changed within store.RACY_NS is not kept:
    an edit of the same size within the same time tick would leave the key as it was, and
    the next hook would answer the old text."""
    import datetime as dt
    import hashlib
    import time

    from dmm import __version__, store
    from dmm.resources import resource_dir

    today = dt.date.today()
    limit = int(ws.config["store"]["max_file_bytes"])
    files = sorted(store.scan(ws.memory_dir / "baseline").items())[:MAX_FALLBACK_FILES]
    template = (resource_dir("templates") / "agent_pack.md.j2").read_bytes()
    key = hashlib.sha256(repr((files, str(today), limit, ws.config["agents"]["hook_max_chars"],
                               __version__, template)).encode()).hexdigest()
    kept = _kept_baseline(ws, key)
    if kept is not None:
        return kept
    text = _baseline_text(ws, [rel for rel, _ in files], today, limit)
    if all(mtime < time.time_ns() - store.RACY_NS for _, (_, mtime) in files):
        _keep_baseline(ws, key, text)
    return text


FALLBACK_FILE = "baseline-fallback.txt"  # in the state folder: a key line, then the text


def _kept_baseline(ws: Workspace, key: str) -> str | None:
    from dmm.fsutil import UnreadableFile, read_regular

    try:
        data = read_regular(ws.state_dir / FALLBACK_FILE, 1 << 20).decode("utf-8")
    except (OSError, UnicodeDecodeError, UnreadableFile):  # absent or unreadable: made again
        return None
    head, _, text = data.partition("\n")
    return text if head == key else None


def _keep_baseline(ws: Workspace, key: str, text: str) -> None:
    from dmm.fsutil import state_folder, write_atomic

    try:
        write_atomic(state_folder(ws.state_dir) / FALLBACK_FILE, key + "\n" + text)
    except OSError:
        pass  # the next hook reads the files again


def _baseline_text(ws: Workspace, names: list[str], today, limit: int) -> str:
    from dmm import store
    from dmm.query import text as pack_text
    from dmm.query.pack import Pack, PackEntry

    found = []
    for rel in names:
        memory, _ = store.read(ws.memory_dir, "baseline/" + rel, limit)
        if memory is not None and memory.scope == "baseline" and memory.is_active and \
                not memory.is_expired(today):
            found.append(PackEntry(memory, "baseline"))
    if not found:
        return ""
    note = ("the memory index was not ready in time: these are the baseline memories read "
            "from their files; the next prompt gets a Memory Pack")
    pack = Pack(task="", budget=int(ws.config["agents"]["hook_budget"]), baseline=found,
                retrieved=[], excluded=[], excluded_total=0, candidates=0, warnings=[],
                notes=[note])
    text = pack_text.text(pack, "baseline", "")
    return fit(text, int(ws.config["agents"]["hook_max_chars"]))


MAX_FALLBACK_FILES = 200  # baseline files read by the fallback: its cost stays bounded


class Fallback:
    """What a hook answers when it has no pack in time (its deadline passed, another dmm held
    the cache, anything failed): the baseline read from files, when the session is owed it
    (at its start, or a prompt of a session whose start did not deliver it; a prompt of a
    session the client does not name too, rather than nothing). It is read in a thread
    started ``after`` seconds (most hooks answer before and never pay for it), and
    ``settle`` records which session received the baseline."""

    def __init__(self, ws: Workspace, event: str, payload: dict,
                 after: float | None) -> None:
        import threading

        from dmm.agents import sessions

        self.ws, self.event = ws, event
        self.session = sessions.session_of(payload)
        if event == "session-start":
            self.owed = str(payload.get("source") or "") != "resume"
            if self.owed:  # a new, cleared or compacted conversation: owed until delivered
                sessions.forget(ws, self.session)
        else:
            self.owed = bool(str(payload.get("prompt") or "").strip()) and not \
                payload.get("agent_id") and not sessions.delivered(ws, self.session)
        self.in_pack = event == "user-prompt-submit" and baseline_owed(ws, payload)
        self.text: str | None = None
        self.lock = threading.Lock()
        self.timer = None if after is None else threading.Timer(after, self.prepare)
        if self.owed and self.timer is not None:  # None: read only when the pack fails
            self.timer.daemon = True
            self.timer.start()

    def prepare(self) -> str:
        """The baseline text, read once."""
        with self.lock:
            if self.text is None:
                try:
                    self.text = baseline_from_files(self.ws)
                except Exception:  # noqa: BLE001 - a hook never fails the agent
                    self.text = ""
            return self.text

    def late(self, line: str) -> str:
        """At the deadline: the baseline if it has been read by now, else ``line``."""
        return self._deliver(line, self.text if self.owed else None)

    def settle(self, text: str) -> str:
        """What the hook prints for its answer ``text``: the baseline instead of a line that
        carries no pack, when owed; records the session's baseline as delivered."""
        from dmm.agents import sessions

        if self.timer is not None:
            self.timer.cancel()
        failed = text.startswith(NO_PACK)
        if failed and self.owed:
            return self._deliver(text, self.prepare())
        # a session's start answered (even with nothing: no baseline memory), or a prompt's
        # pack that carried the baseline the session was owed
        if not failed and self.owed and (self.event == "session-start" or
                                         (self.in_pack and text)):
            sessions.record(self.ws, self.session)
        return text

    def _deliver(self, line: str, baseline: str | None) -> str:
        from dmm.agents import sessions

        if not baseline:
            return line
        sessions.record(self.ws, self.session)
        return baseline



MAX_PROMPT = 10_000  # characters of the prompt that rank the memories


def ranking_text(prompt: str) -> str:
    """What ranks the memories for a prompt: its prose. A question with a pasted traceback,
    log or code would rank by the paste's hundreds of words, where the question's few are
    lost (no memory then reaches the relevance floor): indented lines and fenced blocks are
    left out when the rest says anything, and at most MAX_PROMPT characters count."""
    prose, fenced = [], False
    for line in prompt.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced and line.strip() and not line.startswith((" ", "\t")):
            prose.append(line.strip())
    text = " ".join(prose)
    return (text if len(text.split()) >= 3 else prompt)[:MAX_PROMPT]


def task_line(prompt: str) -> str:
    """The prompt in one short line: its first line, cut at a word."""
    from dmm.query.text import task_line as line

    return line(prompt)


def utf16_length(text: str) -> int:
    """Length as Claude Code measures its 10,000-character limit: UTF-16 code units (an emoji
    counts two)."""
    return len(text.encode("utf-16-le")) // 2


def fit(text: str, limit: int) -> str:
    """``text`` cut at a line so that it stays within ``limit`` UTF-16 units, saying so."""
    if utf16_length(text) <= limit:
        return text
    cut = "\n\n(cut to fit: memory_query or `dmm query` gives the whole pack)\n"
    room = limit - utf16_length(cut) - len(" ...")
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix within room
        mid = (lo + hi + 1) // 2
        if utf16_length(text[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    kept = text[:lo]
    line = kept.rfind("\n")
    kept = kept[:line] if line > lo * 0.8 else kept.rsplit(" ", 1)[0] + " ..."
    return kept + cut


def read_payload(raw: str) -> dict:
    """The hook's JSON input; anything else counts as no input."""
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
