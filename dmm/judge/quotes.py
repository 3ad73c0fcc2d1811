"""A model's quotes checked against the text it was shown: a verdict must quote the words it
rests on, and one whose quotes are not in the memory is dropped (DESIGN: "a verdict that quotes
the clause it rests on in each memory can be checked offline"). Pure.

Models re-type what they quote: case, curly quotes, markdown emphasis and line breaks differ,
and they wrap quotes in quotation marks or ellipses. Those differences are forgiven; a word that
is not in the text is not.
"""

from __future__ import annotations

import unicodedata

MIN_WORDS = 2  # "the" is in every memory: a quote must say something
_SAME = str.maketrans({"*": None, "`": None, "\u2018": "'", "\u2019": "'", "\u201c": '"',
                       "\u201d": '"', "\u2013": "-", "\u2014": "-"})


def plain(text: str) -> str:
    """``text`` as quotes are compared: NFKC, case-folded, emphasis and code marks dropped,
    curly quotes and dashes straight, whitespace folded."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_SAME)
    return " ".join(text.split())


def _bare(quote: str) -> str:
    """A quote without the quotation marks or ellipses a model wraps it in."""
    words = plain(quote).strip(" \"'")
    for mark in ("...", "…"):
        words = words.removeprefix(mark).removesuffix(mark)
    return words.strip(" \"'")


def quoted(quote: str, text: str) -> bool:
    """Whether ``quote`` (at least MIN_WORDS words) is in ``text``, word for word."""
    words = _bare(quote)
    return len(words.split()) >= MIN_WORDS and words in plain(text)
