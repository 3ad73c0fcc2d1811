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
        known = [name for pair in read.ids_and_paths(conn) for name in pair]
        raise NotFoundError(f"no memory with id or path {key!r}",
                            hint=did_you_mean(key, known) + "`dmm list` shows every memory by "
                                 "id and path; `dmm search WORDS` finds one by its text")
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


def did_you_mean(given: str, names: list[str]) -> str:
    """"did you mean X? " for the name of ``names`` nearest a mistyped ``given``, as a
    mistyped command gets; "" when none is near."""
    import difflib

    near = difflib.get_close_matches(given, names, n=1, cutoff=0.75)
    return f"did you mean {near[0]}? " if near else ""


def missing_path(ws: Workspace, given: str, rel: str) -> NotFoundError:
    """The error for a path (relative to .dmm/memory/) that names no memory file or folder,
    with the nearest one that exists (a walk of the folder: only on this error's path)."""
    files = [p.relative_to(ws.memory_dir).as_posix() for p in ws.memory_dir.rglob("*.md")]
    folders = {f.rsplit("/", n)[0] for f in files for n in range(1, f.count("/") + 1)}
    return NotFoundError(f"{given}: no memory file or folder {rel} in .dmm/memory/",
                         hint=did_you_mean(rel, sorted(folders | set(files)))
                         + "give paths of memory files or folders (`dmm list` shows them)")
