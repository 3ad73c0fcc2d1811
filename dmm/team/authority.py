"""Who decides: the one canonical remote and main branch that say what landed, and git's own
answer (a signature) to who made a decision.

Anything that can be pushed is a claim: a record on ``dmm/audit``, a work branch, ``HEAD``, a
fork, another remote. Only the canonical main branch is authority for "landed", because only
the people allowed to push to it can change it:

- the canonical remote's branch (``refs/remotes/<remote>/<branch>``): the team's; the only
  one ``dmm sync`` derives what it publishes from;
- this clone's own branch of the same name (``refs/heads/<branch>``): counts for this clone's
  own view (an approval made here before ``git push``; a solo repository with no remote).

Settings: ``[team] remote`` and ``main_branch`` in .dmm/config.toml; empty (the default)
means the remote and branch this clone tracks (see :func:`canonical`). IO: git and the
settings file.
"""

from __future__ import annotations

from dataclasses import dataclass

from dmm.gitrepo import Git

REMOTES = "refs/remotes/"


@dataclass(frozen=True)
class Canonical:
    remote: str | None  # None: a clone with no remote (a solo repository)
    branch: str  # "main"

    @property
    def remote_ref(self) -> str | None:
        return f"{REMOTES}{self.remote}/{self.branch}" if self.remote else None

    @property
    def local_ref(self) -> str:
        return f"refs/heads/{self.branch}"


def canonical(git: Git) -> Canonical:
    """The canonical remote and main branch of this clone (worked out once per Git object)."""
    found = getattr(git, "_dmm_canonical", None)
    if found is None:
        found = _work_out(git)
        git._dmm_canonical = found  # the names do not change within one command
    return found


def _settings(git: Git) -> dict:
    from dmm.config import load

    return load(git.root / ".dmm" / "config.toml").get("team", {})


def _work_out(git: Git) -> Canonical:
    settings = _settings(git)
    remotes = git.out("remote", check=False).split()
    tracked = _tracked(git)  # (remote, branch) the main work tree's branch follows
    remote = settings.get("remote") or None
    if remote is None:
        if tracked and tracked[0] in remotes:
            remote = tracked[0]
        elif "origin" in remotes:
            remote = "origin"
        elif len(remotes) == 1:
            remote = remotes[0]
    branch = settings.get("main_branch") or ""
    if not branch and remote:
        branch = _remote_default(git, remote) or (
            tracked[1] if tracked and tracked[0] == remote else "")
    if not branch:
        branch = _local_main(git)
    return Canonical(remote, branch)


def publishing_ref(git: Git, remote: str) -> tuple[str | None, str | None]:
    """(the canonical remote branch ``dmm sync`` may derive what it publishes to ``remote``
    from, or None; a sentence saying why none, or None).

    This clone's ``[team]`` settings are read from its work tree, so a branch it has checked
    out (a contributor's pull request under review) can name itself the main branch: that
    changes this clone's own view only. What sync removes from, or records on, the team's
    remote needs the team's answer: the main branch named by the settings committed on the
    remote's default branch (``refs/remotes/<remote>/HEAD``), or that branch itself."""
    c = canonical(git)
    if c.remote != remote:
        return None, None
    teams = _committed_main(git, remote)
    if teams is None and _settings(git).get("main_branch"):
        from dmm.shellcmd import command

        learn = command("git", "remote", "set-head", remote, "--auto")
        return None, (f"{remote}'s default branch is not known here ({learn}), so the main "
                      f"branch this work tree's .dmm/config.toml names ({c.branch}) cannot be "
                      "checked against the team's: sync removes no decided proposal branch "
                      "there and writes no landing record")
    if teams is not None and teams != c.branch:
        return None, (f"this work tree's .dmm/config.toml names {c.branch} as the main branch, "
                      f"but {remote}'s default branch says {teams}: sync removes no decided "
                      f"proposal branch on {remote} and writes no landing record until they "
                      "agree (a branch you have checked out changes only your own view)")
    return c.remote_ref, None


def _committed_main(git: Git, remote: str) -> str | None:
    """The main branch the settings on ``remote``'s default branch name (that branch itself
    when they name none), or None when that branch is unknown."""
    from dmm.config import parse
    from dmm.errors import InvalidInputError

    default = _remote_default(git, remote)
    if default is None:
        return None
    rev = f"{REMOTES}{remote}/{default}"
    try:
        settings = parse(git.show_blob(rev, ".dmm/config.toml"), f".dmm/config.toml of {rev}")
    except InvalidInputError:
        return default  # the team's settings cannot be read: its default branch is its main
    return settings.get("team", {}).get("main_branch") or default


def _tracked(git: Git) -> tuple[str, str] | None:
    """(remote, branch) that the branch of the main work tree follows, if it follows one."""
    head = main_worktree_branch(git)
    if not head or not head.startswith("refs/heads/"):
        return None
    name = head[len("refs/heads/"):]
    remote = git.out("config", f"branch.{name}.remote", check=False).strip()
    merge = git.out("config", f"branch.{name}.merge", check=False).strip()
    if remote and remote != "." and merge.startswith("refs/heads/"):
        return remote, merge[len("refs/heads/"):]
    return None


def _remote_default(git: Git, remote: str) -> str | None:
    """The branch ``refs/remotes/<remote>/HEAD`` names (set by git clone, or by dmm sync)."""
    target = git.out("symbolic-ref", "-q", f"{REMOTES}{remote}/HEAD", check=False).strip()
    prefix = f"{REMOTES}{remote}/"
    return target[len(prefix):] if target.startswith(prefix) else None


def _local_main(git: Git) -> str:
    """With no remote to ask: main or master where one exists, else the branch of the main
    work tree (a solo user approves into the branch they have checked out), never a dmm/
    branch."""
    for name in ("main", "master"):
        if git.rev_parse(f"refs/heads/{name}"):
            return name
    head = main_worktree_branch(git) or ""
    name = head[len("refs/heads/"):] if head.startswith("refs/heads/") else ""
    return name if name and not name.startswith("dmm/") else "main"


def main_worktree_branch(git: Git) -> str | None:
    """The branch checked out in the repository's main work tree (the first git lists)."""
    for line in git.out("worktree", "list", "--porcelain", check=False).splitlines():
        if line.startswith("branch "):
            return line[len("branch "):]
        if not line.strip():
            return None  # the main work tree's entry ended without a branch (detached)
    return None


def authority_revs(git: Git) -> list[str]:
    """The refs whose history says what landed: the canonical remote's branch and this
    clone's own branch of the same name (what sync publishes reads the first alone)."""
    c = canonical(git)
    return [r for r in (c.remote_ref, c.local_ref) if r and git.rev_parse(r)]


def history_gap(git: Git) -> str | None:
    """A sentence when this clone lacks history (shallow or partial), else None: what landed
    before its first commit cannot be seen, so dmm's view is incomplete."""
    shallow = git.out("rev-parse", "--is-shallow-repository", check=False).strip() == "true"
    if shallow:
        return ("this clone is shallow (git clone --depth): dmm cannot see proposals and "
                "decisions older than its history; run `git fetch --unshallow` for the full "
                "record")
    partial = git.out("config", "--get-regexp", r"^(remote\..*\.promisor|"
                      r"extensions\.partialclone)$", check=False).strip()
    if partial:
        return ("this clone is partial (git clone --filter): dmm reads history it may not "
                "have; run `git fetch --refetch` (or clone without --filter) for the full "
                "record")
    return None


def signing_mode(git: Git) -> bool:
    """True when this clone checks signatures (docs/team.md): a signature format or an
    allowed-signers file is set, or commits are signed."""
    found = git.signing()
    return bool(found.get("gpg.format") or found.get("gpg.ssh.allowedsignersfile")) \
        or git.signs()


def signatures(git: Git, shas: list[str]) -> dict[str, str]:
    """{sha: verified | unverified | unsigned} for ``shas``, in one git call (``%G?``).

    Verified means a good signature by a trusted key (``G``) *of the commit's author*: git
    checks the key against the allowed signers, not against the name on the commit, so a
    teammate whose key the team trusts could otherwise sign a decision authored, and named,
    as someone else, and have it shown as that person's verified decision."""
    if not shas:
        return {}
    proc = git.run("log", "--no-walk=unsorted", "--stdin", "--format=%H%x00%G?%x00%ae%x00%GS",
                   input="".join(f"{sha}\n" for sha in dict.fromkeys(shas)), check=False)
    out = {}
    for line in proc.stdout.splitlines():
        sha, mark, email, signer = (line.split("\0") + ["", "", ""])[:4]
        good = mark == "G" and _signed_by(signer, email)
        out[sha] = "verified" if good else "unsigned" if mark in ("N", "") else "unverified"
    return out


def _signed_by(signer: str, email: str) -> bool:
    """Whether git's signer (an SSH principal, ``a@example.com``, or an OpenPGP user id,
    ``A <a@example.com>``) is the person with ``email``."""
    signer, email = signer.strip().lower(), email.strip().lower()
    return bool(email) and (signer == email or signer.endswith(f"<{email}>"))
