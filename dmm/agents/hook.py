"""`dmm agent hook EVENT`: what an agent's hook adds to its context (Claude Code's
SessionStart and UserPromptSubmit; any agent that runs a command with the prompt as JSON on
stdin). It never blocks the agent: every failure becomes one line of output and exit 0.

IO boundary: reads the hook's JSON from stdin (done by the CLI), returns text for stdout.
"""

from __future__ import annotations

import json

from dmm.workspace import Workspace

EVENTS = ("session-start", "user-prompt-submit")


BUSY = ("(dmm: no memory pack this time: another dmm holds the cache (a reindex or a scan); "
        "the next prompt gets one)\n")
DEADLINE_S = 0.9  # a hook answers within this, whatever holds the cache (DMM_HOOK_DEADLINE_MS)


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
        # the baseline came once at session start: the whole budget goes to this prompt
        pack = memory_pack(ws, ranking_text(prompt), budget=budget, for_model="prompt",
                           named=prompt)
        if not pack.retrieved and not pack.conflicts:
            return ""  # nothing beyond the baseline, which the session already has
    if not pack.baseline and not pack.retrieved and any(
            w.startswith("another dmm is updating") for w in pack.warnings):
        return BUSY  # the cache is being rebuilt: nothing to read yet
    return fit(pack.text or "", int(cfg["hook_max_chars"]))


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
