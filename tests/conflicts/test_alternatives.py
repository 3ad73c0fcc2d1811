"""The families of alternatives: what a title chooses."""

from __future__ import annotations

from dmm.conflicts.alternatives import FAMILIES, asks, choices, named


def test_every_name_belongs_to_one_member_of_one_family():
    names = [n for fam in FAMILIES.values() for ns in fam.members.values() for n in ns.split("|")]
    assert len(names) == len(set(names))
    assert all(n == n.lower() and n.strip() == n for n in names)


def test_a_title_chooses_the_one_member_it_names():
    assert choices("User passwords are hashed with Argon2id") == {"password hashing": "argon2"}
    assert choices("Lists use cursor-based pagination") == {"pagination": "cursor"}
    assert choices("Persistence goes through SQLAlchemy mapped classes") == {
        "data access": "orm"}
    # naming two members is a comparison or a move, not a choice
    assert choices("Migrate from bcrypt to Argon2id") == {}
    assert named("Migrate from bcrypt to Argon2id") == {"password hashing": {"bcrypt", "argon2"}}


def test_names_match_whole_words_only():
    assert choices("The team reacted quickly to the outage") == {}
    assert choices("Snapshot tests are kept small") == {}
    assert choices("Synchronise the calendars nightly") == {}
    assert choices("Specs live next to the ecs-task-definition files") == {}
    assert choices("Squash merge every pull request") == {"merge strategy": "squash"}


def test_some_names_answer_only_a_question_the_title_asks():
    assert asks("Prices are BigDecimal with two decimal places") == {"money representation"}
    assert choices("Collection endpoints paginate with opaque cursors only") == {
        "pagination": "cursor"}
    assert choices("列表接口统一使用 page / page_size 分页") == {"pagination": "offset"}
    # no question asked: a cursor is an editor's, a page a document's
    assert choices("Cursor rules for Vue projects") == {"frontend framework": "vue"}
    assert choices("Keep each page of the handbook short") == {}


def test_every_question_word_and_asked_name_is_lower_case_and_unique():
    for fam in FAMILIES.values():
        words = fam.question.split("|") if fam.question else []
        assert all(w == w.lower() and w.strip() == w for w in words)
        assert set(fam.when_asked) <= set(fam.members)
    asked = [n for fam in FAMILIES.values() for ns in fam.when_asked.values()
             for n in ns.split("|")]
    plain = {n for fam in FAMILIES.values() for ns in fam.members.values() for n in ns.split("|")}
    assert len(asked) == len(set(asked)) and not plain & set(asked)
