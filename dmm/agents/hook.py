"""`dmm agent hook EVENT`: what an agent's hook adds to its context (Claude Code's
SessionStart and UserPromptSubmit; any agent that runs a command with the prompt as JSON on
stdin). It never blocks the agent: every failure becomes one line of output and exit 0.

IO boundary: reads the hook's JSON from stdin (done by the CLI), returns text for stdout.
"""

from __future__ import annotations

import dataclasses
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
    from dmm.render import render

    cfg = ws.config["agents"]
    if event == "session-start":
        pack = memory_pack(ws, "the baseline memories for a new session",
                           budget=int(cfg["hook_budget"]))
        pack = dataclasses.replace(pack, retrieved=[], excluded=[], excluded_total=0,
                                   candidates=0, conflicts=[], warnings=[
                                       w for w in pack.warnings
                                       if not w.startswith("no memory matched")])
    else:
        prompt = str(payload.get("prompt") or "").strip()
        if not prompt:
            return ""
        pack = memory_pack(ws, prompt[:10_000], budget=int(cfg["hook_budget"]))
        if not pack.retrieved and not pack.conflicts:
            return ""  # nothing beyond the baseline, which the session already has
    if not pack.baseline and not pack.retrieved and any(
            w.startswith("another dmm is updating") for w in pack.warnings):
        return BUSY  # the cache is being rebuilt: nothing to read yet
    text = render("pack.md.j2", pack=pack, stats=pack.stats())
    limit = int(cfg["hook_max_chars"])
    if len(text) > limit:
        cut = "\n\n(cut to fit: run `dmm query` for the whole pack)\n"
        text = text[:limit - len(cut)].rsplit("\n", 1)[0] + cut
    return text


def read_payload(raw: str) -> dict:
    """The hook's JSON input; anything else counts as no input."""
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
