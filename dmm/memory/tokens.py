"""The one token counter: budgets, pack statistics and the quality check's size limits use it.

It imitates the cl100k_base BPE tokenizer without loading its 1.7 MB vocabulary: the text is
cut with cl100k's own pre-tokenizer pattern (letters, digit triples, punctuation runs,
whitespace) and each piece is costed by its shape. Common English words are one token, longer
words cost one more token about every four letters, digits cost one token per three, CJK
characters about one each. tests/memory/test_tokens.py measures it against the real cl100k_base
(docs/token_counting.md has the figures): within a few percent on prose, a little more on code.
Pure and fast (a few microseconds per word), so counting never shows up on the query path.
"""

from __future__ import annotations

import re

# cl100k_base's pre-tokenizer, with \p{L} spelled [^\W\d_] and \p{N} spelled \d for `re`.
_PIECES = re.compile(
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\w]?[^\W\d_]+|\d{1,3}| ?[^\s\w]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s|_+""",
    re.UNICODE,
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def count_tokens(text: str) -> int:
    """Estimated cl100k_base token count of ``text``."""
    return round(sum(_piece_cost(piece) for piece in _PIECES.findall(text)))


def _piece_cost(piece: str) -> float:
    """Expected tokens of one pre-tokenizer piece (fitted on English prose and markdown)."""
    head = piece[0]
    if head.isalpha() or (len(piece) > 1 and piece[1].isalpha()):
        letters = piece if head.isalpha() else piece[1:]
        if not letters.isascii():
            cjk = len(_CJK.findall(letters))
            rest = len(letters) - cjk
            return cjk * 1.2 + (0 if rest == 0 else 1 + rest / 3.5)
        n = len(letters)
        # Past 20 letters (identifiers, repeated letters) each letter costs about 0.12 again.
        long = max(0, n - 20)
        if head.isalpha():  # no leading space: line starts, after quotes; BPE knows fewer
            return 1 + max(0, n - 5) * 0.16 + max(0, n - 12) * 0.3 - long * 0.34
        lead = 0.0 if head == " " else 0.3  # "(word" usually merges, sometimes not
        return lead + 1 + max(0, n - 6) * 0.09 + max(0, n - 13) * 0.3 - long * 0.27
    if head.isdigit() or piece.isspace():
        return 1.0
    return 1 + max(0, len(piece.strip(" ")) - 3) * 0.2
