"""Control characters shown, never obeyed: what dmm writes for a person or an agent shows every
control character, every character that reorders text and every byte that was not UTF-8 as
\\uXXXX (why: dmm/cli/terminal.py, which colours on top of this). Standard library only, so
that the prompt hook's short path (dmm/background/quick.py), which never imports click, writes
what the command line would."""

from __future__ import annotations

import re

# -> a visible \uXXXX: every C0 control but tab and newline, DEL and the C1 controls; the
# format characters that reorder a run of text (bidi embeddings, overrides, isolates and
# their terminators), which can show a line in another order than the one an agent reads (a
# "Trojan Source" title; the marks LRM/RLM/ALM only place neutral characters and are common
# in right-to-left prose, so they pass); and lone surrogates, the bytes of a git ref name or
# file name that were not UTF-8 (dmm.gitrepo keeps them so; a terminal cannot show them)
_REORDERING = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
CONTROL = {c: f"\\u{c:04x}" for c in (*range(0x00, 0x09), *range(0x0B, 0x20),
                                          *range(0x7F, 0xA0), *_REORDERING,
                                          *range(0xD800, 0xE000))}
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e"
                         "\u2066-\u2069\ud800-\udfff]")


def shown(text: str) -> str:
    """``text`` with its control characters shown as \\uXXXX (a search first: most text has
    none, and a 5 MB JSON answer costs 5 ms instead of 300)."""
    if _CONTROL_RE.search(text):
        text = _CONTROL_RE.sub(lambda m: CONTROL[ord(m.group())], text)
    return text
