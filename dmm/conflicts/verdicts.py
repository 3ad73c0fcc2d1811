"""The judge's verdicts, kept in the cache (table ``verdicts``, index/schema.py) so that a
re-scan costs nothing and an edited memory is judged again. `dmm reindex` carries them over
(index/refresh.py: they were paid for).

A verdict is keyed by the hashes of the two texts the model read (text_hash: the memory's
scope and markdown, title included), the model named in ``[judge] model`` and the prompt's
version: a change of either text, of the model or of the prompt asks again; a change the
model never saw (priority, tags, a move) does not. The pair is stored in hash order (the
smaller hash is ``first``), the order the prompt shows the two memories in.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3

from dmm.memory.model import Memory


def text_hash(memory: Memory) -> str:
    """What the judge reads of a memory, hashed."""
    return hashlib.sha1(f"{memory.scope}\x1f{memory.body}".encode()).hexdigest()


def lookup(conn: sqlite3.Connection, model: str, prompt: str, focus: set[str] | None,
           hashes: dict[str, str]) -> dict[tuple[str, str], dict]:
    """Cached verdicts of ``model`` and ``prompt`` about memories as they are now
    (``hashes``: text_hash by id, of every memory the rows may name), with at least one of
    them in ``focus`` (None: any); by pair of ids (first, second in hash order)."""
    if focus is None:
        rows = conn.execute("SELECT first, second, first_id, second_id, verdict FROM verdicts "
                            "WHERE model = ? AND prompt = ?", (model, prompt)).fetchall()
    else:
        rows = []
        ids = sorted(focus)
        for start in range(0, len(ids), 400):
            chunk = ids[start:start + 400]
            marks = ",".join("?" * len(chunk))
            rows += conn.execute(
                "SELECT first, second, first_id, second_id, verdict FROM verdicts "
                f"WHERE model = ? AND prompt = ? AND (first_id IN ({marks}) "
                f"OR second_id IN ({marks}))", (model, prompt, *chunk, *chunk)).fetchall()
    out = {}
    for first, second, a, b, text in rows:
        if hashes.get(a) == first and hashes.get(b) == second:
            try:
                out[(a, b)] = json.loads(text)
            except ValueError:
                continue  # a damaged row: the pair is judged again
    return out


def partners(conn: sqlite3.Connection, model: str, prompt: str, focus: set[str]) -> set[str]:
    """Ids of the memories cached verdicts pair with a memory of ``focus`` (to load them)."""
    out: set[str] = set()
    ids = sorted(focus)
    for start in range(0, len(ids), 400):
        chunk = ids[start:start + 400]
        marks = ",".join("?" * len(chunk))
        for a, b in conn.execute(
                "SELECT first_id, second_id FROM verdicts WHERE model = ? AND prompt = ? AND "
                f"(first_id IN ({marks}) OR second_id IN ({marks}))",
                (model, prompt, *chunk, *chunk)):
            out.update((a, b))
    return out


def row(first: Memory, second: Memory, model: str, prompt: str, verdict: dict) -> tuple:
    """One verdict as a row of the table, to keep()."""
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return (text_hash(first), text_hash(second), model, prompt, first.id, second.id,
            json.dumps(verdict), now)


def keep(conn: sqlite3.Connection, rows: list[tuple]) -> None:
    """Keep verdicts (rows of row()) in one short transaction: a scan judging for minutes
    keeps what it was paid for every few verdicts, and never holds a lock on the cache while
    it waits for a model."""
    if not rows:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         rows)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
