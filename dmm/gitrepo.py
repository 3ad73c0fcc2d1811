"""The only module that talks to git: it runs git as a subprocess and returns plain values.

Everything that writes objects uses plumbing with a private temporary index (GIT_INDEX_FILE),
so the user's index and working tree are never touched here; dmm.landing is the one place that
moves a branch and the paths it changed in the work tree, under git's own index.lock.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dmm.errors import DmmError, GitError, InvalidInputError, NotARepositoryError
from dmm.memory.paths import has_control_chars

ZERO = "0" * 40
# A trailer line as git reads one: a token, a colon, a value. dmm's own keys start with Dmm-.
_TRAILER_LINE = re.compile(r"([A-Za-z0-9][A-Za-z0-9-]*):[ \t]*(.*)")
_DMM_KEY = re.compile(r"Dmm-[A-Za-z]+(?:-[A-Za-z]+)*")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Paths dmm passes after "--" are file names, never glob patterns or pathspec magic.
_ENV = {"GIT_LITERAL_PATHSPECS": "1"}
# Set once this process moved a ref: whatever fails afterwards must not be retried blindly.
REFS_MOVED = False


def run(args: list[str], cwd: Path, check: bool = True, env: dict | None = None,
        input: str | bytes | None = None) -> subprocess.CompletedProcess:
    """Run ``git args`` in ``cwd``; raise GitError with git's own message when it fails.

    Git's output is bytes, and a pushed ref name, path, author or commit message may hold
    bytes that are not UTF-8. Text is decoded as UTF-8 with ``surrogateescape``: nothing
    fails to decode, and a name read here goes back to git (to delete that ref) as the very
    bytes git gave. Such a name is shown escaped (dmm.cli.terminal); text that is only shown,
    a commit's author and message, is decoded with replacement characters (``shown``)."""
    text = not isinstance(input, bytes)
    decoding = {"encoding": "utf-8", "errors": "surrogateescape"} if text else {}
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, **decoding,
                              input=input, env={**os.environ, **_ENV, **(env or {})},
                              stdin=None if input is not None else subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH") from exc
    if check and proc.returncode != 0:
        err = proc.stderr if text else proc.stderr.decode("utf-8", "replace")
        raise GitError(f"git {' '.join(args[:3])} failed: {err.strip()}")
    return proc


def shown(text: str) -> str:
    """``text`` read from git, with each byte that was not UTF-8 (kept by ``run`` as a lone
    surrogate) replaced by U+FFFD: for text that is shown and stored, never given back to git."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def toplevel(start: Path) -> Path:
    """The work tree root of the repository containing ``start``."""
    return locate(start)[0]


def locate(start: Path) -> tuple[Path, Path, Path]:
    """(work tree root, git folder, common git folder) of the repository containing
    ``start``, in one git process: for when GIT_DIR or GIT_WORK_TREE say where they are."""
    if not start.is_dir():
        raise NotARepositoryError(f"{start} is not a directory")
    proc = run(["rev-parse", "--show-toplevel", "--git-dir", "--git-common-dir"], start,
               check=False)
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != 3 or not lines[0].strip():
        msg = proc.stderr.strip()
        if "not a git repository" in msg or not msg:
            raise NotARepositoryError(
                f"{start} is not inside a git repository",
                hint="dmm keeps memory in a git repository: run `git init` first, "
                     "or point dmm at one with -C PATH")
        raise NotARepositoryError(f"cannot use the repository at {start}: {msg}")
    root, git_dir, common = (Path(line) for line in lines)
    return root, start / git_dir, start / common  # relative ones are relative to ``start``


def commit_message(subject: str, body: str, trailer_pairs: list[tuple[str, str]]) -> str:
    """A commit message: subject, body, then the trailer block, one ``Key: value`` line per
    pair, as its last paragraph.

    Only that block is ever read back as trailers (``trailer_block``), and what goes into it
    cannot start a line of its own: every value (a reason, a name an agent gave) is folded
    onto one line, control characters removed. The body is free text, a person's or an
    agent's: it may hold lines that look like trailers, and they stay text, because the
    trailer block after it is the message's last paragraph (git's own rule)."""
    if not trailer_pairs:
        raise ValueError("a dmm commit message always ends with its trailer block")
    text = f"{_one_line(subject)}\n\n"
    body = body.replace("\0", "").strip()
    if body:
        text += body + "\n\n"
    lines = []
    for key, value in trailer_pairs:
        if not _DMM_KEY.fullmatch(key):
            raise ValueError(f"not a dmm trailer key: {key!r}")
        lines.append(f"{key}: {_one_line(str(value))}")
    return text + "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    """``text`` on one line: whitespace of any kind (newlines, U+2028 ...) folded into single
    spaces, other control characters dropped."""
    text = "".join(ch for ch in text if ch.isprintable() or ch.isspace())
    return " ".join(text.split())


def trailer_block(message: str) -> list[tuple[str, str]]:
    """The ``Dmm-*`` trailers of a commit message, in order, read as git reads trailers: only
    from the message's last paragraph, and only when every line of it is a ``Key: value``
    line. Lines that look like trailers anywhere else (a reason, a description an agent
    wrote) are text, never trailers."""
    paragraphs = _PARAGRAPH_BREAK.split(message.strip().replace("\r\n", "\n"))
    if len(paragraphs) < 2:  # a subject alone is never a trailer block
        return []
    pairs = []
    for line in paragraphs[-1].split("\n"):
        match = _TRAILER_LINE.fullmatch(line)
        if match is None:
            return []
        pairs.append((match.group(1), match.group(2).strip()))
    return [(k, v) for k, v in pairs if _DMM_KEY.fullmatch(k)]


def message_body(message: str) -> str:
    """The free text of a commit message: what lies between its subject and its trailer
    block (a reason, as written)."""
    paragraphs = _PARAGRAPH_BREAK.split(message.strip().replace("\r\n", "\n"))
    if trailer_block(message) or (len(paragraphs) > 1 and all(
            _TRAILER_LINE.fullmatch(line) for line in paragraphs[-1].split("\n"))):
        paragraphs = paragraphs[:-1]
    first = paragraphs[0].split("\n", 1)
    rest = ([first[1]] if len(first) > 1 else []) + paragraphs[1:]
    return "\n\n".join(rest).strip()


def trailers(message: str) -> dict[str, str]:
    """The ``Dmm-*`` trailers of a commit message's trailer block (a repeated key: its last
    value; ``all_trailers`` keeps every one)."""
    return dict(trailer_block(message))


def all_trailers(message: str) -> dict[str, list[str]]:
    """Every ``Dmm-*`` trailer of a commit message's trailer block with all its values, in
    order."""
    out: dict[str, list[str]] = {}
    for k, v in trailer_block(message):
        out.setdefault(k, []).append(v)
    return out


def trailer_values(message: str, key: str) -> list[str]:
    """Every value of the trailer ``key`` in the trailer block, in order (trailers may
    repeat)."""
    return [v for k, v in trailer_block(message) if k == key]


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    author: str
    email: str
    date: str  # ISO 8601
    message: str
    tree: str = ""  # filled by Git.commits(..., detailed=True)
    time: int = 0  # committer time (seconds), likewise

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]

    @property
    def trailers(self) -> dict[str, str]:
        return trailers(self.message)


class Git:
    """Git operations on one repository (``root`` is its work tree)."""

    def __init__(self, root: Path):
        self.root = root
        self._folders: dict[str, Path] = {}

    def run(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return run(list(args), self.root, **kw)

    def out(self, *args: str, **kw) -> str:
        return self.run(*args, **kw).stdout.strip()

    # --- reading ----------------------------------------------------------------------------

    def rev_parse(self, rev: str) -> str | None:
        proc = self.run("rev-parse", "-q", "--verify", f"{rev}^{{commit}}", check=False)
        return proc.stdout.strip() or None

    def current_branch(self) -> str | None:
        """``refs/heads/NAME`` of the checked-out branch, None on a detached HEAD."""
        proc = self.run("symbolic-ref", "-q", "HEAD", check=False)
        return proc.stdout.strip() or None

    def git_path(self, name: str) -> Path:
        path = Path(self.out("rev-parse", "--git-path", name))
        return path if path.is_absolute() else self.root / path

    def git_dir(self) -> Path:
        """This work tree's own git folder (where its index and HEAD live); asked once."""
        return self._folder("--git-dir")

    def common_dir(self) -> Path:
        """The git folder shared by all work trees (refs, objects, dmm.lock); asked once."""
        return self._folder("--git-common-dir")

    def _folder(self, option: str) -> Path:
        if option not in self._folders:
            path = Path(self.out("rev-parse", option))
            self._folders[option] = path if path.is_absolute() else self.root / path
        return self._folders[option]

    def operation_in_progress(self) -> str | None:
        folder = self.git_dir()
        for name, what in (("MERGE_HEAD", "a merge"), ("rebase-merge", "a rebase"),
                           ("rebase-apply", "a rebase or am"),
                           ("CHERRY_PICK_HEAD", "a cherry-pick"), ("REVERT_HEAD", "a revert")):
            if (folder / name).exists():
                return what
        return None

    def user_name(self) -> str:
        ident = self.run("var", "GIT_AUTHOR_IDENT", check=False).stdout
        return ident.rsplit("<", 1)[0].strip() or "unknown"

    def show_blob(self, rev: str, path: str) -> bytes | None:
        proc = self.run("cat-file", "blob", f"{rev}:{path}", check=False, input=b"")
        return proc.stdout if proc.returncode == 0 else None

    def blob_ids(self, rev: str, paths: list[str]) -> dict[str, str]:
        """{path: blob sha} for those of ``paths`` that exist in ``rev``."""
        return {path: sha for path, (_mode, sha) in self.tree_entries(rev, paths).items()}

    def blob_sizes(self, shas: list[str]) -> dict[str, int]:
        """{sha: size in bytes} of the objects ``shas``, without reading them."""
        if not shas:
            return {}
        out = self.out("cat-file", "--batch-check=%(objectname) %(objectsize)",
                       input="".join(f"{sha}\n" for sha in shas))
        sizes = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                sizes[parts[0]] = int(parts[1])
        return sizes

    def files_containing(self, rev: str, text: str, under: str) -> list[str]:
        """Paths below ``under`` in ``rev`` whose content contains ``text`` (a literal)."""
        proc = self.run("grep", "-l", "-z", "--fixed-strings", "-e", text, rev, "--", under,
                        check=False)
        return [p.split(":", 1)[1] for p in proc.stdout.split("\0") if ":" in p]

    def tree_entries(self, rev: str, paths: list[str]) -> dict[str, tuple[str, str]]:
        """{path: (mode, blob sha)} for those of ``paths`` that exist in ``rev``."""
        if not paths:
            return {}
        out = self.run("ls-tree", "-z", "--full-tree", rev, "--", *paths).stdout
        found = {}
        for entry in out.split("\0"):
            if entry:
                meta, path = entry.split("\t", 1)
                mode, _kind, sha = meta.split()
                found[path] = (mode, sha)
        return found

    def index_entries(self, paths: list[str], env: dict | None = None,
                      ) -> dict[str, tuple[str, str]]:
        """{path: (mode, blob sha)} of the index's stage-0 entries for ``paths``."""
        if not paths:
            return {}
        out = self.run("ls-files", "-s", "-z", "--", *paths, env=env).stdout
        found = {}
        for entry in out.split("\0"):
            if entry:
                meta, path = entry.split("\t", 1)
                mode, sha, stage = meta.split()
                if stage == "0":
                    found[path] = (mode, sha)
        return found

    def worktree_blobs(self, paths: list[str]) -> dict[str, str]:
        """{path: blob sha} of the work-tree files among ``paths`` that exist as files."""
        present = [p for p in paths if (self.root / p).is_file()
                   and not (self.root / p).is_symlink()]
        if not present:
            return {}
        shas = self.out("hash-object", "--", *present).split()
        return dict(zip(present, shas))

    def paths(self, rev: str, under: str) -> list[str]:
        """Every file path in ``rev`` below the folder ``under``."""
        out = self.run("ls-tree", "-r", "-z", "--name-only", rev, "--", under).stdout
        return [p for p in out.split("\0") if p]

    def path_exists(self, rev: str, path: str) -> bool:
        return self.run("cat-file", "-e", f"{rev}:{path}", check=False).returncode == 0

    def refs(self, prefix: str) -> dict[str, str]:
        """{refname: sha} of refs under ``prefix``."""
        lines = self.out("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        return dict(line.split(" ", 1) for line in lines.splitlines() if line)

    def commits(self, *args: str, detailed: bool = False) -> list[Commit]:
        """Parse ``git log`` output for ``args`` (revisions, options, -- paths); ``detailed``
        also reads each commit's tree and committer time."""
        fmt = "%H%x1f%P%x1f%T%x1f%ct%x1f%an%x1f%ae%x1f%aI%x1f%B%x1e" if detailed else \
            "%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%B%x1e"
        proc = self.run("log", f"--format={fmt}", *args, check=False)
        if proc.returncode != 0:
            return []
        out = []
        for record in proc.stdout.split("\x1e"):
            record = record.strip("\n")
            if not record:
                continue
            fields = record.split("\x1f", 7 if detailed else 5)
            sha, parents = fields[0], tuple(fields[1].split())
            tree, time = (fields[2], int(fields[3] or 0)) if detailed else ("", 0)
            author, email, date, message = map(shown, fields[-4:])
            out.append(Commit(sha, parents, author, email, date, message.strip(), tree, time))
        return out

    def commits_with_trailer(self, rev: str, key: str, value: str, *args: str,
                             first_parent: bool = True) -> list[Commit]:
        """Commits of ``rev`` (its first-parent line unless told otherwise: a teammate's
        approvals arrive through merges) with the trailer ``key: value`` (both literal)."""
        line = f"{key}: {value}"
        found = self.commits(rev, *(["--first-parent"] if first_parent else []),
                             "--fixed-strings", f"--grep={line}", *args)
        return [c for c in found if value in trailer_values(c.message, key)]

    def added_times(self, under: str) -> dict[str, int]:
        """{path: committer time (seconds) of the commit that added it} for the files below
        ``under`` in HEAD's history, oldest commit first; a moved file keeps the time it was
        first added under its old path (a memory promoted to another scope was still written
        then), a file deleted and added again gets the time of its last addition."""
        return {path: when for path, (when, _) in self._additions(under).items()}

    def added_order(self, under: str) -> dict[str, int]:
        """{path: rank of the commit that brought it to the checked-out branch} for the files
        below ``under``: a higher rank arrived later. Read along the branch's own line (its
        first parents; a merge counts as adding what it brought), not by commit dates: a
        fork's commit dated 2001 and merged today arrived today, and commits made within the
        same second are told apart. One git call, whatever the number of files."""
        return {path: seq for path, (_, seq) in self._additions(under, arrival=True).items()}

    def _additions(self, under: str, arrival: bool = False) -> dict[str, tuple[int, int]]:
        """{path: (committer time, position in the history, oldest first)} of the commit that
        added each file below ``under``; --date-order never lists a commit before its
        parents. ``arrival``: along the first parents only, a merge's diff to its first
        parent being what it added (dates there are claims a fork can backdate)."""
        line = ["--first-parent", "-m"] if arrival else []
        out = self.run("log", "--reverse", "--date-order", *line, "-M", "--name-status", "-z",
                       "--format=%x1e%ct", "--", under, check=False).stdout
        added: dict[str, tuple[int, int]] = {}
        for seq, record in enumerate(out.split("\x1e")[1:]):
            fields = record.split("\0")
            if not fields[0].strip().isdigit():
                continue
            when, rest = int(fields[0]), fields[1:]
            i = 0
            while i < len(rest) and rest[i].strip("\n"):
                status = rest[i].strip("\n")  # the first follows the format's line break
                if status[:1] in ("R", "C") and i + 2 < len(rest):
                    added[rest[i + 2]] = added.get(rest[i + 1], (when, seq))
                    i += 3
                    continue
                if status == "A" and i + 1 < len(rest):
                    added[rest[i + 1]] = (when, seq)
                i += 2
        return added

    def last_commits(self, paths: list[str]) -> dict[str, tuple[str, int, str]]:
        """{path: (commit, committer time in seconds, author email) of the last commit in
        HEAD's history that changed it}, for the repository-relative ``paths`` git knows."""
        if not paths:
            return {}
        out = self.run("log", "--format=%x1e%H %ct %ae", "--name-only", "-z", "--",
                       *paths, check=False).stdout  # pathspecs are literal (_ENV)
        wanted, found = set(paths), {}
        for record in out.split("\x1e")[1:]:
            head, *names = record.split("\0")  # -z ends the header with a NUL too
            fields = head.strip("\n").split(" ", 2)
            if len(fields) < 3 or not fields[1].isdigit():
                continue
            for name in names:
                name = name.strip("\n")
                if name in wanted and name not in found:
                    found[name] = (fields[0], int(fields[1]), fields[2])
        return found

    def changed_paths(self, old: str, new: str) -> list[str]:
        out = self.run("diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new).stdout
        return [p for p in out.split("\0") if p]

    def diff(self, old: str, new: str) -> str:
        return self.run("diff", "--find-renames", old, new).stdout

    # --- writing objects (never the user's index) ---------------------------------------------

    def empty_tree(self) -> str:
        """The empty tree, written to the object store: git knows its id without storing it,
        so a commit of it would leave `git fsck` reporting a missing tree (and a clone or
        push may need the object)."""
        return self.run("mktree", input="").stdout.strip()

    def hash_blob(self, data: bytes) -> str:
        return self.run("hash-object", "-w", "--stdin", input=data).stdout.decode().strip()

    def tree_with(self, base: str, changes: dict[str, str | None]) -> str:
        """The tree of ``base`` with ``changes`` applied ({path: blob sha, or None to delete}).

        Uses a private temporary index, so nothing the user staged is affected. Paths go to
        git NUL-separated, and the tree git wrote is checked to hold exactly the intended
        entries before anyone can commit it: git silently skips index entries it considers
        invalid (``a//b``, ``a/./b``, ``.git/...``), which would otherwise lose a file.
        """
        bad = [p for p in changes if has_control_chars(p) or not p or p.endswith("/")]
        if bad:
            raise InvalidInputError(f"refusing to write the path {bad[0]!r} into git")
        fd, index = tempfile.mkstemp(prefix="dmm-index-")
        os.close(fd)
        os.unlink(index)  # git wants to create it; the unique name is what we needed
        env = {"GIT_INDEX_FILE": index}
        try:
            self.run("read-tree", base, env=env)
            info = "".join(
                f"0 {ZERO}\t{path}\0" if sha is None else f"100644 {sha}\t{path}\0"
                for path, sha in changes.items())
            self.run("update-index", "-z", "--index-info", env=env, input=info)
            tree = self.out("write-tree", env=env)
        finally:
            Path(index).unlink(missing_ok=True)
        self._check_tree(base, tree, changes)
        return tree

    def _check_tree(self, base: str, tree: str, changes: dict[str, str | None]) -> None:
        """Refuse ``tree`` unless it is ``base`` with exactly ``changes`` applied."""
        got = self.blob_ids(tree, list(changes))
        wrong = [p for p, sha in changes.items() if got.get(p) != sha]
        extra = [p for p in self.changed_paths(base, tree) if p not in changes]
        if wrong or extra:
            raise InvalidInputError(
                "git did not record the files as intended (" + ", ".join(
                    repr(p) for p in (wrong + extra)[:5]) + "): nothing was committed",
                hint="use plain paths such as project/api/errors.md")

    def commit_tree(self, tree: str, parents: list[str], message: str,
                    when: dt.datetime | None = None) -> str:
        """A commit of ``tree``; ``when`` (an aware datetime) is its author and committer
        date, so that a record and the ids made with it show one time."""
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        if self.signs():
            args.append("-S")  # commit-tree ignores commit.gpgSign by itself
        env = None
        if when is not None:
            stamp = f"@{int(when.timestamp())} +0000"
            env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        proc = self.run(*args, input=message, check=False, env=env)
        if proc.returncode != 0:
            if "tell me who you are" in proc.stderr or "empty ident" in proc.stderr:
                raise DmmError("git does not know who you are, so dmm cannot record this",
                               hint='run git config user.name "Your Name" and git config '
                                    'user.email you@example.com, or set GIT_AUTHOR_NAME, '
                                    'GIT_AUTHOR_EMAIL, GIT_COMMITTER_NAME, GIT_COMMITTER_EMAIL')
            raise GitError(f"git commit-tree failed: {proc.stderr.strip()}")
        return proc.stdout.strip()

    def signing(self) -> dict[str, str]:
        """The signing settings that are set (commit.gpgsign, user.signingkey, gpg.format,
        gpg.ssh.allowedsignersfile), in one git call."""
        proc = self.run("config", "--get-regexp", r"^(commit\.gpgsign|user\.signingkey|"
                        r"gpg\.format|gpg\.ssh\.allowedsignersfile)$", check=False)
        return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)

    def signs(self) -> bool:
        """Whether dmm signs the commits it makes: commit.gpgSign, or (the signing mode of
        docs/team.md) a signing key with a signature format or an allowed-signers file,
        unless commit.gpgSign is set to false."""
        found = self.signing()
        flag = found.get("commit.gpgsign", "").lower()
        if flag:
            return flag in ("true", "yes", "on", "1")
        return bool(found.get("user.signingkey")) and bool(
            found.get("gpg.format") or found.get("gpg.ssh.allowedsignersfile"))

    def merge_tree(self, ours: str, theirs: str) -> tuple[str | None, list[str]]:
        """(tree, []) for a clean merge, (None, conflicted paths) otherwise."""
        proc = self.run("merge-tree", "--write-tree", "-z", "--name-only", ours, theirs,
                        check=False)
        if proc.returncode == 0:
            return proc.stdout.split("\0")[0], []
        if proc.returncode == 1:
            parts = proc.stdout.split("\0")
            paths = []
            for part in parts[1:]:
                if not part:
                    break  # the list of conflicted files ends with an empty entry
                paths.append(part)
            return None, sorted(set(paths))
        raise GitError(f"git merge-tree failed: {proc.stderr.strip()}")

    def update_refs(self, updates: list[tuple[str, str | None, str | None]]) -> bool:
        """One atomic transaction of (ref, new or None to delete, expected old or None to
        create). Returns False when a ref did not have its expected value."""
        lines = ["start"]
        for ref, new, old in updates:
            if new is None:
                lines.append(f"delete {ref} {old or ''}".rstrip())
            else:
                lines.append(f"update {ref} {new} {old or ZERO}")
        lines += ["prepare", "commit"]
        proc = self.run("update-ref", "--stdin", input="\n".join(lines) + "\n", check=False)
        if proc.returncode == 0:
            global REFS_MOVED
            REFS_MOVED = True
            return True
        if "but expected" in proc.stderr or "reference already exists" in proc.stderr \
                or "unable to resolve reference" in proc.stderr or "cannot lock ref" in proc.stderr:
            return False
        raise GitError(f"git update-ref failed: {proc.stderr.strip()}")
