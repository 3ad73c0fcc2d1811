"""Errors that end a dmm command, each with a documented exit code (docs/exit_codes.md).

Core code raises DmmError subclasses; only the CLI layer turns them into a message on stderr
and an exit status. Nothing here prints.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    PROBLEMS_FOUND = 1  # e.g. `dmm validate` found invalid memories
    USAGE = 2  # bad options or arguments (click's own code for usage errors)
    NOT_A_REPOSITORY = 3  # not inside a git repository
    NOT_INITIALIZED = 4  # the repository has no .dmm/ (run `dmm init`)
    NOT_FOUND = 5  # the memory, id or path asked for does not exist
    INVALID_INPUT = 6  # input that cannot be used: bad config, bad path, ambiguous id
    BUSY = 7  # another dmm process holds the lock for too long
    GIT_FAILED = 8  # a git command failed unexpectedly
    IO_FAILED = 9  # a file could not be written: disk full, read-only, no permission
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)


class DmmError(Exception):
    """Base for errors that end a command with a clear message and a non-zero exit code."""

    exit_code = ExitCode.INVALID_INPUT

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


class NotARepositoryError(DmmError):
    exit_code = ExitCode.NOT_A_REPOSITORY


class NotInitializedError(DmmError):
    exit_code = ExitCode.NOT_INITIALIZED


class NotFoundError(DmmError):
    exit_code = ExitCode.NOT_FOUND


class InvalidInputError(DmmError):
    exit_code = ExitCode.INVALID_INPUT


class UnsafeStoreError(InvalidInputError):
    """The store's layout holds a symbolic link or an entry of the wrong kind where dmm reads
    or writes (.dmm, .dmm/memory, BOOT.md, config.toml ...): dmm refuses the whole store rather
    than read or write outside the repository."""


class AlreadyDecidedError(InvalidInputError):
    """The proposal or conflict was decided already (by someone else, or earlier): the same
    exit code as any unusable input; the HTTP API answers 409."""


class BusyError(DmmError):
    exit_code = ExitCode.BUSY


class GitError(DmmError):
    """git failed. Its own words are kept in the message, and a hint always says what to do,
    from what git said when it is a known cause."""

    exit_code = ExitCode.GIT_FAILED

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message, hint or git_hint(message))


_GIT_CAUSES = (
    (("index.lock", ".lock': File exists", "Unable to create"),
     "another git command is running here, or one that crashed left a .lock file under .git/: "
     "wait for it, or remove the lock file it names if no git is running, then try again"),
    (("No space left", "disk quota"), "the disk is full: free some space, then try again"),
    (("Permission denied", "Read-only file system", "insufficient permission"),
     "git may not write this repository: check the permissions of .git/, then try again"),
    (("gpg failed", "failed to sign", "signing failed"),
     "git could not sign the commit (commit.gpgSign is on): unlock your signing key or agent, "
     "then try again"),
    (("bad object", "not a valid object", "corrupt", "unable to read"),
     "the repository looks damaged: run `git fsck` to see what is wrong"),
    (("not a git repository",), "run dmm inside a git repository (or pass -C PATH)"),
)


def git_hint(message: str) -> str:
    """What to do about a git failure, from git's own words."""
    for needles, hint in _GIT_CAUSES:
        if any(needle.lower() in message.lower() for needle in needles):
            return hint
    return ("git refused what dmm asked of it; `git status` shows the repository's state. Run "
            "the command again, and if it fails the same way, report it with git's message "
            "above (DMM_DEBUG=1 shows where it happened)")


class IOFailedError(DmmError):
    exit_code = ExitCode.IO_FAILED
