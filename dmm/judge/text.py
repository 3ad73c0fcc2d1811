"""A language model's strings as dmm keeps them: one line, no control character, no character
that reorders or hides text, bounded. Pure.

A model's answer is untrusted text (docs/guarantees.md): whatever it says may end up in a
conflict, a review's issues, a decision record a person commits or an error line. An escape
sequence (ESC[8m hides words, OSC rewrites a window title), a C1 control, a zero-width
character or a bidi override (U+202E shows words in another order than an agent reads them)
is dropped here, once, for every surface; a newline is folded so that nothing a model says
can become a line of its own (a commit trailer, a forged field).
"""

from __future__ import annotations

import re

_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                     r"\u2066-\u2069\ufeff]")


def one_line(value: object, limit: int) -> str:
    """``value`` as one line of at most ``limit`` characters, without control, zero-width or
    reordering characters."""
    line = " ".join(_HIDDEN.sub(" ", str(value)).split())
    return line if len(line) <= limit else line[:limit - 1] + "…"
