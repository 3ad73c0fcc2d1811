"""Land a commit on the checked-out branch the way DESIGN.md prescribes, safely.

Used by approvals (a merge of a proposal) and by recorded decisions (a plain commit of files
under .dmm/). Refuses on a detached HEAD or an operation in progress, only lets paths under
.dmm/ change, dry-runs the work-tree update so that a local edit in the way is reported before
anything moves, moves the branch with a compare-and-swap ref transaction (retrying when another
process moved it first) and then syncs exactly the changed paths. An flock on
<git-common-dir>/dmm.lock serialises dmm's own writers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dmm.errors import GitError, InvalidInputError
from dmm.fsutil import file_lock
from dmm.gitrepo import Git

MAX_ATTEMPTS = 5

# build(old_head) -> (tree, parents, message, extra ref updates) or raise
Builder = Callable[[str], tuple[str, list[str], str, list[tuple[str, str | None, str | None]]]]


@dataclass
class Landed:
    commit: str
    branch: str
    changed_paths: list[str]


def land(git: Git, build: Builder, still_valid: Callable[[], None] | None = None) -> Landed:
    with file_lock(git.common_dir() / "dmm.lock"):
        branch = git.current_branch()
        if branch is None:
            raise InvalidInputError("HEAD is detached: check out the branch the memory change "
                                    "should land on, then try again")
        busy = git.operation_in_progress()
        if busy:
            raise InvalidInputError(f"{busy} is in progress: finish or abort it, then try again")
        for _ in range(MAX_ATTEMPTS):
            old = git.rev_parse("HEAD")
            if old is None:
                raise InvalidInputError("the repository has no commit yet: commit .dmm/ first")
            tree, parents, message, extra = build(old)
            changed = git.changed_paths(old, tree)
            outside = [p for p in changed if not p.startswith(".dmm/")]
            if outside:
                raise InvalidInputError(f"refusing to change files outside .dmm/: "
                                        f"{', '.join(outside)}")
            new = git.commit_tree(tree, parents, message)
            git.check_sync(old, new)
            if git.update_refs([(branch, new, old)] + extra):
                try:
                    git.sync_worktree(old, new)
                except BaseException:
                    # put the branch (and any ref moved with it) back: the work tree still
                    # shows ``old``, and a branch ahead of its work tree would look like the
                    # user had reverted the change
                    git.update_refs([(branch, old, new)] + [(ref, before, after) for
                                                            ref, after, before in extra])
                    raise
                return Landed(new, branch.removeprefix("refs/heads/"), changed)
            if still_valid:
                still_valid()  # raises when the reason to land is gone (e.g. already approved)
        raise GitError("the branch kept moving while dmm tried to commit: try again")


def commit_files(git: Git, files: dict[str, bytes | None], message: str) -> Landed:
    """Commit ``files`` ({path from the repository root: content, or None to delete}) on top
    of HEAD, leaving everything else in the index and work tree as it is."""
    def build(old: str):
        changes = {path: None if data is None else git.hash_blob(data)
                   for path, data in files.items()}
        return git.tree_with(old, changes), [old], message, []

    return land(git, build)
