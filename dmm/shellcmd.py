"""Commands dmm prints for a person to copy into a shell, built from words (pure, no IO).

A hint such as "delete it with git push origin --delete BRANCH" carries names that came from
a repository: a pushed branch may be called ``dmm/proposals/x;touch${IFS}pwned;`` (git allows
``;``, ``$`` and braces in ref names), a memory path may hold ``$(...)``. Pasted unquoted, the
hint runs the attacker's command. Every command dmm prints is built here, each word quoted:
the shell gets back exactly the words dmm meant, whatever they hold.
"""

from __future__ import annotations

import shlex


def quote(word: str) -> str:
    """``word`` as one shell word. Printable text is quoted as POSIX sh quotes it
    (``shlex.quote``: unchanged when nothing in it is special). A word holding a control
    character, a character that reorders text, or a byte that is not UTF-8 (a git ref name
    kept with ``surrogateescape``) is written in ANSI-C quoting, ``$'...\\xff...'`` (bash, zsh,
    ksh and POSIX.1-2024 sh), so the printed line shows every byte and gives it back to git
    as it was."""
    if word.isprintable():
        return shlex.quote(word)
    data = word.encode("utf-8", "surrogateescape")
    return "$'" + "".join(chr(b) if 0x20 <= b < 0x7F and b not in b"\\'" else f"\\x{b:02x}"
                          for b in data) + "'"


def command(*words: str) -> str:
    """The command line of ``words``, each quoted (``command("git", "branch", "-D", name)``)."""
    return " ".join(quote(str(word)) for word in words)
