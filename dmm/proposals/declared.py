"""What a proposal branch may change: exactly the files its trailers declare.

A proposal is judged on the whole diff its branch brings (against the merge base with the
checked-out branch), never on its trailers alone: a branch made by hand or fetched from a
teammate can carry extra commits that edit BOOT.md (the agents' instructions), config.toml
or other memories under a trailer that names one memory. Used by the reviewer (such a
proposal is rejected) and by every approval (it is refused).
"""

from __future__ import annotations

import re
import sqlite3

from dmm.conflicts.store import record_path
from dmm.gitrepo import Git
from dmm.proposals.model import MEMORY_ROOT, Proposal

_ID_LINE = re.compile(r"^id:[ \t]*['\"]?([^\s'\"]+)", re.M)


def undeclared_paths(git: Git, proposal: Proposal, head: str) -> list[str]:
    """Paths the proposal's branch changes beyond what it declares (sorted; [] when none)."""
    base = git.out("merge-base", head, proposal.commit, check=False) or proposal.base
    changed = git.changed_paths(base, proposal.commit)
    allowed = {MEMORY_ROOT + proposal.path, MEMORY_ROOT + proposal.new_path}
    conflict = proposal.resolution.get("Dmm-Conflict")
    if conflict:
        # a conflict resolution touches the memories it names (moved to deprecated/,
        # linked, merged into a new one) and the conflict's decision record
        allowed.add(record_path(conflict))
        ids = set(proposal.declared_ids)
        for path in changed:
            if path.startswith(MEMORY_ROOT) and path not in allowed and ids & (
                    memory_ids_in(git, base, path) | memory_ids_in(git, proposal.commit, path)):
                allowed.add(path)
    return sorted(p for p in changed if p not in allowed)


def memory_ids_in(git: Git, rev: str, path: str) -> set[str]:
    """The id(s) the frontmatter of ``path`` in ``rev`` gives (read without parsing YAML)."""
    blob = git.show_blob(rev, path)
    if blob is None:
        return set()
    head = blob[:4096].decode("utf-8", "replace")
    return set(_ID_LINE.findall(head.split("\n---", 1)[0]))


def id_taken(git: Git, rev: str, proposal: Proposal, conn: sqlite3.Connection) -> str | None:
    """The path (relative to .dmm/memory/) of another memory in ``rev`` that already has the
    proposal's memory id, if any: two proposals made from the same base can each have looked
    unique on their own. The cache names the candidates (reading every blob of a large store
    would cost far more: `git grep` takes 57 ms at 1,000 memories); git confirms each one."""
    if not proposal.memory_id or proposal.type == "resolve":
        return None
    mine = {proposal.path, proposal.new_path}
    for (path,) in conn.execute("SELECT path FROM memories WHERE id = ?", (proposal.memory_id,)):
        if path not in mine and proposal.memory_id in memory_ids_in(git, rev, MEMORY_ROOT + path):
            return path
    return None
