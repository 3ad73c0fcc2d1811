"""The search tokenizer and the lexicon."""

from __future__ import annotations

import sqlite3

from dmm.text.analyze import terms, words
from dmm.text.lexicon import LEXICON_DB, neighbours, parse_neighbours


def test_inflections_meet_on_one_stem():
    assert terms("deploys deploying deployed") == ["deploy"] * 3
    assert terms("Retries")[0] == terms("retrying")[0]


def test_stopwords_and_single_letters_are_dropped_but_digits_kept():
    assert words("How do we use the API for a 2 step flow?") == ["api", "2", "step", "flow"]


def test_cjk_runs_become_bigrams_and_mixed_tokens_split():
    assert words("代码审查") == ["代码", "码审", "审查"]
    assert words("用pytest测试") == ["用", "pytest", "测试"]


def test_non_english_words_survive():
    assert "zeitstempel" in words("Zeitstempel werden in UTC gespeichert")


def test_lexicon_ships_and_links_synonyms():
    assert LEXICON_DB.is_file()
    with sqlite3.connect(f"{LEXICON_DB.as_uri()}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT count(*) FROM lexicon").fetchone()[0] > 30_000
    found = neighbours(["cost", "cost", "zzzzqx"])
    assert list(found) == ["cost"]  # each word once; unknown words are simply absent
    cost = dict(parse_neighbours(found["cost"], 0.5))
    assert "price" in cost or "prices" in cost or "pricing" in cost


def test_a_missing_lexicon_loses_expansion_not_the_query(tmp_path):
    assert neighbours(["cost"], path=tmp_path / "absent.sqlite3") == {}
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"not a database" * 100)
    assert neighbours(["cost"], path=broken) == {}


def test_parse_neighbours_applies_the_threshold():
    assert parse_neighbours("a:0.91,b:0.70,c:0.55", 0.7) == [("a", 0.91), ("b", 0.70)]
