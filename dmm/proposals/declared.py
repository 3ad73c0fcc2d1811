"""What a proposal branch may change: exactly what dmm derives from the proposal itself.

A proposal is judged on the whole diff its branch brings (against the merge base with the
checked-out branch), never on its trailers: a branch made by hand or fetched from a teammate
can write any trailer it likes and carry extra commits that edit BOOT.md (the agents'
instructions), config.toml or other memories. What it may change is derived here from what
dmm records when it proposes: the type and the memory's path (a create adds one new file, an
update changes one, a deprecation and a promotion move one where dmm would move it); for a
conflict resolution, a conflict that exists and is open, and the change its action implies
(which of the conflict's two memories moves to deprecated/ unchanged but for its status, which
gains a supersedes link or a scope note, which one is new), checked file by file. Every file
is a plain, non-executable file within the store's size limit. Used by the reviewer (such a
proposal is rejected) and by every approval (it is refused).
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field

from dmm.conflicts.store import record_path
from dmm.errors import DmmError
from dmm.gitrepo import Git
from dmm.memory.edit import FrontmatterEditError, deprecation, with_supersedes
from dmm.memory.model import DEPRECATED_DIR, SCOPES
from dmm.memory.parse import frontmatter_ids, parse_memory, split_frontmatter
from dmm.memory.parse import memory_id as parsed_id
from dmm.memory.paths import clean_memory_path
from dmm.proposals.model import MEMORY_ROOT, TYPES, Proposal
from dmm.workspace import Workspace

RESOLVE_ACTIONS = ("deprecate", "merge", "clarify")  # the ones that change memories
FILE_MODE = "100644"  # a memory is a plain file: never a link, a submodule, an executable


@dataclass
class Verdict:
    """What a proposal's branch changes against what it may change."""

    problems: list[str] = field(default_factory=list)  # each one refuses the proposal
    undeclared: list[str] = field(default_factory=list)  # paths beyond what it may change
    # a resolution's trailers as dmm derived them (never as the branch wrote them), for the
    # approval's merge commit: Dmm-Conflict, Dmm-Resolution, Dmm-Target, Dmm-Created ...
    resolution: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.undeclared


def judge(ws: Workspace, conn: sqlite3.Connection, git: Git, proposal: Proposal,
          head: str) -> Verdict:
    """Compare the diff ``proposal``'s branch brings onto ``head`` with what it may change."""
    base = git.out("merge-base", head, proposal.commit, check=False) or proposal.base
    changed = git.changed_paths(base, proposal.commit)
    verdict = Verdict()
    try:
        if proposal.type == "resolve":
            allowed = _resolution(ws, conn, git, proposal, base, changed, verdict)
        elif proposal.type in TYPES:
            allowed = _memory_change(git, proposal, base, verdict)
            allowed |= _supersessions(git, proposal, base, changed)
        else:
            verdict.problems.append(f"unknown proposal type {proposal.type!r}")
            allowed = set()
    except _Refused as exc:
        verdict.problems.append(str(exc))
        allowed = set()
    verdict.undeclared = sorted(p for p in changed if p not in allowed)
    verdict.problems += file_problems(git, proposal.commit, [p for p in changed if p in allowed],
                                       ws.config["store"]["max_file_bytes"])
    return verdict


class _Refused(Exception):
    """What the branch claims does not hold: the message says what."""


def _clean(path: str) -> str:
    try:
        return clean_memory_path(path)
    except DmmError as exc:
        raise _Refused(f"the proposal names an unusable path: {exc.message}") from None


def _memory_change(git: Git, proposal: Proposal, base: str, verdict: Verdict) -> set[str]:
    """`dmm write`: one memory file changed, created, or moved where dmm moves it."""
    rel, new_rel = _clean(proposal.path), _clean(proposal.new_path or proposal.path)
    existed = git.path_exists(base, MEMORY_ROOT + rel)
    if proposal.type == "create":
        if new_rel != rel:
            raise _Refused("a create proposal names two paths")
        if existed:
            raise _Refused(f"{rel} exists already: a create proposal may not replace it")
    elif not existed:
        raise _Refused(f"{rel} does not exist in the proposal's base")
    elif proposal.type == "update" and new_rel != rel:
        raise _Refused("an update proposal may not move the memory")
    elif proposal.type == "deprecate" and new_rel not in (rel, f"{DEPRECATED_DIR}/{rel}"):
        raise _Refused(f"a deprecation moves {rel} to {DEPRECATED_DIR}/{rel}, not {new_rel}")
    elif proposal.type == "promote" and (new_rel.split("/", 1)[0] not in SCOPES or
                                         new_rel.split("/", 1)[1:] != rel.split("/", 1)[1:]):
        raise _Refused(f"a promotion moves {rel} to another scope's folder, not to {new_rel}")
    return {MEMORY_ROOT + rel, MEMORY_ROOT + new_rel}


def _supersessions(git: Git, proposal: Proposal, base: str, changed: list[str]) -> set[str]:
    """The memories a create or an update declares it supersedes (Dmm-Relation), each
    retired as `dmm write` retires one: the file that holds the id in the base moves to
    deprecated/ unchanged but for its status, and the proposed memory names it in
    `supersedes`. A claim the branch does not carry out exactly is refused."""
    from dmm.proposals.relations import superseded

    if proposal.relation_problems:
        raise _Refused("its relations cannot be read: " + "; ".join(proposal.relation_problems))
    ids = superseded(proposal.relations)
    if not ids:
        return set()
    if proposal.type not in ("create", "update"):
        raise _Refused(f"a {proposal.type} proposal declares no relations")
    own = _clean(proposal.new_path or proposal.path)
    mine, _ = parse_memory(_text(git, proposal.commit, own) or "", own)
    allowed: set[str] = set()
    # which memory each file it removes is: its YAML id, never every `id:` line of it (a
    # repeated key would let the claim name one memory and the move retire another)
    gone = {p: memory_id_at(git, base, p) for p in changed if p.startswith(MEMORY_ROOT)
            and p != MEMORY_ROOT + own and not git.path_exists(proposal.commit, p)}
    for claimed in ids:
        held = [p for p, held_id in gone.items() if held_id == claimed]
        if len(held) != 1:
            raise _Refused(f"it declares that it supersedes {claimed} but does not retire it")
        path = held[0][len(MEMORY_ROOT):]
        moved_to, expected = deprecation(path, _text(git, base, path))
        if _text(git, proposal.commit, moved_to) != expected:
            raise _Refused(f"{claimed} must move to {moved_to} unchanged but for its status")
        if mine is None or claimed not in mine.supersedes:
            raise _Refused(f"the proposed memory must name {claimed} in `supersedes`")
        allowed |= {MEMORY_ROOT + path, MEMORY_ROOT + moved_to}
    return allowed


def _resolution(ws: Workspace, conn: sqlite3.Connection, git: Git, proposal: Proposal,
                base: str, changed: list[str], verdict: Verdict) -> set[str]:
    """A conflict resolution made by `dmm conflicts resolve --propose`: the conflict must exist
    and be open, and every file must be what the action makes of the conflict's memories."""
    from dmm.conflicts.model import OPEN, STATUS_AFTER, check_conflict_id
    from dmm.conflicts.service import one

    cid, action = proposal.resolution.get("Dmm-Conflict", ""), proposal.resolution.get(
        "Dmm-Resolution", "")
    if action not in RESOLVE_ACTIONS:
        raise _Refused(f"a resolution proposal must deprecate, merge or clarify, not {action!r}")
    try:
        conflict = one(ws, conn, check_conflict_id(cid))
    except DmmError:
        raise _Refused(f"it claims to resolve {cid!r}, which is no conflict of this "
                       "store") from None
    if conflict.status not in OPEN:
        raise _Refused(f"{cid} is {conflict.status} already")
    mems = {m.memory_id: m.path for m in conflict.memories}
    for held_id, path in mems.items():
        if memory_id_at(git, base, MEMORY_ROOT + path) != held_id:
            raise _Refused(f"{held_id} of {cid} is not at {path} in the proposal's base")
    texts = {path: _text(git, base, path) for path in mems.values()}
    after = {path: _text(git, proposal.commit, path) for path in mems.values()}
    record = record_path(cid)
    allowed = {record}
    trailers = [("Dmm-Conflict", cid), ("Dmm-Resolution", action)]
    trailers += [("Dmm-Memory", memory_id) for memory_id in mems]
    retired = [i for i, p in mems.items() if after[p] is None]
    for memory_id in retired:  # deprecate (one of the two) and merge (both) retire memories
        path = mems[memory_id]
        moved_to, expected = deprecation(path, texts[path])
        if _text(git, proposal.commit, moved_to) != expected:
            raise _Refused(f"{memory_id} must move to {moved_to} unchanged but for its status")
        allowed |= {MEMORY_ROOT + path, MEMORY_ROOT + moved_to}
    kept = [i for i in mems if i not in retired]
    if action == "deprecate":
        if len(retired) != 1:
            raise _Refused("a deprecation retires exactly one of the conflict's two memories")
        survivor = mems[kept[0]]
        _expect_edit(after[survivor], texts[survivor], lambda t: with_supersedes(
            t, _supersedes(t), retired), f"{kept[0]} may only gain a supersedes link")
        trailers.append(("Dmm-Target", retired[0]))
    elif action == "clarify":
        if retired:
            raise _Refused("a clarification keeps both memories")
        for memory_id in kept:
            path = mems[memory_id]
            if after[path] != texts[path] and not _is_clarified(texts[path], after[path]):
                raise _Refused(f"{memory_id} may only gain a **Scope:** note under its title")
    else:  # merge: both retired, one new memory that supersedes both
        if retired != list(mems):
            raise _Refused("a merge retires both of the conflict's memories")
        new_rel = _clean(proposal.new_path)
        if git.path_exists(base, MEMORY_ROOT + new_rel):
            raise _Refused(f"the merged memory's path {new_rel} exists already")
        merged, _ = parse_memory(_text(git, proposal.commit, new_rel) or "", new_rel)
        if merged is None or not set(mems) <= set(merged.supersedes):
            raise _Refused("the merged memory must supersede both memories of the conflict")
        allowed.add(MEMORY_ROOT + new_rel)
        trailers.append(("Dmm-Created", merged.id))
    allowed |= {MEMORY_ROOT + p for p in mems.values()}
    for path in changed:
        if path.startswith(MEMORY_ROOT) and path not in allowed:
            raise _Refused(f"a resolution of {cid} may not change {path}")
    if record in changed:
        _expect_record(git, proposal.commit, record, cid, action, STATUS_AFTER[action])
    trailers += [("Dmm-Reason", proposal.reason), ("Dmm-Resolved-By", proposal.proposed_by)]
    verdict.resolution = trailers
    return allowed


def _text(git: Git, rev: str, rel: str) -> str | None:
    blob = git.show_blob(rev, MEMORY_ROOT + rel)
    return None if blob is None else blob.decode("utf-8", "replace")


def _supersedes(text: str) -> list[str]:
    memory, _ = parse_memory(text, "memory.md")
    return memory.supersedes if memory else []


def _expect_edit(now: str | None, before: str, edit, why: str) -> None:
    try:
        if now is not None and now != before and now != edit(before):
            raise _Refused(why)
    except FrontmatterEditError:
        raise _Refused(why) from None


def _is_clarified(before: str, now: str) -> bool:
    """Whether ``now`` is ``before`` with one scope note added, as `clarify` adds it."""
    from dmm.memory.edit import with_clarification

    _, body = split_frontmatter(now)
    for line in (body or "").splitlines():
        if line.startswith("**Scope:** "):
            try:
                if with_clarification(before, line.removeprefix("**Scope:** ")) == now:
                    return True
            except ValueError:
                return False
    return False


def _expect_record(git: Git, rev: str, path: str, cid: str, action: str, status: str) -> None:
    try:
        record = json.loads(git.show_blob(rev, path) or b"")
    except ValueError:
        record = None
    if not isinstance(record, dict) or (record.get("conflict_id"), record.get("action"),
                                        record.get("status")) != (cid, action, status):
        raise _Refused(f"{path} must record the {action} of {cid}")


def file_problems(git: Git, rev: str, paths: list[str], max_bytes: int) -> list[str]:
    """Every file a proposal leaves must be a plain file (no link, submodule or executable)
    within store.max_file_bytes: what `dmm validate` would call an error never reaches main."""
    problems = []
    entries = git.tree_entries(rev, paths)
    sizes = git.blob_sizes([sha for _mode, sha in entries.values()])
    for path, (mode, sha) in sorted(entries.items()):
        if mode != FILE_MODE:
            problems.append(f"{path} has mode {mode}: memory files are plain files ({FILE_MODE})")
        elif sizes.get(sha, 0) > max_bytes:
            problems.append(f"{path} is {sizes[sha]} bytes; the limit is {max_bytes} "
                            "(store.max_file_bytes): split it into smaller memories")
    return problems


def retired_paths(git: Git, proposal: Proposal, head: str) -> list[str]:
    """The memory files (relative to .dmm/memory/) that landing ``proposal`` on ``head`` would
    remove, other than the one it is about, read from its branch's diff (never its trailers):
    what a person approving it is told it retires, whoever added the commits that do it."""
    base = git.out("merge-base", head, proposal.commit, check=False) or proposal.base
    own = {MEMORY_ROOT + proposal.path, MEMORY_ROOT + proposal.new_path}
    return sorted(p[len(MEMORY_ROOT):] for p in git.changed_paths(base, proposal.commit)
                  if p.startswith(MEMORY_ROOT) and p not in own
                  and not p.startswith(f"{MEMORY_ROOT}{DEPRECATED_DIR}/")
                  and not git.path_exists(proposal.commit, p))


def memory_id_at(git: Git, rev: str, path: str) -> str | None:
    """The id of the memory at ``path`` in ``rev`` as its YAML says (None: absent or not a
    memory): which memory a retirement or a resolution moves."""
    blob = git.show_blob(rev, path)
    return None if blob is None else parsed_id(blob, path.removeprefix(MEMORY_ROOT))


def memory_ids_in(git: Git, rev: str, path: str) -> set[str]:
    """The id(s) the frontmatter of ``path`` in ``rev`` gives (read without parsing YAML)."""
    return frontmatter_ids(git.show_blob(rev, path) or b"")


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
