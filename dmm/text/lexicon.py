"""Word neighbours for query expansion, read from the packaged lexicon file.

dmm/text/data/neighbors.tsv.gz lists, for about 40,000 frequent English words, their nearest
neighbours in the GloVe 6B word vectors (PDDL 1.0), built by tools/build_lexicon.py. The cache
copies it into SQLite once, so a query looks up only its own words.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Iterator

LEXICON_FILE = Path(__file__).parent / "data" / "neighbors.tsv.gz"


def read_lexicon(path: Path = LEXICON_FILE) -> Iterator[tuple[str, str]]:
    """Yield (word, "nbr:sim,nbr:sim,...") rows; nothing when the file is absent."""
    if not path.exists():
        return
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            word, _, nbrs = line.rstrip("\n").partition("\t")
            if word and nbrs:
                yield word, nbrs


def parse_neighbours(nbrs: str, min_similarity: float) -> list[tuple[str, float]]:
    out = []
    for item in nbrs.split(","):
        word, _, sim = item.partition(":")
        value = float(sim)
        if value >= min_similarity:
            out.append((word, value))
    return out
