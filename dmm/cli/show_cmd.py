"""`dmm show`."""

from __future__ import annotations

import click

from dmm.cli.common import emit_json, json_option, workspace
from dmm.errors import InvalidInputError, NotFoundError


@click.command("show")
@click.argument("memory")
@json_option
@click.pass_context
def command(ctx: click.Context, memory: str, as_json: bool) -> int:
    """Print one memory, named by its id (mem_2026_03_14_007) or its path.

    A path may be relative to .dmm/memory/, to the repository root or to the current folder.
    """
    from dmm.index import read
    from dmm.index.refresh import open_fresh

    ws = workspace(ctx)
    conn, _ = open_fresh(ws)
    try:
        key = memory
        if "/" in memory or memory.endswith(".md"):
            key = ws.memory_relpath(memory)
        found = read.find(conn, key)
        problems = [p for p in read.problems(conn) if p.path == key]
    finally:
        conn.close()
    if not found:
        if problems:
            detail = "; ".join(p.message for p in problems if p.severity == "error")
            raise InvalidInputError(f"{key} cannot be read: {detail}",
                                    hint="run `dmm validate` for every problem")
        raise NotFoundError(f"no memory with id or path {memory!r}",
                            hint="`dmm status` lists what the store holds")
    if len(found) > 1:
        paths = ", ".join(m.path for m in found)
        raise InvalidInputError(f"id {memory} is used by {len(found)} files: {paths}",
                                hint="show one by its path, and give the others new ids")
    m = found[0]
    if as_json:
        data = {"memory_id": m.id, "path": m.path, "title": m.title, "scope": m.scope,
                "tags": m.tags, "priority": m.priority, "confidence": m.confidence,
                "status": m.status, "created": m.created, "expires": m.expires,
                "supersedes": m.supersedes, "related": m.related, "tokens": m.tokens,
                "content": m.body, "problems": [p.to_dict() for p in problems]}
        emit_json(data)
    else:
        click.echo((ws.memory_dir / m.path).read_text(encoding="utf-8"), nl=False)
    return 0
