"""Name a memory the one way every command and every agent tool accepts: its id or its path
(relative to .dmm/memory/, to the repository root, or to the current folder).

Reads the cache only (no git); raises NotFoundError or InvalidInputError with the sentence
the CLI and the agent tools show.
"""

from __future__ import annotations

import sqlite3

from dmm.errors import InvalidInputError, NotFoundError
from dmm.index import read
from dmm.memory import Memory, Problem
from dmm.workspace import Workspace


def find_memory(ws: Workspace, conn: sqlite3.Connection, key: str,
                ) -> tuple[Memory, list[Problem]]:
    """The memory named ``key`` and the problems of its file."""
    if "/" in key or key.endswith(".md"):
        key = ws.memory_relpath(key)
    found = read.find(conn, key)
    days = ws.config["store"]["ephemeral_max_days"]
    problems = [p for p in read.problems(conn, ephemeral_days=days)
                if p.path in {key, *(m.path for m in found)}]
    if not found:
        if problems:
            detail = "; ".join(p.message for p in problems if p.severity == "error")
            raise InvalidInputError(f"{key} cannot be read: {detail}",
                                    hint="run `dmm validate` for every problem")
        raise NotFoundError(f"no memory with id or path {key!r}",
                            hint="`dmm status` lists what the store holds")
    if len(found) > 1:
        paths = ", ".join(m.path for m in found)
        raise InvalidInputError(f"id {key} is used by {len(found)} files: {paths}",
                                hint="show one by its path, and give the others new ids")
    return found[0], problems


def memory_ids(ws: Workspace, conn: sqlite3.Connection, keys: list[str]) -> list[str]:
    """The ids of the memories named by ``keys`` (each an id or a path), in order."""
    return [find_memory(ws, conn, key)[0].id for key in keys]


def memory_record(m: Memory, problems: list[Problem] = (), content: bool = True) -> dict:
    """A memory as JSON: the shape of `dmm show --json` and of the agent tools."""
    out = {"memory_id": m.id, "path": m.path, "title": m.title, "scope": m.scope,
           "tags": m.tags, "priority": m.priority, "confidence": m.confidence,
           "status": m.status, "created": m.created, "expires": m.expires,
           "supersedes": m.supersedes, "related": m.related, "tokens": m.tokens}
    if content:
        out["content"] = m.body
        out["problems"] = [p.to_dict() for p in problems]
    return out
