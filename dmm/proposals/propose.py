"""`dmm write`: check a proposed change, then record it as a commit on its own branch.

Prechecks (PRD phase 2, 5.1) run first and report every problem at once. The proposal commit
is made with plumbing from the checked-out branch's head: the user's index, working tree and
other files are never touched.
"""

from __future__ import annotations

import datetime as dt
import sqlite3

from dmm.errors import InvalidInputError
from dmm.fsutil import file_lock
from dmm.gitrepo import Git, commit_message
from dmm.index.read import active_paths
from dmm.memory import Memory
from dmm.memory.edit import (FrontmatterEditError, PatchError, apply_patch, deprecation,
                             next_id, set_field, with_supersedes)
from dmm.memory.model import DEPRECATED_DIR, SCOPES
from dmm.memory.parse import FrontmatterError, load_frontmatter
from dmm.memory.parse import memory_id as parsed_id
from dmm.memory.parse import parse_memory, split_frontmatter
from dmm.memory.paths import clean_memory_path
from dmm.proposals.checks.quality import size_warning
from dmm.proposals.model import (MEMORY_ROOT, PROPOSAL_PREFIX, TYPES, Proposal,
                                 ProposalResult, new_proposal_id)
from dmm.proposals.queue import open_proposals
from dmm.proposals.relations import TRAILER as RELATION_TRAILER
from dmm.proposals.relations import Relation, superseded
from dmm.proposals.relations import check as check_relations
from dmm.proposals.relations import parse as parse_relations
from dmm.workspace import Workspace


class _Checks:
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.not_found = False  # the memory to update, deprecate or promote does not exist


def normalise_path(ws: Workspace, raw: str) -> tuple[str | None, str | None]:
    """(path relative to .dmm/memory/, None) or (None, why it is refused)."""
    try:
        rel = clean_memory_path(raw)
    except InvalidInputError as exc:
        return None, exc.message
    memory_dir = ws.memory_dir.resolve()
    if not (memory_dir / rel).resolve().is_relative_to(memory_dir):
        return None, f"path {raw!r} leads outside .dmm/memory/ through a symbolic link"
    return rel, None


def _named_path(ws: Workspace, conn: sqlite3.Connection, type: str, raw: str) -> str:
    """The memory a proposal names, the way every command names one: an existing memory by
    its id or by its path relative to .dmm/memory/, to the repository root or to the current
    folder. Anything else is left for normalise_path to judge."""
    if type != "create" and "/" not in raw and not raw.endswith(".md"):
        from dmm.index import read

        found = read.find(conn, raw)
        return found[0].path if len(found) == 1 else raw
    try:
        return ws.memory_relpath(raw)
    except InvalidInputError:  # normalise_path says what is wrong with it
        return raw


def propose(ws: Workspace, conn: sqlite3.Connection, **kw) -> ProposalResult:
    """Check and record a proposal. Runs under dmm's lock, so that two proposals made at the
    same moment never get the same memory id, nor both open for one path."""
    with file_lock(Git(ws.root).common_dir() / "dmm.lock"):
        result = _propose(ws, conn, **kw)
    if result.memory is not None:  # found outside the lock: a query may wait for the index
        _with_neighbours(ws, conn, result, kw.get("relations"))
    return result


def proposed_text(ws: Workspace, proposal: Proposal, relations: list | None) -> str | None:
    """The memory text of an open create or update ``proposal``, for its revision: without
    the `supersedes` links its own declarations added that ``relations`` no longer declare
    (the revision adds back the ones it declares). None for other proposals."""
    if proposal.type not in ("create", "update"):
        return None
    blob = Git(ws.root).show_blob(proposal.commit, MEMORY_ROOT + proposal.new_path)
    if blob is None:
        return None
    text = blob.decode("utf-8", "replace")
    dropped = set(superseded(proposal.relations)) - set(superseded(
        parse_relations(relations)[0]))
    memory, _ = parse_memory(text, proposal.new_path)
    if not dropped or memory is None:
        return text
    kept = [i for i in memory.supersedes if i not in dropped]
    try:
        return set_field(text, "supersedes", kept or None)
    except FrontmatterEditError:
        return text


def _with_neighbours(ws: Workspace, conn: sqlite3.Connection, result: ProposalResult,
                     relations: list | None) -> None:
    """The proposed memory's nearest memories, each with what the writer declared about it,
    and the request to declare the others (dmm.proposals.relations)."""
    from dmm.proposals.neighbours import nearest
    from dmm.proposals.relations import request

    declared = result.proposal.relations if result.proposal else \
        _named_ids(ws, conn, parse_relations(relations)[0])
    said = {r.memory_id: r.relation for r in declared}
    found = nearest(ws, conn, result.memory, exclude=(result.memory.path,))
    result.neighbours = [{**n.to_dict(), "declared": said.get(n.memory_id)} for n in found]
    result.declare = request([n.memory_id for n in found], declared)


def _propose(ws: Workspace, conn: sqlite3.Connection, *, type: str, path: str, reason: str,
             content: str | None = None, patch: str | None = None, new_scope: str | None = None,
             expires: str | None = None, proposed_by: str = "agent",
             today: dt.date | None = None, replaces: str | None = None,
             relations: list | None = None) -> ProposalResult:
    """``replaces``: the open proposal this one is to replace (its author revising it): it
    does not count as the one already open for the path. ``relations``: what the writer
    declares about other memories (dmm.proposals.relations), recorded as trailers; a declared
    supersession also retires the memory it names, in the same proposal."""
    today = today or dt.date.today()
    git = Git(ws.root)
    checks = _Checks()
    declared, relation_errors = parse_relations(relations)  # reported with the neighbours
    if type not in TYPES:
        checks.errors.append(f"type must be one of {', '.join(TYPES)}")
    if not reason.strip():
        checks.errors.append("a reason is required: say why this change is needed")
    elif len(reason) > MAX_REASON_CHARS:
        checks.errors.append(f"the reason is {len(reason)} characters; say why in at most "
                             f"{MAX_REASON_CHARS}")
    max_bytes = ws.config["store"]["max_file_bytes"]
    for name, text, limit in (("content", content, max_bytes),
                              ("patch", patch, 2 * max_bytes + 4096)):
        if text is not None and len(text.encode("utf-8", "surrogatepass")) > limit:
            checks.errors.append(_too_large(name, len(text.encode("utf-8", "surrogatepass")),
                                            max_bytes))
    if checks.errors:  # before anything is parsed, or written to git
        return _refused(checks)
    rel, why = normalise_path(ws, _named_path(ws, conn, type, path))
    if why:
        checks.errors.append(why)
    elif type == "create" and rel.split("/", 1)[0] not in SCOPES:
        checks.errors.append(f"{rel} is not in a scope folder: a new memory goes under "
                             f"{', '.join(s + '/' for s in SCOPES)} (e.g. project/{rel})")
    base = git.rev_parse("HEAD")
    if base is None:
        checks.errors.append("the repository has no commit yet: commit .dmm/ first")
    if checks.errors:
        return _refused(checks)

    open_props = open_proposals(git, with_status=False)
    for other in open_props:
        if rel in (other.path, other.new_path) and other.proposal_id != replaces:
            checks.errors.append(f"proposal {other.proposal_id} is already open for {rel}: "
                                 "decide it or withdraw it first")
    current = git.show_blob(base, MEMORY_ROOT + rel)
    current_text = current.decode("utf-8", "replace") if current is not None else None
    new_rel, new_text = rel, None

    if type == "create":
        if current is not None or (ws.memory_dir / rel).exists():
            checks.errors.append(f"{rel} already exists: use `dmm write update`")
        if not content:
            checks.errors.append("content is required: pass --content, --file or stdin")
        else:
            from dmm.audit import ids_ever_named

            taken = {row[0] for row in conn.execute("SELECT id FROM memories")}
            new_text, errors = complete(content, rel, today, taken | ids_ever_named(git))
            checks.errors += errors
    else:
        if current_text is None:
            checks.errors.append(f"{rel} does not exist in the last commit")
            checks.not_found = True
        elif type == "update":
            if patch:
                try:
                    new_text = apply_patch(current_text, patch)
                except PatchError as exc:
                    checks.errors.append(f"the patch does not apply to {rel}: {exc}")
            elif content:
                new_text, errors = kept_identity(content, current_text)
                checks.errors += errors
            else:
                checks.errors.append("an update needs new content (--content, --file, stdin) "
                                     "or a unified diff (--patch)")
            if new_text is not None and new_text == current_text:
                checks.errors.append("the new content is identical to the current content")
        elif type == "deprecate":
            if rel.startswith(DEPRECATED_DIR + "/") or _field(current_text, "status") == "deprecated":
                checks.errors.append(f"{rel} is already deprecated")
            else:
                new_rel, new_text = _edited(checks, rel, deprecation, rel, current_text) \
                    or (rel, None)
        elif type == "promote":
            folder = rel.split("/", 1)[0]
            if new_scope not in SCOPES:
                checks.errors.append(f"--new-scope must be one of {', '.join(SCOPES)}")
            elif folder == new_scope:
                checks.errors.append(f"{rel} is already in scope {new_scope}")
            elif folder == DEPRECATED_DIR:
                checks.errors.append("a deprecated memory cannot be promoted")
            else:
                new_rel = f"{new_scope}/{rel.split('/', 1)[1]}"
                new_text = _edited(checks, rel, set_field, current_text, "scope", new_scope)
                if new_text is not None:
                    new_text = _promoted_expiry(checks, rel, new_text, new_scope, expires,
                                                _field(current_text, "expires"))
        if new_rel != rel and (git.path_exists(base, MEMORY_ROOT + new_rel)
                               or (ws.memory_dir / new_rel).exists()):
            checks.errors.append(f"{new_rel} already exists")

    memory_id, memory = "", None
    if new_text is not None and len(new_text.encode("utf-8", "surrogatepass")) > max_bytes:
        checks.errors.append(_too_large("the memory", len(new_text.encode("utf-8",
                                                                           "surrogatepass")),
                                        max_bytes))
        new_text = None
    if new_text is not None:
        memory, problems = parse_memory(new_text, new_rel)
        checks.errors += [f"{p.field or 'content'}: {p.message}" for p in problems
                          if p.severity == "error"]
        checks.warnings += [f"{p.field or 'content'}: {p.message}" for p in problems
                            if p.severity == "warning"]
        if memory is not None:
            memory_id = memory.id
            _check_id_unique(memory.id, rel, conn, open_props, checks)
            size = size_warning(memory.body, ws.config["quality"])
            if type in ("create", "update") and size:
                checks.warnings.append(size)
    if "baseline" in (rel.split("/", 1)[0], new_rel.split("/", 1)[0]):
        checks.warnings.append("this changes a baseline memory: a person must approve it")
    retired: dict[str, str | None] = {}
    if type not in ("create", "update"):
        memory = None  # a move or a retirement: no new content to relate to others
        if relations:
            checks.errors.append("relations are declared for a memory's content: with a "
                                 f"create or an update, not a {type}")
    checks.errors += relation_errors
    if memory is not None and declared:
        declared = _named_ids(ws, conn, declared)
        known = active_paths(conn, sorted({r.memory_id for r in declared}))
        checks.errors += check_relations(declared, known, {memory.id, *_ids_at(conn, rel)})
        if not checks.errors:
            new_text, retired = _superseding(git, known, base, new_text, memory, declared,
                                             open_props, replaces, checks)
    if checks.errors:
        return _refused(checks, memory)

    # one clock reading for the id, the commit's date and proposed_at: they name one moment
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    proposal_id = new_proposal_id(now)
    changes: dict[str, str | None] = {MEMORY_ROOT + new_rel: git.hash_blob(new_text.encode())}
    if new_rel != rel:
        changes[MEMORY_ROOT + rel] = None
    changes.update(retired)
    tree = git.tree_with(base, changes)
    pairs = [("Dmm-Proposal", proposal_id), ("Dmm-Type", type), ("Dmm-Path", rel)]
    if new_rel != rel:
        pairs.append(("Dmm-New-Path", new_rel))
    pairs += [("Dmm-Memory", memory_id), ("Dmm-Proposed-By", proposed_by)]
    pairs += [(RELATION_TRAILER, r.trailer()) for r in declared]
    message = commit_message(f"dmm: propose {type} {rel}", reason, pairs)
    commit = git.commit_tree(tree, [base], message, when=now)
    if not git.update_refs([(PROPOSAL_PREFIX + proposal_id, commit, None)]):
        checks.errors.append("could not create the proposal branch (name taken): try again")
        return _refused(checks)
    proposal = Proposal(proposal_id, type, rel, new_rel, memory_id, reason.strip(), proposed_by,
                        now.isoformat(timespec="seconds"), commit, base, relations=declared)
    return ProposalResult(True, proposal_id, True, checks.warnings, [],
                          f"proposal {proposal_id} created on branch "
                          f"dmm/proposals/{proposal_id}", proposal, memory=memory)


MAX_REASON_CHARS = 8000  # a reason says why in a paragraph or two; it goes into a commit


def _too_large(what: str, size: int, limit: int) -> str:
    return (f"{what} is {size} bytes; the limit is {limit} (store.max_file_bytes): split it "
            "into smaller memories")


def _refused(checks: _Checks, memory: Memory | None = None) -> ProposalResult:
    return ProposalResult(False, None, False, checks.warnings, checks.errors,
                          "precheck failed: nothing was proposed", not_found=checks.not_found,
                          memory=memory)


def _named_ids(ws: Workspace, conn: sqlite3.Connection,
               declared: list[Relation]) -> list[Relation]:
    """The declarations with a memory named by its path turned into its id (every command
    names a memory either way); an unknown name stays, for check_relations to refuse."""
    out = []
    for r in declared:
        if "/" in r.memory_id or r.memory_id.endswith(".md"):
            try:
                found = conn.execute("SELECT id FROM memories WHERE path = ?",
                                     (ws.memory_relpath(r.memory_id),)).fetchone()
            except (InvalidInputError, OSError, ValueError):  # outside the store, a name
                found = None  # too long for the file system, a NUL: no memory's path
            if found:
                r = Relation(found[0], r.relation, r.note)
        out.append(r)
    return out


def _ids_at(conn: sqlite3.Connection, rel: str) -> set[str]:
    return {row[0] for row in conn.execute("SELECT id FROM memories WHERE path = ?", (rel,))}


def _superseding(git: Git, known: dict[str, str | None], base: str, new_text: str,
                 memory: Memory, declared: list[Relation], open_props: list[Proposal],
                 replaces: str | None, checks: _Checks) -> tuple[str, dict[str, str | None]]:
    """A declared supersession is the deprecation it implies: the new memory names what it
    supersedes (`supersedes:`), and each memory it supersedes moves to deprecated/ in the
    same proposal, unchanged but for its status (as `dmm write deprecate` moves one), so that
    a person approves both at once. Returns the new text and the files it retires."""
    ids = superseded(declared)
    if not ids:
        return new_text, {}
    retired: dict[str, str | None] = {}
    for memory_id in ids:
        path = known[memory_id]
        blob = git.show_blob(base, MEMORY_ROOT + path)
        if blob is None or parsed_id(blob, path) != memory_id:
            checks.errors.append(f"{memory_id} is not committed at {path} yet: commit it "
                                 "before a proposal can supersede it")
            continue
        for other in open_props:
            if path in (other.path, other.new_path) and other.proposal_id != replaces:
                checks.errors.append(f"proposal {other.proposal_id} is already open for "
                                     f"{path}, which this one would retire: decide it first")
        moved = _edited(checks, path, deprecation, path, blob.decode("utf-8", "replace"))
        if moved is None:
            continue
        moved_to, text = moved
        if git.path_exists(base, MEMORY_ROOT + moved_to):
            checks.errors.append(f"{moved_to} already exists: {memory_id} cannot be retired "
                                 "there")
            continue
        retired[MEMORY_ROOT + path] = None
        retired[MEMORY_ROOT + moved_to] = git.hash_blob(text.encode())
    edited = _edited(checks, memory.path, with_supersedes, new_text, memory.supersedes, ids)
    return edited or new_text, retired


def _field(text: str, key: str) -> str | None:
    raw, _ = split_frontmatter(text)
    for line in (raw or "").splitlines():
        if line.startswith(f"{key}:"):
            return line.split(":", 1)[1].strip()
    return None


def complete(content: str, rel: str, today: dt.date, taken_ids: set[str],
             ) -> tuple[str | None, list[str]]:
    """A new memory's text with what can be derived filled in: id (the next free one, given
    the ids taken), scope (from the folder), status and created; or (None, why not).
    The agents' draft check uses it too, so a draft is judged as it would be proposed."""
    raw, _ = split_frontmatter(content)
    if raw is None:
        return None, ["content must start with YAML frontmatter ('---' lines) holding at "
                      "least tags, priority and confidence"]
    try:
        given = load_frontmatter(raw)
    except FrontmatterError as exc:
        return None, [f"frontmatter: {exc}"]
    if not isinstance(given, (dict, type(None))):
        return None, ["frontmatter must be a mapping of field: value"]
    given = given or {}
    text = content if content.endswith("\n") else content + "\n"
    folder = rel.split("/", 1)[0]
    derived = (("id", lambda: next_id(taken_ids, today)),
               ("scope", lambda: folder if folder in SCOPES else None),
               ("status", lambda: "active"), ("created", today.isoformat))
    try:
        for key, value in derived:
            if key not in given and value() is not None:
                text = set_field(text, key, value())
    except FrontmatterEditError as exc:
        return None, [f"frontmatter: {exc}"]
    return text, []


def kept_identity(content: str, current: str) -> tuple[str | None, list[str]]:
    """An update's text with the memory's own id, scope, status and created kept where the
    new content leaves them out: whoever rewrites a memory rewrites its text, not who it is."""
    raw, _ = split_frontmatter(content)
    now, _ = split_frontmatter(current)
    if raw is None or now is None:
        return content, []  # the checks say what is wrong with it
    try:
        given = load_frontmatter(raw) or {}
        had = load_frontmatter(now) or {}
    except FrontmatterError:
        return content, []
    if not isinstance(given, dict) or not isinstance(had, dict):
        return content, []
    text = content if content.endswith("\n") else content + "\n"
    try:
        for key in ("id", "scope", "status", "created"):
            if key not in given and had.get(key) is not None:
                text = set_field(text, key, str(had[key]))
    except FrontmatterEditError as exc:
        return None, [f"frontmatter: {exc}"]
    return text, []


EXPIRY_CHOICES = ("keep it, drop it or get another date: expires = keep, drop or YYYY-MM-DD "
                  "(dmm write promote --expires)")


def _promoted_expiry(checks: _Checks, rel: str, text: str, new_scope: str, expires: str | None,
                     current: str | None) -> str | None:
    """A promoted memory's `expires`: an ephemeral note usually carries one, and whether it
    still applies in the new scope is the proposer's decision, never a silent default."""
    if expires is None:
        if current and new_scope != "ephemeral":
            checks.errors.append(f"{rel} expires on {current}: say whether the promoted memory "
                                 f"should {EXPIRY_CHOICES}")
        return text
    if expires == "keep":
        return text
    if expires == "drop":
        return _edited(checks, rel, set_field, text, "expires", None)
    try:
        date = dt.date.fromisoformat(expires)
    except ValueError:
        checks.errors.append(f"expires {expires!r} is not a date: a promoted memory can "
                             f"{EXPIRY_CHOICES}")
        return None
    return _edited(checks, rel, set_field, text, "expires", date.isoformat())


def _edited(checks: _Checks, rel: str, edit, *args):
    """``edit(*args)``, or None with a precheck error when the memory's frontmatter cannot be
    edited safely (it does not parse, or repeats the field)."""
    try:
        return edit(*args)
    except FrontmatterEditError as exc:
        checks.errors.append(f"cannot edit {rel}'s frontmatter safely: {exc}")
        return None


def _check_id_unique(memory_id: str, rel: str, conn: sqlite3.Connection,
                     open_props: list[Proposal], checks: _Checks) -> None:
    for (path,) in conn.execute("SELECT path FROM memories WHERE id = ?", (memory_id,)):
        if path != rel:
            checks.errors.append(f"id {memory_id} is already used by {path}")
    for other in open_props:
        if other.memory_id == memory_id and other.path != rel:
            checks.errors.append(f"id {memory_id} is already used by open proposal "
                                 f"{other.proposal_id}")
