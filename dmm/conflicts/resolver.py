"""Resolving a conflict: deprecate, merge, clarify, dismiss or defer, as one commit.

A resolution is one commit on the checked-out branch, landed by dmm.landing (lock, refusal
when a local edit is in the way, compare-and-swap ref update), that touches only .dmm/: the
memory files it changes and the decision record .dmm/conflicts/<conflict_id>.json, which keeps
the pair from being reported again. Trailers (Dmm-Conflict, Dmm-Resolution, Dmm-Reason,
Dmm-Resolved-By) make it part of the audit log. Nothing is deleted: a deprecated memory moves
to deprecated/ with its history, and `undo` reverts a resolution with a new commit. With
``propose`` the same change goes to a proposal branch and through review instead.

Memory texts are read from the commit the resolution lands on, never from the cache, so a
resolution always edits exactly what git has.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field

from dmm.conflicts import store
from dmm.conflicts.model import STATUS_AFTER, Conflict, check_conflict_id, pair_key
from dmm.errors import AlreadyDecidedError, InvalidInputError, NotFoundError
from dmm.gitrepo import Git, commit_message, trailer_values
from dmm.fsutil import file_lock
from dmm.landing import land
from dmm.memory.edit import (FrontmatterEditError, deprecation, next_id, set_field,
                             with_clarification, with_supersedes, yaml_value)
from dmm.memory.model import CONFIDENCES, DEPRECATED_DIR, MAX_TAGS, SCOPES, Memory
from dmm.memory.parse import frontmatter_ids, parse_memory, split_frontmatter
from dmm.memory.paths import clean_memory_path
from dmm.proposals.model import MEMORY_ROOT, PROPOSAL_PREFIX, new_proposal_id
from dmm.proposals.queue import open_proposals
from dmm.shellcmd import command

ACTIONS = ("deprecate", "merge", "clarify", "dismiss", "defer")
CLOSED = ("resolved", "dismissed")  # statuses that need an undo before another resolution


@dataclass
class ResolutionRequest:
    conflict_id: str
    action: str
    reason: str
    target: str | None = None  # deprecate: the memory to retire (id or path)
    content: str | None = None  # merge: the merged memory (a body, or a whole file)
    path: str | None = None  # merge: where the merged memory goes (relative to .dmm/memory/)
    clarifications: dict[str, str] = field(default_factory=dict)  # clarify: memory -> text
    resolved_by: str | None = None  # default: git's user.name
    until: str | None = None  # defer: an ISO date; the conflict is open again from that day


@dataclass
class ResolutionResult:
    """The answer to a resolution (PRD phase 3, 3.3), with where it landed."""

    success: bool
    conflict_id: str
    action_taken: str
    memories_modified: list[str] = field(default_factory=list)
    memories_deprecated: list[str] = field(default_factory=list)
    memories_created: list[str] = field(default_factory=list)
    error: str | None = None
    commit: str | None = None
    branch: str | None = None
    changed_paths: list[str] = field(default_factory=list)
    proposal_id: str | None = None
    reason: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class _Change:
    """What a resolution does to the files, before it is committed."""

    files: dict[str, str | None]  # path from the repository root: new text, None to delete
    modified: list[str] = field(default_factory=list)
    deprecated: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    main_path: str = ""  # the memory a proposal is about (relative to .dmm/memory/)
    main_new_path: str = ""
    main_id: str = ""


# --- pure: what each action changes -----------------------------------------------------------

def _pick(key: str, mems: list[Memory]) -> Memory:
    for m in mems:
        if key in (m.id, m.path, MEMORY_ROOT + m.path):
            return m
    raise InvalidInputError(f"{key} is not one of this conflict's memories: "
                            f"{' or '.join(m.id for m in mems)}")


def _deprecate(target: Memory, survivor: Memory, texts: dict[str, str], taken: set[str],
               ) -> _Change:
    if not target.is_active or target.path.startswith(DEPRECATED_DIR + "/"):
        raise InvalidInputError(f"{target.id} is already deprecated")
    new_rel, new_text = deprecation(target.path, texts[target.path])
    if new_rel in taken:
        raise InvalidInputError(f"{new_rel} already exists: move it away first")
    files: dict[str, str | None] = {MEMORY_ROOT + target.path: None,
                                    MEMORY_ROOT + new_rel: new_text}
    change = _Change(files, deprecated=[target.id], main_path=survivor.path,
                     main_new_path=survivor.path, main_id=survivor.id)
    if target.id not in survivor.supersedes:
        files[MEMORY_ROOT + survivor.path] = with_supersedes(
            texts[survivor.path], survivor.supersedes, [target.id])
        change.modified.append(survivor.id)
    return change


def merged_text(content: str, a: Memory, b: Memory, new_id: str, today: dt.date,
                added: dict[str, int] | None = None) -> str:
    """The merged memory: ``content`` (a markdown body, or a whole file with frontmatter)
    completed with what can be derived from the two originals; it supersedes both.
    ``added`` as in ``newest``."""
    newer = newest(a, b, added)
    scope = SCOPES[min(SCOPES.index(a.scope), SCOPES.index(b.scope))]  # the broader one
    raw, _ = split_frontmatter(content)
    if raw is None:
        body = content.strip()
        if not body.startswith("# "):
            body = f"# {newer.title}\n\n{body}"
        rank = [c for c in CONFIDENCES if c != "deprecated"]
        confidence = max((a.confidence, b.confidence),
                         key=lambda c: rank.index(c) if c in rank else -1)
        tags = list(dict.fromkeys(a.tags + b.tags))[:MAX_TAGS]
        related = [r for r in dict.fromkeys(a.related + b.related) if r not in (a.id, b.id)]
        lines = [f"id: {new_id}", f"tags: {yaml_value(tags)}", f"scope: {scope}",
                 f"priority: {max(a.priority, b.priority)}",
                 f"confidence: {confidence if confidence in rank else 'active'}",
                 "status: active", f"created: {today.isoformat()}",
                 f"supersedes: {yaml_value(sorted({a.id, b.id}))}"]
        if related:
            lines.append(f"related: {yaml_value(related)}")
        return "---\n" + "\n".join(lines) + "\n---\n\n" + body + "\n"
    text = content if content.endswith("\n") else content + "\n"
    parsed, _ = parse_memory(text, "merged.md")
    given = {line.split(":", 1)[0] for line in raw.splitlines() if ":" in line}
    for key, value in (("id", new_id), ("scope", scope), ("status", "active"),
                       ("created", today.isoformat())):
        if key not in given:
            text = set_field(text, key, value)
    current = parsed.supersedes if parsed else []
    return with_supersedes(text, current, sorted({a.id, b.id}))


def merge_draft(a: Memory, b: Memory, added: dict[str, int] | None = None) -> str:
    """A starting point for a merged memory: the newer title, both bodies (newer first);
    ``added`` as in ``newest``."""
    first = newest(a, b, added)
    second = b if first is a else a
    return f"# {first.title}\n\n{first.content.strip()}\n\n{second.content.strip()}\n"


def newest(a: Memory, b: Memory, added: dict[str, int] | None = None) -> Memory:
    """The more recently created memory: by `created`, then by the commit that added it
    (``added``: memory id -> its rank in git's history), then by id."""
    if a.created != b.created and a.created is not None and b.created is not None:
        return a if a.created > b.created else b
    from dmm.conflicts.auto import ordered

    return ordered(a, b, added)[0]


SLUG_CHARS = 40


def slug(title: str) -> str:
    """A short, readable file name for a title: its words without the little ones, whole
    words up to 40 characters ("Upload size ceiling of the gateway" -> upload_size_ceiling_gateway)."""
    from dmm.text.analyze import STOPWORDS

    words = re.findall(r"[a-z0-9]+", title.lower())
    out = ""
    for word in [w for w in words if w not in STOPWORDS] or words:
        if out and len(out) + 1 + len(word) > SLUG_CHARS:
            break
        out = f"{out}_{word}" if out else word
    return out[:SLUG_CHARS] or "merged"


def merged_path(title: str, scope: str, near: Memory, taken: set[str]) -> str:
    """A free path for a merged memory: in ``scope``, beside ``near``, named after the title."""
    name = slug(title)
    folders = near.path.split("/")[1:-1]
    stem = "/".join([scope, *folders, name])
    candidate, n = f"{stem}.md", 2
    while candidate in taken:
        candidate, n = f"{stem}_{n}.md", n + 1
    return candidate


def _merge(request: ResolutionRequest, a: Memory, b: Memory, texts: dict[str, str],
           taken_paths: set[str], taken_ids: set[str], today: dt.date,
           added: dict[str, int] | None = None) -> _Change:
    if not request.content or not request.content.strip():
        raise InvalidInputError("merge needs the merged content: --content, --file, or an "
                                "editor on a terminal")
    text = merged_text(request.content, a, b, next_id(taken_ids, today), today, added)
    scope = re.search(r"^scope:[ \t]*(\S*)", split_frontmatter(text)[0], re.M).group(1)
    if request.path:
        request.path = clean_memory_path(request.path)
    draft, _ = parse_memory(text, request.path or f"{scope}/merged.md")
    rel = request.path or (draft and merged_path(draft.title, draft.scope, newest(a, b, added),
                                                 taken_paths)) or f"{scope}/merged.md"
    memory, problems = parse_memory(text, rel)
    errors = [p for p in problems if p.severity == "error"]
    if memory is None or errors:
        raise InvalidInputError("the merged memory is not valid: " + "; ".join(
            f"{p.field or 'content'}: {p.message}" for p in errors))
    if memory.id in taken_ids:
        raise InvalidInputError(f"id {memory.id} is already used by another memory")
    if rel in taken_paths:
        raise InvalidInputError(f"{rel} already exists: choose another --path")
    change = _Change({MEMORY_ROOT + rel: text}, created=[memory.id], main_path=rel,
                     main_new_path=rel, main_id=memory.id)
    for old in (a, b):
        part = _deprecate(old, memory, texts, taken_paths)
        change.files[MEMORY_ROOT + old.path] = None
        change.files.update({p: t for p, t in part.files.items() if t is not None
                             and p != MEMORY_ROOT + rel})
        change.deprecated += part.deprecated
    return change


def _clarify(request: ResolutionRequest, mems: list[Memory], texts: dict[str, str]) -> _Change:
    if not request.clarifications:
        raise InvalidInputError("clarify needs --clarify MEMORY_ID=TEXT for at least one of "
                                f"the two memories ({' and '.join(m.id for m in mems)})")
    change = _Change({})
    for key, text in request.clarifications.items():
        memory = _pick(key, mems)
        if not text.strip():
            raise InvalidInputError(f"the clarification for {memory.id} is empty")
        if memory.id in change.modified:
            raise InvalidInputError(f"{memory.id} is clarified twice")
        change.files[MEMORY_ROOT + memory.path] = with_clarification(texts[memory.path], text)
        change.modified.append(memory.id)
        if not change.main_id:
            change.main_path = change.main_new_path = memory.path
            change.main_id = memory.id
    return change


def plan(request: ResolutionRequest, mems: list[Memory], texts: dict[str, str],
         taken_paths: set[str], taken_ids: set[str], today: dt.date,
         added: dict[str, int] | None = None) -> _Change:
    """The file changes of ``request`` on the two memories ``mems`` (texts by path);
    ``added``: when git added each (which is newer, for a merge)."""
    if request.action == "deprecate":
        if not request.target:
            raise InvalidInputError("deprecate needs --target: the memory to retire")
        target = _pick(request.target, mems)
        return _deprecate(target, next(m for m in mems if m is not target), texts, taken_paths)
    if request.action == "merge":
        return _merge(request, *mems, texts, taken_paths, taken_ids, today, added)
    if request.action == "clarify":
        return _clarify(request, mems, texts)
    return _Change({})  # dismiss, defer: only the decision record


def decision_record(conflict: Conflict, status: str, action: str, reason: str, who: str,
                    now: dt.datetime | None = None, **details) -> dict:
    now = now or dt.datetime.now(dt.timezone.utc)
    ids = [m.memory_id for m in conflict.memories]
    return {"conflict_id": conflict.conflict_id, "memories": list(pair_key(*ids)),
            "status": status, "action": action, "type": conflict.type,
            "detection_method": conflict.detection_method,
            "confidence": round(conflict.confidence, 3), "description": conflict.description,
            "evidence": conflict.evidence, "reason": reason.strip(), "by": who,
            "at": now.isoformat(timespec="seconds"),
            # when it was first found: `conflicts stats` times resolutions from it
            "detected_at": conflict.detected_at or None,
            **{k: v for k, v in {"question": conflict.question, **details}.items() if v}}


# --- git: land the change -----------------------------------------------------------------------

def _read(git: Git, rev: str, mems: list[Memory]) -> tuple[list[Memory], dict[str, str]]:
    """The two memories as committed in ``rev`` (parsed from git, not from the cache)."""
    out, texts = [], {}
    for m in mems:
        data = git.show_blob(rev, MEMORY_ROOT + m.path)
        if data is None:
            if any(m.id in memory_ids for memory_ids in _committed_ids(git, rev, m.id)):
                raise InvalidInputError(
                    f"{m.id} is no longer at {m.path}: another resolution or proposal moved "
                    "or deprecated it meanwhile",
                    hint="run `dmm conflicts scan` and `dmm conflicts list` to see what is left")
            raise InvalidInputError(f"{m.path} is not committed: commit it, then resolve")
        text = data.decode("utf-8", "replace")
        parsed, _ = parse_memory(text, m.path)
        if parsed is None or parsed.id != m.id:
            raise InvalidInputError(f"{m.path} changed since the last scan: run "
                                    "`dmm conflicts scan` and try again")
        out.append(parsed)
        texts[m.path] = text
    return out, texts


def _committed_ids(git: Git, rev: str, memory_id: str) -> list[set[str]]:
    return [frontmatter_ids(git.show_blob(rev, p) or b"")
            for p in git.files_containing(rev, memory_id, MEMORY_ROOT)]


def _check_still_open(git: Git, rev: str, conflict: Conflict) -> None:
    """Compare-and-swap on the conflict's decision: its committed record in ``rev``, read
    inside dmm's lock, must still say what the resolution saw when it started. Of several
    resolutions started at the same moment, one commits; the others are told why not."""
    blob = git.show_blob(rev, store.record_path(conflict.conflict_id))
    try:
        now = json.loads(blob).get("status") if blob is not None else "unresolved"
    except (ValueError, AttributeError):
        now = None
    # what the committed record said when the conflict was read (a deferral that has run
    # out reads as unresolved, but its record still says deferred)
    seen = (conflict.decision or {}).get("status") or "unresolved"
    if now is not None and now != seen:
        raise AlreadyDecidedError(f"{conflict.conflict_id} was already {now} meanwhile, by "
                                "another command", hint="`dmm conflicts show "
                                                        f"{conflict.conflict_id}` shows it now")


def _check_written(files: dict[str, str | None]) -> None:
    """Every memory file a resolution writes must parse and validate: nothing that would
    drop out of the index is committed."""
    for path, text in files.items():
        if text is None or not path.startswith(MEMORY_ROOT):
            continue
        memory, problems = parse_memory(text, path[len(MEMORY_ROOT):])
        errors = [p for p in problems if p.severity == "error"]
        if memory is None or errors:
            raise InvalidInputError(
                f"the resolution would leave {path[len(MEMORY_ROOT):]} invalid ("
                + "; ".join(f"{p.field or 'content'}: {p.message}" for p in errors)
                + "): nothing was committed", hint="fix that memory's frontmatter by hand first")


def resolve(git: Git, conflict: Conflict, mems: list[Memory], request: ResolutionRequest, *,
            taken_ids: set[str], propose: bool = False, today: dt.date | None = None,
            added: dict[str, int] | None = None) -> ResolutionResult:
    """Carry out ``request`` on ``conflict`` (between ``mems``) as one commit; with
    ``propose``, as a proposal branch instead. ``taken_ids``: every memory id in use, and
    ``added``: when git added each memory (only a merge needs them)."""
    action = request.action
    if action not in ACTIONS:
        raise InvalidInputError(f"--action must be one of {', '.join(ACTIONS)}")
    if not request.reason.strip():
        raise InvalidInputError("a reason is required: say why this resolves the conflict")
    if conflict.status in CLOSED:
        raise AlreadyDecidedError(f"{conflict.conflict_id} is already {conflict.status}",
                                hint=f"`{command('dmm', 'conflicts', 'undo', conflict.conflict_id)}` "
                                     "reopens it")
    if propose and action in ("dismiss", "defer"):
        raise InvalidInputError(f"{action} changes no memory, so there is nothing to review: "
                                "run it without --propose")
    today = today or dt.date.today()
    if request.until is not None:
        if action != "defer":
            raise InvalidInputError("--until goes with defer: the day a deferral ends")
        request.until = check_until(request.until, today)
    who = request.resolved_by or git.user_name()
    outcome = ResolutionResult(True, conflict.conflict_id, action, reason=request.reason.strip())

    def build(old: str):
        _check_still_open(git, old, conflict)
        current, texts = _read(git, old, mems)
        taken_paths = {p[len(MEMORY_ROOT):] for p in git.paths(old, MEMORY_ROOT)}
        try:
            change = plan(request, current, texts, taken_paths, taken_ids, today, added)
        except FrontmatterEditError as exc:
            raise InvalidInputError(f"cannot edit the frontmatter safely: {exc}",
                                    hint="fix that memory's frontmatter by hand first") from None
        _check_written(change.files)
        outcome.memories_modified = change.modified
        outcome.memories_deprecated = change.deprecated
        outcome.memories_created = change.created
        record = decision_record(conflict, STATUS_AFTER[action], action, request.reason, who,
                                 target=change.deprecated if action == "deprecate" else None,
                                 created=change.created, deprecated=change.deprecated,
                                 modified=change.modified,
                                 clarifications=request.clarifications or None,
                                 suppressed_until=request.until if action == "defer" else None)
        files = {**change.files, store.record_path(conflict.conflict_id):
                 json.dumps(record, indent=2, ensure_ascii=False) + "\n"}
        blobs = {p: None if t is None else git.hash_blob(t.encode()) for p, t in files.items()}
        tree = git.tree_with(old, blobs)
        pairs = [("Dmm-Conflict", conflict.conflict_id), ("Dmm-Resolution", action)]
        pairs += [("Dmm-Memory", m.memory_id) for m in conflict.memories]
        pairs += [("Dmm-Target", i) for i in change.deprecated if action == "deprecate"]
        pairs += [("Dmm-Created", i) for i in change.created]
        if action == "defer" and request.until:
            pairs.append(("Dmm-Until", request.until))
        pairs += [("Dmm-Reason", request.reason), ("Dmm-Resolved-By", who)]
        cid = conflict.conflict_id
        subject = {"deprecate": f"dmm: resolve {cid} by deprecating {', '.join(change.deprecated)}",
                   "merge": f"dmm: resolve {cid} by merging into {', '.join(change.created)}",
                   "clarify": f"dmm: resolve {cid} by clarifying {', '.join(change.modified)}",
                   }.get(action, f"dmm: {action} {cid}")
        if propose:
            outcome.proposal_id = new_proposal_id()
            pairs = [("Dmm-Proposal", outcome.proposal_id), ("Dmm-Type", "resolve"),
                     ("Dmm-Path", change.main_path), ("Dmm-New-Path", change.main_new_path),
                     ("Dmm-Proposed-By", who)] + pairs + [("Dmm-Memory", change.main_id)]
            subject = f"dmm: propose to {subject.removeprefix('dmm: ')}"
        return tree, [old], commit_message(subject, request.reason, pairs), []

    if propose:
        # under dmm's lock, like `dmm write`: a merged memory's new id is then never handed
        # out twice
        with file_lock(git.common_dir() / "dmm.lock"):
            base = git.rev_parse("HEAD")
            if base is None:
                raise InvalidInputError("the repository has no commit yet: commit .dmm/ first")
            taken_ids |= {p.memory_id for p in open_proposals(git, with_status=False)}
            tree, parents, message, _ = build(base)
            commit = git.commit_tree(tree, parents, message)
            if not git.update_refs([(PROPOSAL_PREFIX + outcome.proposal_id, commit, None)]):
                raise InvalidInputError("could not create the proposal branch: try again")
        outcome.commit = commit
        outcome.branch = PROPOSAL_PREFIX.removeprefix("refs/heads/") + outcome.proposal_id
        outcome.changed_paths = git.changed_paths(base, commit)
        return outcome
    landed = land(git, build)
    outcome.commit, outcome.branch = landed.commit, landed.branch
    outcome.changed_paths = landed.changed_paths
    return outcome


def check_until(until: str, today: dt.date) -> str:
    """``until`` as an ISO date after ``today``: the day a deferral ends."""
    try:
        day = dt.date.fromisoformat(until.strip())
    except (ValueError, AttributeError):
        raise InvalidInputError(f"--until takes a date as YYYY-MM-DD, got {until!r}") from None
    if day <= today:
        raise InvalidInputError(f"--until {day} is not in the future: a deferral ends on a "
                                "later day (or give no --until: deferred until someone decides)")
    return day.isoformat()


@dataclass
class BatchResult:
    """Several conflicts dismissed or deferred by one commit."""

    action_taken: str
    conflict_ids: list[str]
    commit: str | None = None
    branch: str | None = None
    changed_paths: list[str] = field(default_factory=list)
    reason: str = ""
    until: str | None = None

    def to_dict(self) -> dict:
        return {"success": True, **self.__dict__}


def decide_many(git: Git, conflicts: list[Conflict], action: str, reason: str, *,
                until: str | None = None, who: str | None = None,
                today: dt.date | None = None) -> BatchResult:
    """Dismiss or defer every conflict of ``conflicts`` as one commit (one decision record
    each, and one Dmm-Conflict trailer each: `undo` of one of them reverts its record only).
    Nothing is committed when any of them was decided meanwhile."""
    if action not in ("dismiss", "defer"):
        raise InvalidInputError("only dismiss and defer decide several conflicts at once")
    if not reason.strip():
        raise InvalidInputError("a reason is required: say why")
    if not conflicts:
        raise InvalidInputError(f"no conflict to {action}")
    if until is not None:
        if action != "defer":
            raise InvalidInputError("--until goes with defer: the day a deferral ends")
        until = check_until(until, today or dt.date.today())
    closed = [c.conflict_id for c in conflicts if c.status in CLOSED]
    if closed:
        raise AlreadyDecidedError(f"already decided: {', '.join(closed)}",
                                  hint="leave them out, or undo their decision first")
    who = who or git.user_name()
    ids = [c.conflict_id for c in conflicts]
    outcome = BatchResult(action, ids, reason=reason.strip(), until=until)

    def build(old: str):
        records = {}
        for c in conflicts:
            _check_still_open(git, old, c)
            record = decision_record(c, STATUS_AFTER[action], action, reason, who,
                                     suppressed_until=until)
            records[store.record_path(c.conflict_id)] = git.hash_blob(
                (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode())
        tree = git.tree_with(old, records)
        pairs = [("Dmm-Conflict", i) for i in ids] + [("Dmm-Resolution", action)]
        pairs += [("Dmm-Until", until)] if until else []
        pairs += [("Dmm-Reason", reason), ("Dmm-Resolved-By", who)]
        subject = f"dmm: {action} {len(ids)} conflicts" if len(ids) > 1 else \
            f"dmm: {action} {ids[0]}"
        return tree, [old], commit_message(subject, reason, pairs), []

    landed = land(git, build)
    outcome.commit, outcome.branch = landed.commit, landed.branch
    outcome.changed_paths = landed.changed_paths
    return outcome


def undo(git: Git, conflict_id: str, reason: str, who: str | None = None) -> ResolutionResult:
    """Revert the latest resolution (or dismissal, deferral, flag) of ``conflict_id`` with a
    new commit. Refuses when a file it changed has changed again since: reverting it would
    lose that later work."""
    if not reason.strip():
        raise InvalidInputError("a reason is required: say why the resolution is undone")
    check_conflict_id(conflict_id)
    who = who or git.user_name()
    last = git.commits_with_trailer("HEAD", "Dmm-Conflict", conflict_id)[:1]
    if not last:
        raise NotFoundError(f"no resolution of {conflict_id} on this branch")
    done = last[0]
    action = done.trailers.get("Dmm-Resolution", "")
    if action == "undo":
        raise AlreadyDecidedError(f"the last resolution of {conflict_id} was already undone "
                                f"(commit {done.sha[:12]})")
    before = done.parents[0] if done.parents else None
    if before is None:
        raise InvalidInputError(f"commit {done.sha[:12]} has no parent to go back to")
    outcome = ResolutionResult(True, conflict_id, "undo", reason=reason.strip())

    def build(old: str):
        paths = git.changed_paths(before, done.sha)
        if len(trailer_values(done.message, "Dmm-Conflict")) > 1:
            # one commit decided several conflicts (decide_many): only this one's record
            paths = [p for p in paths if p == store.record_path(conflict_id)]
        after, now, then = (git.blob_ids(rev, paths) for rev in (done.sha, old, before))
        moved = [p for p in paths if after.get(p) != now.get(p)]
        if moved:
            raise InvalidInputError(
                f"cannot undo: changed again since the resolution: {', '.join(moved)}",
                hint="edit those memories by hand, or resolve the conflict again")
        tree = git.tree_with(old, {p: then.get(p) for p in paths})
        pairs = [("Dmm-Conflict", conflict_id), ("Dmm-Resolution", "undo"),
                 ("Dmm-Undoes", action), ("Dmm-Reverts", done.sha), ("Dmm-Reason", reason),
                 ("Dmm-Resolved-By", who)]
        outcome.memories_modified = sorted({p for p in paths if p.startswith(MEMORY_ROOT)})
        return tree, [old], commit_message(f"dmm: undo {action} of {conflict_id}",
                                           reason, pairs), []

    landed = land(git, build)
    outcome.commit, outcome.branch = landed.commit, landed.branch
    outcome.changed_paths = landed.changed_paths
    return outcome
