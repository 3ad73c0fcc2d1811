"""Retrieval quality on this repository's own store, with tasks worded unlike the memories.

The queries were written before looking at the ranking, as an agent working on dmm would ask
them; they are a second, independent check beside ../shared/eval/retrieval (see
docs/retrieval.md). A failure here means ranking got worse for real users.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dmm import config
from dmm.index.refresh import open_fresh
from dmm.query.pack import PackOptions, build_pack

ROOT = Path(__file__).resolve().parents[2]

CASES = [
    ("I want dmm to start faster; what must I avoid importing?", "mem_2026_11_22_006"),
    ("Where should code that shells out to git live?", "mem_2026_11_22_005"),
    ("The cache database got corrupted. What happens next?", "mem_2026_11_22_004"),
    ("What exit status should the program return when someone passes a wrong option?",
     "mem_2026_11_22_008"),
    ("How do I estimate how many tokens a memory has?", "mem_2026_11_22_011"),
    ("What do I check before I call my change finished?", "mem_2026_11_22_013"),
    ("Can I mock git in unit tests?", "mem_2026_11_22_010"),
    ("How are search results ordered?", "mem_2026_11_22_007"),
    ("How should I word the message when I record my work in version control?",
     "mem_2026_11_22_012"),
    ("Which layer is allowed to print to the terminal?", "mem_2026_11_22_003"),
    ("Steps to introduce another subcommand", "mem_2026_11_22_009"),
]


@pytest.fixture(scope="module")
def own_store(tmp_path_factory):
    from dmm.workspace import Workspace

    root = tmp_path_factory.mktemp("own")
    (root / ".git").mkdir()
    shutil.copytree(ROOT / ".dmm" / "memory", root / ".dmm" / "memory")
    ws = Workspace(root)
    conn, _ = open_fresh(ws)
    yield conn
    conn.close()


def rank_of(conn, task: str, expected: str) -> int | None:
    pack = build_pack(conn, task, PackOptions(budget=100_000), config.DEFAULTS["query"])
    ranked = [e.memory.id for e in pack.retrieved]
    return ranked.index(expected) + 1 if expected in ranked else None


def test_recall_at_3_on_paraphrased_tasks(own_store):
    ranks = {task: rank_of(own_store, task, expected) for task, expected in CASES}
    hits = [t for t, r in ranks.items() if r is not None and r <= 3]
    print("\n" + "\n".join(f"{r!s:>4}  {t}" for t, r in ranks.items()))
    assert len(hits) / len(CASES) >= 0.8, ranks
