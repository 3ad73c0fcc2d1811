"""The one normaliser for memory paths that a person, an agent or a branch gives. Pure.

Every path that reaches git plumbing or the file system as "a memory" passes through
``clean_memory_path`` first. Git silently drops or reinterprets index entries with empty, ``.``
or ``..`` segments, ``.git`` components and newlines (a newline in `update-index --index-info`
input starts a new entry), so such paths are refused here, with a sentence that says why,
rather than discovered after a commit went wrong.
"""

from __future__ import annotations

from dmm.errors import InvalidInputError

MEMORY_ROOT = ".dmm/memory/"
MAX_PATH_BYTES = 1024
MAX_SEGMENT_BYTES = 255


def has_control_chars(text: str) -> bool:
    """C0 and C1 control characters and DEL: never part of a path git or a person should see."""
    return any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text)


def clean_memory_path(raw: str, *, suffix: str = ".md") -> str:
    """``raw`` as a path relative to .dmm/memory/ (forward slashes), or InvalidInputError.

    Accepts the path relative to .dmm/memory/ or to the repository root (with the
    ``.dmm/memory/`` prefix) and backslashes as separators. Refuses: control characters,
    names that are not valid UTF-8, absolute paths, empty, ``.`` and ``..`` segments, a
    trailing slash, hidden segments (``.git``, ``.foo``: the store never reads them), and
    names without ``suffix``.
    """
    text = str(raw)
    shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"path {shown!r} is not valid UTF-8: rename it") from None
    if has_control_chars(text):
        raise InvalidInputError(f"path {shown!r} contains a control character (a newline, a "
                                "tab, an escape ...): memory paths are plain names")
    text = text.strip().replace("\\", "/")
    if text.startswith("./"):
        text = text[2:]
    if text.startswith(MEMORY_ROOT):
        text = text[len(MEMORY_ROOT):]
    if not text:
        raise InvalidInputError("the memory path is empty")
    if text.startswith("/"):
        raise InvalidInputError(f"path {shown!r} must be relative to .dmm/memory/")
    segments = text.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            raise InvalidInputError(
                f"path {shown!r} has an empty, '.' or '..' part: write it plainly, "
                "e.g. project/api/errors.md")
        if segment.startswith("."):
            raise InvalidInputError(f"path {shown!r} has a hidden part {segment!r}: the "
                                    "store never reads hidden files or folders")
        if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
            raise InvalidInputError(f"path {shown!r} has a part longer than "
                                    f"{MAX_SEGMENT_BYTES} bytes")
    if len(text.encode("utf-8")) > MAX_PATH_BYTES:
        raise InvalidInputError(f"path {shown[:80]!r}... is longer than {MAX_PATH_BYTES} bytes")
    if suffix and not text.endswith(suffix):
        raise InvalidInputError(f"path {shown!r} must name a markdown file ending in {suffix}")
    return text
