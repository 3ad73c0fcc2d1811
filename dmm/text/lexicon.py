"""Word neighbours for query expansion, read from the packaged lexicon database.

dmm/text/data/lexicon.sqlite3 lists, for about 59,000 frequent English words, their nearest
neighbours by the sentence model all-MiniLM-L6-v2 (vocabulary from GloVe 6B, PDDL 1.0), built by
tools/build_lexicon.py. It ships read-only inside the package: a query opens it and looks up its
own words (about 0.1 ms), so no store's cache carries a copy.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterable

LEXICON_DB = Path(__file__).parent / "data" / "lexicon.sqlite3"


def neighbours(words: Iterable[str], path: Path = LEXICON_DB) -> dict[str, str]:
    """{word: "nbr:sim,nbr:sim,..."} for the given words the lexicon knows; {} without a lexicon."""
    wanted = list(dict.fromkeys(words))
    if not wanted or not path.is_file():
        return {}
    # immutable: the file never changes under a running dmm, so SQLite takes no locks and
    # writes no journal (the package may be installed read-only).
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        marks = ",".join("?" * len(wanted))
        return dict(conn.execute(f"SELECT word, nbrs FROM lexicon WHERE word IN ({marks})", wanted))
    except sqlite3.DatabaseError:
        return {}  # a damaged installation loses expansion, never the query
    finally:
        conn.close()


def parse_neighbours(nbrs: str, min_similarity: float) -> list[tuple[str, float]]:
    out = []
    for item in nbrs.split(","):
        word, _, sim = item.partition(":")
        value = float(sim)
        if value >= min_similarity:
            out.append((word, value))
    return out
