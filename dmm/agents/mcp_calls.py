"""The MCP tools' calls (dmm.agents.mcp_tools names them): the same core functions as the CLI
and the HTTP API (dmm.agents.calls), in shapes sized for a model's context, and an agent's own
proposals.

- The Memory Pack reaches the model as compact markdown (dmm/query/text.py) whose whole cost
  is what the budget says; the same pack as data goes to ``structuredContent``, with its
  excluded memories summarised (how many, and the first few by name), not listed whole.
- memory_list returns a page (20 by default) and a cursor for the next; while another dmm
  builds the index for the first time, a page read from the files, saying so
  (dmm.agents.unindexed).
- conflicts_check and conflict_flag take ids or paths, and an unknown one is an error.
- An agent's own proposals are those recorded with its name (``agent:<client>`` from the
  MCP client's initialize, e.g. ``agent:claude-code``): it may list, revise and withdraw
  those, never anyone else's. Withdrawing one's own proposal is not a decision about memory.

Pure plumbing between the MCP server and the core; no protocol, no printing.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from dmm.agents import calls
from dmm.errors import InvalidInputError, NotFoundError
from dmm.workspace import Workspace

EXCLUDED_SHOWN = 5
PACK_FIELDS = ("memory_id", "path", "title", "scope", "tokens", "relevance_score", "priority",
               "confidence", "tags", "content")


class WithText(NamedTuple):
    """A result whose text for the model is not its data as JSON."""
    data: dict
    text: str


def query(ws: Workspace, task: str, budget: int | None = None, scopes=(), tags=(),
          exclude_ephemeral: bool = False) -> WithText:
    pack, text = calls.pack(ws, task, budget=budget, scopes=scopes, tags=tags,
                            exclude_ephemeral=exclude_ephemeral, for_model="query")
    excluded = pack.pop("excluded")
    for key in ("baseline", "retrieved"):
        pack[key] = [{k: e[k] for k in PACK_FIELDS if k in e} for e in pack[key]]
    pack["excluded"] = {
        "count": pack["stats"].get("excluded_count", len(excluded)),
        "first": [{"memory_id": e["memory_id"], "path": e["path"], "tokens": e["tokens"]}
                  for e in excluded[:EXCLUDED_SHOWN]],
        "why": "relevant, but over the token budget: raise budget or memory_show one"}
    return WithText(pack, text or "")


def listing(ws: Workspace, limit: int = 20, cursor: str | None = None, **chosen) -> dict:
    offset = _offset(cursor)
    page = calls.listing(ws, limit=min(1000, offset + limit), **chosen)
    memories = page["memories"][offset:offset + limit]
    following = offset + len(memories)
    # a partial page (read from the files during a first build) may have more after it
    more = following < page["total"] or (page.get("partial") and len(memories) == limit)
    page.update(memories=memories, next_cursor=f"o{following}"
                if more and following < 1000 else None)
    return page


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    if not (cursor.startswith("o") and cursor[1:].isdigit()):
        raise InvalidInputError(f"cursor {cursor!r} is not a next_cursor memory_list gave")
    return int(cursor[1:])


def _ids(ws: Workspace, keys: list[str]) -> list[str]:
    """The ids of the memories named by ids or paths; an unknown one is an error."""
    found, unknown = [], []
    for key in keys:
        try:
            found.append(calls.memory_id(ws, key))
        except NotFoundError:
            unknown.append(key)
    if unknown:
        raise NotFoundError(f"no memory with id or path {', '.join(map(repr, unknown))}",
                            hint="memory_list or memory_query name the memories")
    return found


def check(ws: Workspace, memories: list[str]) -> dict:
    ids = _ids(ws, memories)
    out = calls.check(ws, ids)
    out["checked"] = ids
    return out


def flag(ws: Workspace, memories: list[str], description: str, type: str = "contradictory",
         *, who: str) -> dict:
    return calls.flag(ws, _ids(ws, memories), description, type, who=who)


# --- an agent's own proposals -------------------------------------------------------------------

def mine(ws: Workspace, who: str) -> dict:
    from dmm.gitrepo import Git
    from dmm.proposals.queue import open_proposals

    own = [p.to_dict() for p in open_proposals(Git(ws.root)) if p.proposed_by == who]
    return {"proposals": own, "proposed_by": who}


def withdraw(ws: Workspace, proposal_id: str, reason: str, *, who: str) -> dict:
    from dmm.proposals.decide import withdraw as withdrawn

    done = withdrawn(ws, proposal_id, reason, who=who, own_only=True)
    return {"success": True, **done.to_dict()}


def revise(ws: Workspace, proposal_id: str, reason: str, *, who: str, **change: Any) -> dict:
    from dmm.gitrepo import Git
    from dmm.proposals.decide import own

    old = own(Git(ws.root), proposal_id, who)
    change = {k: v for k, v in change.items() if v is not None}
    change.setdefault("type", old.type)
    change.setdefault("path", old.path)
    if not ({"content", "patch"} & set(change)) and change["type"] == old.type:
        from dmm.proposals.propose import proposed_text

        # declaring relations afterwards costs no second copy of the memory: the text is the
        # old proposal's, without the supersedes links its own declarations added
        text = proposed_text(ws, old, change.get("relations"))
        if text is not None:
            change["content"] = text
    made = calls.propose(ws, proposed_by=who, reason=reason, replaces=proposal_id, **change)
    if made.get("success"):
        calls.close(ws, proposal_id, decision="withdrawn", reviewer=who,
                    reason=f"revised as {made['proposal_id']}: {reason}")
        made["replaces"] = proposal_id
    return made
