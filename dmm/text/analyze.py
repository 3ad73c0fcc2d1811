"""Turn text into search terms: the one tokenizer used to index memories and to read queries.

Pure functions, no IO. Words are lower-cased, split on Unicode word boundaries, stripped of
English stop words and reduced to their Snowball (Porter2) stem, so "deploys", "deploying" and
"deployment" meet. Runs of CJK characters, which have no spaces, become overlapping character
bigrams, the usual trick that makes Chinese and Japanese text searchable without a dictionary.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import Stemmer  # PyStemmer: the Snowball stemmers in C, about 1 ms to import

# Words that carry no topic. Kept short on purpose: "not", "no" and "never" stay out of this
# list for other users (conflict cues) but are dropped here because retrieval ignores polarity.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during each
    either else etc ever every few for from further get gets got had has have having he her
    here hers herself him himself his how however i if in into is it its itself just let like
    may me might more most much must my myself need needs no nor not now of off on once one
    only or other our ours ourselves out over own per please same shall she should so some
    such than that the their theirs them themselves then there these they this those through
    thus to too under until up upon us use used uses using very via was we were what when
    where whether which while who whom whose why will with within without would yes yet you
    your yours yourself yourselves""".split()
)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
# one stemmer per thread: a PyStemmer object is not safe to share (its cache and the Snowball
# state are not locked), and `dmm serve` answers requests from a thread pool
_STEMMERS = threading.local()


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Snowball stem of one lower-case word (memoised: a store has a small vocabulary)."""
    if not word.isascii() or len(word) < 4:
        return word
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = Stemmer.Stemmer("english", 0)  # lru_cache caches
    return stemmer.stemWord(word)


def words(text: str) -> list[str]:
    """Lower-cased content words of ``text`` in order, stop words removed, CJK as bigrams."""
    out: list[str] = []
    for raw in _WORD.findall(text.lower()):
        if _CJK.search(raw):
            out.extend(_cjk_split(raw))
        elif raw not in STOPWORDS and (len(raw) > 1 or raw.isdigit()):
            out.append(raw)
    return out


def word_count(text: str) -> int:
    """About how many words ``text`` has: CJK has no spaces between words, and a Chinese word
    is two characters on average, so a run of CJK characters counts one word per two."""
    count = 0
    for token in text.split():
        runs = _CJK.findall(token)
        rest = _CJK.sub(" ", token).split()
        count += len(rest) + sum(max(1, len(run) // 2) for run in runs)
    return count


def has_cjk(text: str) -> bool:
    """Whether ``text`` has CJK characters (a script without capital letters)."""
    return bool(_CJK.search(text))


def terms(text: str) -> list[str]:
    """Search terms of ``text``: its content words, stemmed."""
    return [stem(w) for w in words(text)]


def _cjk_split(token: str) -> list[str]:
    """Split a token mixing CJK and other letters; CJK runs become character bigrams."""
    out: list[str] = []
    pos = 0
    for m in _CJK.finditer(token):
        if m.start() > pos:
            out.append(token[pos:m.start()])
        run = m.group()
        out.extend(run[i:i + 2] for i in range(max(1, len(run) - 1)))
        pos = m.end()
    if pos < len(token):
        out.append(token[pos:])
    return out
