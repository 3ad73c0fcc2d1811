"""The search tokenizer and the lexicon."""

from __future__ import annotations

from dmm.text.analyze import terms, words
from dmm.text.lexicon import LEXICON_FILE, parse_neighbours, read_lexicon


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
    assert LEXICON_FILE.exists()
    lexicon = dict(read_lexicon())
    assert len(lexicon) > 30_000
    cost = dict(parse_neighbours(lexicon["cost"], 0.5))
    assert "price" in cost or "prices" in cost or "pricing" in cost


def test_parse_neighbours_applies_the_threshold():
    assert parse_neighbours("a:0.91,b:0.70,c:0.55", 0.7) == [("a", 0.91), ("b", 0.70)]
